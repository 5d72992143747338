"""The CPU device's engine (oxide_build/backends/cpu/), launched through its entry point
directly, with cuLaunchKernel's parameters: kernels without barriers (the loop form), with
block barriers, shared memory and warp operations (fibers), failed checks through the error
record, synccheck, and the refusal of what has no CPU form. Every element is compared with
NumPy on random inputs, into poisoned outputs."""
from __future__ import annotations

import ctypes
import struct
import textwrap
from pathlib import Path

import numpy as np
import pytest

from oxide import CompileError
from oxide.abi import error_record
from oxide.errors import InitcheckError, KernelError, MemcheckError, RacecheckError, SynccheckError
from oxide.runtime import kernel_errors

pytest.importorskip("llvmlite")
engine = pytest.importorskip("oxide_build.cpu_engine")
try:
    from oxide_build.backends.cpu.jit import scheduler

    scheduler()
except Exception as e:  # pragma: no cover - an installation without the C extension
    pytest.skip(f"the CPU device's scheduler is not built: {e}", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def f64_bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def module(tmp_path: Path, source: str, name: str = "kern"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return engine.compile_module_for_cpu(path, name, tmp_path)


def slots(spec, values: dict[str, list[int]]) -> list[int]:
    """The slot values of the parameters the entry declares (KernelSpec.param_slots), from each
    parameter's slots by name."""
    flat: list[int] = []
    for p in spec.params:
        flat += values.get(p.name, [])
    if spec.param_slots is None:
        return flat
    return [flat[s] for s in spec.param_slots]


def spec_of(m, symbol: str):
    return next(k for k in m.kernels if k.symbol == symbol)


class Record:
    """An error record (oxide.abi.error_record) wired into a module, as the runtime does it."""

    def __init__(self, m, module_id: int = 77) -> None:
        self.words = (ctypes.c_int64 * error_record.RECORD_WORDS)()
        ptr, size = m.global_address(error_record.ERROR_PTR_SYMBOL)
        assert size == 8
        ctypes.c_uint64.from_address(ptr).value = ctypes.addressof(self.words)
        mid, _ = m.global_address(error_record.MODULE_ID_SYMBOL)
        ctypes.c_int64.from_address(mid).value = module_id
        self.module_id = module_id
        kernel_errors._sites[module_id] = (m.module_name, {s.id: s for s in m.error_sites})

    def error(self):
        w = list(self.words)
        assert w[error_record.FLAG] == error_record.FLAG_PUBLISHED, w
        return kernel_errors.kernel_error(w[error_record.MODULE_ID], w[error_record.SITE_ID],
                                          w[error_record.INDEX], w[error_record.LENGTH])


# ---- kernels without barriers: one native loop per block --------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saxpy_is_bit_exact(dtype) -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "saxpy.py", "examples.saxpy", ROOT)
    suffix = "f32" if dtype == np.float32 else "f64"
    f = m.function(f"saxpy_{suffix}")
    assert f.mode.name == "LOOP"
    rng = np.random.default_rng(1)
    n = 100_003  # not a whole number of blocks
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    a = dtype(1.37)
    bits = f32_bits(a) if dtype == np.float32 else f64_bits(a)
    values = {"a": [bits], "x": [x.ctypes.data, n], "y": [y.ctypes.data, n], "out": [out.ctypes.data, n]}
    f.launch((-(-n // 256), 1, 1), (256, 1, 1), 0, slots(spec_of(m, f"saxpy_{suffix}"), values))
    # a * x + y is one fused multiply-add on the GPU (LLVM contracts it, as NVPTX does): exact in
    # f64 for f32, and for f64 checked against the f32-free identity fma(a, x, y) = a*x + y exactly rounded
    if dtype == np.float32:
        expected = (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out, a * x + y, rtol=1e-15, atol=1e-15)
        assert not np.isnan(out).any()


def test_kernel_params_as_cuLaunchKernel_takes_them() -> None:
    """kernelParams as an address: a void*[] of slot pointers (what ArgPacker.pack returns)."""
    m = engine.compile_module_for_cpu(EXAMPLES / "saxpy.py", "examples.saxpy", ROOT)
    spec = spec_of(m, "saxpy_unchecked_f32")
    n = 1000
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = np.full(n, np.nan, np.float32)
    values = slots(spec, {"a": [f32_bits(2.0)], "x": [x.ctypes.data, n], "y": [y.ctypes.data, n],
                          "out": [out.ctypes.data, n]})
    block = (ctypes.c_uint64 * len(values))(*values)
    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(block) + 8 * k for k in range(len(values))))
    m.function("saxpy_unchecked_f32").launch((4, 1, 1), (256, 1, 1), 0, ctypes.addressof(pointers))
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_two_dimensional_kernel(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, i32, i64, thread, block, grid

        @ox.kernel
        def scale2d(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
            r = block.idx.y * block.dim.y + thread.idx.y
            c = block.idx.x * block.dim.x + thread.idx.x
            if r < rows and c < cols:
                with ox.unsafe():
                    out[i64(r) * cols + c] = x[i64(r) * cols + c] * f32(r + 1) + f32(c) + f32(grid.dim.x)
    """)
    rows, cols = 37, 53
    x = np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    grid = (-(-cols // 16), -(-rows // 8), 1)
    spec = m.kernels[0]
    m.function(spec.symbol).launch(grid, (16, 8, 1), 0, slots(spec, {
        "x": [x.ctypes.data, x.size], "rows": [rows], "cols": [cols], "out": [out.ctypes.data, out.size]}))
    r = np.arange(rows, dtype=np.float32)[:, None]
    c = np.arange(cols, dtype=np.float32)[None, :]
    # x * (r + 1) + c contracts into one fma, as on the GPU: exactly rounded (f64 holds it exactly)
    fused = (x.astype(np.float64) * (r + 1).astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(out, fused + np.float32(grid[0]))


OOB = """
    import oxide as ox
    from oxide import Slice, MutSlice, f32, thread, block

    @ox.kernel
    def shifted(x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            with ox.unsafe():
                out[i] = x[i + 1]
"""


@pytest.mark.parametrize("barrier", [False, True])
def test_out_of_bounds_read_writes_the_error_record(tmp_path: Path, barrier: bool) -> None:
    """The last thread reads x[n]: the record holds the site, index and length, as on the GPU
    (the same KernelError message); the failing thread ends, the others run to completion."""
    extra = """
    @ox.kernel
    def shifted_sync(x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        block.sync()
        if i < len(out):
            with ox.unsafe():
                out[i] = x[i + 1]
        block.sync()
    """
    m = module(tmp_path, OOB + (extra if barrier else ""))
    name = "shifted_sync" if barrier else "shifted"
    spec = next(k for k in m.kernels if k.name == name)
    rec = Record(m)
    n = 300
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    m.function(spec.symbol).launch((2, 1, 1), (256, 1, 1), 0,
                                   slots(spec, {"x": [x.ctypes.data, n], "out": [out.ctypes.data, n]}))
    err = rec.error()
    assert f"bounds check failed in kernel {name} at" in str(err)
    assert f"{tmp_path / 'kern.py'}:" in str(err) or "kern.py:" in str(err)
    assert err.index == n and err.length == n
    np.testing.assert_array_equal(out[:-1], x[1:])
    assert np.isnan(out[-1])


def test_failed_check_without_record_traps(tmp_path: Path) -> None:
    m = module(tmp_path, OOB, "kern_trap")
    spec = m.kernels[0]
    ctypes.c_uint64.from_address(m.global_address(error_record.ERROR_PTR_SYMBOL)[0]).value = 0
    x = np.zeros(8, np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(KernelError, match="trapped"):
        m.function(spec.symbol).launch((1, 1, 1), (8, 1, 1), 0,
                                       slots(spec, {"x": [x.ctypes.data, 8], "out": [out.ctypes.data, 8]}))


# ---- barriers, shared memory, warp operations: fibers --------------------------------------------

def test_reduce_example() -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "reduce.py", "examples.reduce", ROOT)
    f = m.function("block_sum")
    assert f.mode.name == "FIBERS"
    n = 70_001
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    f.launch((16, 1, 1), (256, 1, 1), 0, slots(spec_of(m, "block_sum"), {"x": [x.ctypes.data, n],
                                                                         "out": [out.ctypes.data, 1]}))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)


def test_sgemm_example() -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "sgemm.py", "examples.sgemm", ROOT)
    spec = spec_of(m, "sgemm")
    rng = np.random.default_rng(5)
    mm, nn, kk = 45, 70, 33
    a = rng.standard_normal((mm, kk)).astype(np.float32)
    b = rng.standard_normal((kk, nn)).astype(np.float32)
    c = np.full((mm, nn), np.nan, np.float32)
    m.function("sgemm").launch((-(-nn // 32), -(-mm // 32), 1), (32, 32, 1), 0, slots(spec, {
        "a": [a.ctypes.data, a.size], "b": [b.ctypes.data, b.size], "m": [mm], "n": [nn], "k": [kk],
        "c": [c.ctypes.data, c.size]}))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_shared_memory_reduction_static_and_dynamic(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, i32, thread, block

        @ox.kernel
        def tree(x: Slice[f32], out: MutSlice[f32]) -> None:
            buf = ox.shared.array(256, f32)
            extra = ox.shared.dynamic(i32)
            t = thread.idx.x
            i = thread.index_1d()
            buf[t] = x[i] if i < len(x) else f32(0.0)
            extra[t] = i32(t) * 3
            block.sync()
            s = 128
            while s > 0:
                if t < s:
                    buf[t] += buf[t + s]
                block.sync()
                s //= 2
            if t == 0:
                with ox.unsafe():
                    out[block.idx.x] = buf[0] + f32(extra[255] - 765)
            if block.sync_count(t < 100) != 100:
                with ox.unsafe():
                    out[block.idx.x] = f32(-1.0)
    """)
    spec = m.kernels[0]
    blocks = 9
    n = blocks * 256 - 17
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    out = np.full(blocks, np.nan, np.float32)
    m.function(spec.symbol).launch((blocks, 1, 1), (256, 1, 1), 256 * 4,
                                   slots(spec, {"x": [x.ctypes.data, n], "out": [out.ctypes.data, blocks]}))
    padded = np.zeros(blocks * 256, np.float32)
    padded[:n] = x
    tiles = padded.reshape(blocks, 256)
    expected = tiles.copy()
    s = 128
    while s:  # the same tree, in f32
        expected[:, :s] = expected[:, :s] + expected[:, s:2 * s]
        s //= 2
    np.testing.assert_array_equal(out, expected[:, 0])


def test_warp_operations_in_lockstep(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, i32, u32, thread, warp

        @ox.kernel
        def lanes(x: Slice[i32], out: MutSlice[i32]) -> None:
            i = thread.index_1d()
            v = x[i]
            with ox.unsafe():
                out[i * 8 + 0] = warp.shfl_down(v, 3)
                out[i * 8 + 1] = warp.shfl_up(v, 5)
                out[i * 8 + 2] = warp.shfl_xor(v, 9)
                out[i * 8 + 3] = warp.shfl_idx(v, 7, 8)
                out[i * 8 + 4] = i32(warp.ballot(v > 0))
                out[i * 8 + 5] = i32(warp.any(v > 900)) + 2 * i32(warp.all(v > -1000))
                out[i * 8 + 6] = i32(warp.match_any(v & 3))
                out[i * 8 + 7] = warp.reduce_sum(v)
            if warp.lane() < 16:
                with ox.unsafe():
                    out[i * 8 + 7] += warp.reduce_max(v, mask=u32(0xFFFF))
    """)
    spec = m.kernels[0]
    n = 64
    x = np.random.default_rng(7).integers(-999, 999, n).astype(np.int32)
    out = np.full(n * 8, -12345, np.int32)
    m.function(spec.symbol).launch((1, 1, 1), (n, 1, 1), 0,
                                   slots(spec, {"x": [x.ctypes.data, n], "out": [out.ctypes.data, n * 8]}))
    got = out.reshape(n, 8)
    for w in range(n // 32):
        v = x[w * 32:(w + 1) * 32]
        for lane in range(32):
            row = got[w * 32 + lane]
            assert row[0] == (v[lane + 3] if lane + 3 < 32 else v[lane])
            assert row[1] == (v[lane - 5] if lane >= 5 else v[lane])
            assert row[2] == v[lane ^ 9]
            assert row[3] == v[(lane & ~7) + 7]
            assert np.uint32(row[4]) == np.uint32(sum(1 << k for k in range(32) if v[k] > 0))
            assert row[5] == int((v > 900).any()) + 2
            assert np.uint32(row[6]) == np.uint32(sum(1 << k for k in range(32) if (v[k] & 3) == (v[lane] & 3)))
            expected = int(v.sum(dtype=np.int64)) + (int(v[:16].max()) if lane < 16 else 0)
            assert row[7] == np.int32(expected)


def test_barrier_some_threads_never_reach_is_synccheck(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, f32, thread, block

        @ox.kernel
        def partial(out: MutSlice[f32]) -> None:
            t = thread.idx.x
            if t < 40:
                return
            block.sync()
            with ox.unsafe():
                out[t] = f32(1.0)
    """)
    spec = m.kernels[0]
    out = np.zeros(64, np.float32)
    with pytest.raises(SynccheckError) as info:
        m.function(spec.symbol).launch((3, 1, 1), (64, 1, 1), 0, slots(spec, {"out": [out.ctypes.data, 64]}))
    message = str(info.value)
    assert "kernel partial" in message and "block (0, 0, 0)" in message and "thread (40, 0, 0)" in message
    assert "kern.py:10:5" in message and "40 of them exited" in message
    assert info.value.location.endswith("kern.py:10:5")


# ---- what has no CPU form -------------------------------------------------------------------------

def test_a_kernel_without_cpu_form_is_refused_naming_it_and_the_others_run(tmp_path: Path) -> None:
    """A kernel reaching inline PTX (through a device function) is refused when it is asked for,
    with the construct and its file:line; the module's other kernels run."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, DisjointSlice, u32, thread

        def clock() -> u32:
            with ox.unsafe():
                return ox.asm("mov.u32 $0, %clock;", outputs=(("=r", u32),))

        @ox.kernel
        def timed(out: MutSlice[u32]) -> None:
            i = thread.index_1d()
            with ox.unsafe():
                out[i] = clock()

        @ox.kernel
        def plain(out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = u32(i) * u32(3)
    """)
    timed = next(k for k in m.kernels if k.name == "timed")
    with pytest.raises(CompileError, match=r"asm\(\) has no CPU form \(inline PTX `mov.u32 \$0, %clock;`\)") as info:
        m.function(timed.symbol)
    assert info.value.location is not None and info.value.location.line == 7
    plain = next(k for k in m.kernels if k.name == "plain")
    out = np.zeros(40, np.uint32)
    m.function(plain.symbol).launch((1, 1, 1), (64, 1, 1), 0, slots(plain, {"out": [out.ctypes.data, 40]}))
    np.testing.assert_array_equal(out, np.arange(40, dtype=np.uint32) * 3)


def test_launch_shape_is_checked() -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "saxpy.py", "examples.saxpy", ROOT)
    f = m.function("saxpy_f32")
    with pytest.raises(ValueError, match="at most 1024"):
        f.launch((1, 1, 1), (2048, 1, 1), 0, [0] * f.param_count)
    with pytest.raises(ValueError, match="unknown sanitizer"):
        f.launch((1, 1, 1), (32, 1, 1), 0, [0] * f.param_count, frozenset({"leakcheck"}))
    with pytest.raises(KeyError, match="saxpy_f32"):
        m.function("nope")


def test_math_functions_within_their_bounds(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, f64, thread

        @ox.kernel
        def funcs(x: Slice[f32], y: Slice[f64], out: MutSlice[f32], out64: MutSlice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x):
                v = x[i]
                d = y[i]
                with ox.unsafe():
                    out[i * 8 + 0] = ox.math.exp(v)
                    out[i * 8 + 1] = ox.math.sin(v) + ox.math.cos(v)
                    out[i * 8 + 2] = ox.math.rsqrt(ox.math.abs(v) + 1.0)
                    out[i * 8 + 3] = ox.math.sqrt(ox.math.abs(v))
                    out[i * 8 + 4] = f32(ox.math.isnan(v / v)) + 2.0 * f32(ox.math.signbit(v))
                    out[i * 8 + 5] = ox.math.fast_exp(v) + ox.math.saturate(v)
                    out[i * 8 + 6] = ox.math.pow(ox.math.abs(v), 1.5) + ox.math.sinpi(v)
                    out[i * 8 + 7] = ox.math.fmin(v, 0.25) + ox.math.tanh(v)
                    out64[i * 2 + 0] = ox.math.log1p(ox.math.abs(d)) + ox.math.atan2(d, 2.0)
                    out64[i * 2 + 1] = ox.math.erfc(d) + ox.math.cbrt(d)
    """)
    spec = m.kernels[0]
    n = 500
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[0] = 0.0
    y = rng.standard_normal(n) * 3
    out = np.full(n * 8, np.nan, np.float32)
    out64 = np.full(n * 2, np.nan, np.float64)
    m.function(spec.symbol).launch((2, 1, 1), (256, 1, 1), 0, slots(spec, {
        "x": [x.ctypes.data, n], "y": [y.ctypes.data, n], "out": [out.ctypes.data, n * 8],
        "out64": [out64.ctypes.data, n * 2]}))
    got = out.reshape(n, 8).astype(np.float64)
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.stack([
            np.exp(xd), np.sin(xd) + np.cos(xd), 1 / np.sqrt(np.abs(xd) + 1), np.sqrt(np.abs(xd)),
            np.isnan(xd / xd) + 2.0 * np.signbit(xd), np.exp(xd) + np.clip(xd, 0, 1),
            np.abs(xd) ** 1.5 + np.sin(np.pi * xd), np.minimum(xd, 0.25) + np.tanh(xd)], axis=1)
    np.testing.assert_allclose(got, expected, rtol=4e-6, atol=2e-6)
    import math

    expected64 = np.stack([np.log1p(np.abs(y)) + np.arctan2(y, 2.0),
                           np.array([math.erfc(v) for v in y]) + np.cbrt(y)], axis=1)
    np.testing.assert_allclose(out64.reshape(n, 2), expected64, rtol=1e-14, atol=1e-14)


def test_print_reaches_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, f32, thread

        @ox.kernel
        def show(x: Slice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                print("thread", i, f"value {x[i]:.2f}", x[i] > 1.0)
    """)
    spec = m.kernels[0]
    x = np.array([0.5, 1.25, 3.0], np.float32)
    m.function(spec.symbol).launch((1, 1, 1), (4, 1, 1), 0, slots(spec, {"x": [x.ctypes.data, 3]}))
    assert capfd.readouterr().out.splitlines() == ["thread 0 value 0.50 False", "thread 1 value 1.25 True",
                                                   "thread 2 value 3.00 True"]


def test_atomics_local_arrays_vectors_and_structs(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, i32, u32, f32x4, thread, block

        @ox.struct
        class Affine:
            scale: f32
            shift: f32

        def apply(t: Affine, v: f32) -> f32:
            return v * t.scale + t.shift

        @ox.kernel
        def mix(t: Affine, w: f32x4, x: Slice[f32], total: MutSlice[f32], counts: MutSlice[u32],
                top: MutSlice[f32], first: MutSlice[i32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            hist = ox.shared.array(4, u32)
            if thread.idx.x < 4:
                hist[thread.idx.x] = u32(0)
            block.sync()
            local = ox.local.array(4, f32)
            if i < len(x) // 4:
                a, b, c, d = x.load4(i)
                local[0] = a
                local[1] = b
                local[2] = c
                local[3] = d
                s = f32(0.0)
                for k in ox.static_range(4):
                    s += local[k] * w[k]
                v = apply(t, s)
                with ox.unsafe():
                    out[i] = v
                ox.atomic.add(total, 0, v)
                ox.atomic.add(hist, i32(i % 4), u32(1), scope="block")
                ox.atomic.max(top, 0, v)
                ox.atomic.cas(first, 0, -1, i32(i))
            block.sync()
            if thread.idx.x < 4:
                ox.atomic.add(counts, i32(thread.idx.x), hist[thread.idx.x], scope="system")
    """)
    spec = m.kernels[0]
    n = 1000
    rng = np.random.default_rng(9)
    x = rng.standard_normal(n * 4).astype(np.float32)
    total = np.zeros(1, np.float32)
    counts = np.zeros(4, np.uint32)
    top = np.full(1, -np.inf, np.float32)
    first = np.full(1, -1, np.int32)
    out = np.full(n, np.nan, np.float32)
    w = [0.5, -1.0, 2.0, 0.25]
    values = {"t": [f32_bits(1.5), f32_bits(-0.75)], "w": [f32_bits(v) for v in w], "x": [x.ctypes.data, x.size],
              "total": [total.ctypes.data, 1], "counts": [counts.ctypes.data, 4], "top": [top.ctypes.data, 1],
              "first": [first.ctypes.data, 1], "out": [out.ctypes.data, n]}
    m.function(spec.symbol).launch((-(-n // 128), 1, 1), (128, 1, 1), 0, slots(spec, values))
    quads = x.reshape(n, 4)
    s = np.zeros(n, np.float32)
    for k in range(4):  # the same order of f32 operations (each product-sum one fma, as on the GPU)
        s = (quads[:, k].astype(np.float64) * np.float64(np.float32(w[k])) + s.astype(np.float64)).astype(np.float32)
    expected = (s.astype(np.float64) * 1.5 + np.float64(np.float32(-0.75))).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(total[0], expected.astype(np.float64).sum(), rtol=1e-4)
    assert top[0] == expected.max()
    assert 0 <= first[0] < 128  # blocks run in order: one of block 0's threads won
    np.testing.assert_array_equal(counts, [250, 250, 250, 250])


def test_grid_sync_runs_every_block_at_once(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, DisjointSlice, f32, thread, grid

        @ox.kernel
        def two_phases(x: Slice[f32], tmp: MutSlice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(tmp):
                with ox.unsafe():
                    tmp[i] = x[i] * 2.0
            grid.sync()
            if i < len(out) and i < len(tmp):
                out[i] = tmp[len(tmp) - 1 - i]
    """)
    spec = m.kernels[0]
    f = m.function(spec.symbol)
    assert f.cooperative
    n = 8 * 64
    x = np.random.default_rng(10).standard_normal(n).astype(np.float32)
    tmp = np.full(n, np.nan, np.float32)
    out = np.full(n, np.nan, np.float32)
    f.launch((8, 1, 1), (64, 1, 1), 0, slots(spec, {"x": [x.ctypes.data, n], "tmp": [tmp.ctypes.data, n],
                                                    "out": [out.ctypes.data, n]}))
    np.testing.assert_array_equal(out, (x * 2)[::-1])


def test_memcheck_finds_an_unsafe_write_past_a_view(tmp_path: Path) -> None:
    """Checks off (bounds_check=False) and an unsafe write one past the end: memcheck names the
    access's file:line, the thread and the block; without it the launch runs (as on the GPU)."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, MutSlice, f32, thread

        @ox.kernel(bounds_check=False)
        def spill(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                with ox.unsafe():
                    out[i + 1] = x[i]
    """)
    spec = m.kernels[0]
    n = 100
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    guard = np.full(n + 64, np.nan, np.float32)  # out is its first n elements: the write past them is harmless here
    out = guard[:n]
    values = [x.ctypes.data, n, out.ctypes.data, n]  # every slot: memcheck reads out's length too
    f = m.function(spec.symbol)
    f.launch((1, 1, 1), (128, 1, 1), 0, values)
    np.testing.assert_array_equal(guard[1:n + 1], x)
    guard[:] = np.nan
    with pytest.raises(MemcheckError) as info:
        f.launch((1, 1, 1), (128, 1, 1), 0, values, frozenset({"memcheck"}))
    message = str(info.value)
    assert "memcheck: in kernel spill, block (0, 0, 0), thread (99, 0, 0): a write of 4 bytes" in message
    assert "kern.py:10:" in message
    np.testing.assert_array_equal(guard[1:n], x[:n - 1])  # every other thread ran
    assert np.isnan(guard[n])  # the bad write never happened


def test_memcheck_passes_the_examples() -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "reduce.py", "examples.reduce", ROOT)
    n = 10_000
    x = np.random.default_rng(12).standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    m.function("block_sum").launch((4, 1, 1), (256, 1, 1), 0, slots(spec_of(m, "block_sum"), {
        "x": [x.ctypes.data, n], "out": [out.ctypes.data, 1]}), frozenset({"memcheck", "racecheck", "initcheck"}))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4)


def test_byte_perm_as_prmt(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, DisjointSlice, u32, thread

        @ox.kernel
        def perm(x: Slice[u32], y: Slice[u32], s: Slice[u32], out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x) and i < len(y) and i < len(s):
                out[i] = ox.bits.byte_perm(x[i], y[i], s[i])
    """)
    spec = m.kernels[0]
    n = 300
    rng = np.random.default_rng(13)
    x, y, s = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    out = np.zeros(n, np.uint32)
    m.function(spec.symbol).launch((2, 1, 1), (256, 1, 1), 0, slots(spec, {
        "x": [x.ctypes.data, n], "y": [y.ctypes.data, n], "s": [s.ctypes.data, n], "out": [out.ctypes.data, n]}))
    for k in range(n):
        both = int(x[k]) | int(y[k]) << 32
        expected = 0
        for b in range(4):
            nibble = int(s[k]) >> (4 * b) & 0xF
            byte = both >> (8 * (nibble & 7)) & 0xFF
            if nibble & 8:
                byte = 0xFF if byte & 0x80 else 0
            expected |= byte << (8 * b)
        assert int(out[k]) == expected, k


RACY = """
    import oxide as ox
    from oxide import Slice, MutSlice, f32, i32, thread, block, warp

    @ox.kernel
    def racy(x: Slice[f32], out: MutSlice[f32], sync: i32) -> None:
        buf = ox.shared.array(64, f32)
        t = thread.idx.x
        buf[t] = x[t]
        if sync == 1:
            block.sync()
        v = buf[(t + 1) % 64]
        block.sync()
        with ox.unsafe():
            out[t] = v

    @ox.kernel
    def warp_ordered(x: Slice[f32], out: MutSlice[f32]) -> None:
        buf = ox.shared.array(32, f32)
        t = thread.idx.x
        buf[t] = x[t]
        warp.sync()
        with ox.unsafe():
            out[t] = buf[31 - t]

    @ox.kernel
    def uninitialized(out: MutSlice[f32]) -> None:
        buf = ox.shared.array(64, f32)
        t = thread.idx.x
        if t < 32:
            buf[t] = f32(t)
        block.sync()
        with ox.unsafe():
            out[t] = buf[63 - t]
"""


def test_racecheck_and_initcheck_on_shared_memory(tmp_path: Path) -> None:
    m = module(tmp_path, RACY)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    racy = next(k for k in m.kernels if k.name == "racy")
    for sync in (1, 0):
        values = slots(racy, {"x": [x.ctypes.data, 64], "out": [out.ctypes.data, 64], "sync": [sync]})
        if sync:
            m.function(racy.symbol).launch((2, 1, 1), (64, 1, 1), 0, values, frozenset({"racecheck", "initcheck"}))
            np.testing.assert_array_equal(out, np.roll(x, -1))
            continue
        with pytest.raises(RacecheckError) as info:
            m.function(racy.symbol).launch((2, 1, 1), (64, 1, 1), 0, values, frozenset({"racecheck"}))
        message = str(info.value)
        assert "a race on shared memory in kernel racy, block (0, 0, 0)" in message
        assert "kern.py:9:" in message and "kern.py:12:" in message  # the write, and the read it races with
    warp_ordered = next(k for k in m.kernels if k.name == "warp_ordered")
    m.function(warp_ordered.symbol).launch((1, 1, 1), (32, 1, 1), 0, slots(warp_ordered, {
        "x": [x.ctypes.data, 64], "out": [out.ctypes.data, 64]}), frozenset({"racecheck"}))
    np.testing.assert_array_equal(out[:32], x[:32][::-1])
    uninit = next(k for k in m.kernels if k.name == "uninitialized")
    values = slots(uninit, {"out": [out.ctypes.data, 64]})
    m.function(uninit.symbol).launch((1, 1, 1), (64, 1, 1), 0, values)  # unchecked, it runs
    with pytest.raises(InitcheckError, match=r"initcheck: in kernel uninitialized, block \(0, 0, 0\), thread \(0, 0, 0\)"
                       r" reads byte \d+ of the block.s shared memory at .*kern.py:34:"):
        m.function(uninit.symbol).launch((1, 1, 1), (64, 1, 1), 0, values, frozenset({"initcheck"}))


def test_sanitizers_pass_the_examples() -> None:
    m = engine.compile_module_for_cpu(EXAMPLES / "sgemm.py", "examples.sgemm", ROOT)
    spec = spec_of(m, "sgemm")
    a = np.random.default_rng(14).standard_normal((40, 40)).astype(np.float32)
    c = np.full((40, 40), np.nan, np.float32)
    m.function("sgemm").launch((2, 2, 1), (32, 32, 1), 0, slots(spec, {
        "a": [a.ctypes.data, a.size], "b": [a.ctypes.data, a.size], "m": [40], "n": [40], "k": [40],
        "c": [c.ctypes.data, c.size]}), frozenset({"memcheck", "racecheck", "initcheck", "synccheck"}))
    np.testing.assert_allclose(c, a.astype(np.float64) @ a.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_a_module_freed_leaves_the_others_working(tmp_path: Path) -> None:
    """Each engine owns its target machine: freeing one module's code frees nothing another uses."""
    import gc

    from oxide_build.backends.cpu.engine import CpuModule
    from oxide_build.compile import CompileOptions, compile_module

    for _ in range(3):
        compiled = compile_module(EXAMPLES / "saxpy.py", "examples.saxpy", CompileOptions(device="cpu", link_cubins=False),
                                  ROOT)
        assert compiled.host is not None and not compiled.ptx and not compiled.cubins
        m = CpuModule("examples.saxpy", compiled.kernels, compiled.error_sites, compiled.arrays, compiled.host)
        x = np.arange(64, dtype=np.float32)
        out = np.zeros(64, np.float32)
        m.function("saxpy_unchecked_f32").launch((1, 1, 1), (64, 1, 1), 0, slots(
            spec_of(m, "saxpy_unchecked_f32"), {"a": [f32_bits(3.0)], "x": [x.ctypes.data, 64],
                                                "y": [x.ctypes.data, 64], "out": [out.ctypes.data, 64]}))
        np.testing.assert_array_equal(out, 4 * x)
        del m
        gc.collect()


def _fp8_values(e5m2: bool) -> dict[int, float]:
    """Every fp8 code's value (NaN codes left out), from the format's definition."""
    m, bias = (2, 15) if e5m2 else (3, 7)
    out = {}
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent, frac = (code & 0x7F) >> m, code & ((1 << m) - 1)
        if (not e5m2 and code & 0x7F == 0x7F) or (e5m2 and exponent == 31):
            continue  # NaN (and e5m2's infinities: never a satfinite result)
        value = frac * 2.0 ** (1 - bias - m) if exponent == 0 else (1 + frac / 2 ** m) * 2.0 ** (exponent - bias)
        out[code] = sign * value
    return out


def test_fp8_conversions_as_ptx(tmp_path: Path) -> None:
    """f32 -> fp8 rounds to nearest even and saturates (cvt.rn.satfinite), fp8 -> f32 is exact:
    checked against the formats' tables, every code and random values, ties and huge ones."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import Slice, DisjointSlice, f32, f8e4m3, f8e5m2, thread

        @ox.kernel
        def conv(x: Slice[f32], q4: Slice[f8e4m3], q5: Slice[f8e5m2], o4: DisjointSlice[f8e4m3],
                 o5: DisjointSlice[f8e5m2], w4: DisjointSlice[f32], w5: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(o4) and i < len(o5) and i < len(q4) and i < len(q5) and i < len(w4) \\
                    and i < len(w5):
                o4[i] = f8e4m3(x[i])
                o5[i] = f8e5m2(x[i])
                w4[i] = f32(q4[i])
                w5[i] = f32(q5[i])
    """)
    spec = m.kernels[0]
    t4, t5 = _fp8_values(False), _fp8_values(True)
    rng = np.random.default_rng(15)
    finite4 = sorted(set(t4.values()))
    ties = [(a + b) / 2 for a, b in zip(finite4, finite4[1:])]
    x = np.concatenate([rng.standard_normal(700) * 50, rng.standard_normal(300) * 1e-2, ties, [1e6, -1e6, 470.0, 3e4]])
    x = x.astype(np.float32)
    n = len(x)
    codes = np.arange(n) % 256
    q4, q5 = codes.astype(np.uint8), codes.astype(np.uint8)
    o4, o5 = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    w4, w5 = np.full(n, -7.0, np.float32), np.full(n, -7.0, np.float32)
    arrays = {"x": x, "q4": q4, "q5": q5, "o4": o4, "o5": o5, "w4": w4, "w5": w5}
    m.function(spec.symbol).launch((-(-n // 256), 1, 1), (256, 1, 1), 0,
                                   slots(spec, {k: [a.ctypes.data, n] for k, a in arrays.items()}))
    for table, got_codes, widened in ((t4, o4, w4), (t5, o5, w5)):
        for c, w in zip(codes, widened):
            if int(c) in table:
                assert w == np.float32(table[int(c)]), (c, w)
            else:
                assert np.isnan(w) or np.isinf(w), (c, w)
        items = sorted(table.items(), key=lambda kv: (kv[1], kv[0]))
        largest = max(table.values())
        for v, c in zip(x.astype(np.float64), got_codes):
            target = min(max(v, -largest), largest)
            best = min(abs(val - target) for _, val in items)
            candidates = [code for code, val in items if abs(val - target) == best]
            # a tie goes to the even code (the one whose lowest mantissa bit is 0); -0 and +0 alike
            even = [code for code in candidates if code & 1 == 0] or candidates
            assert table[int(c)] == table[even[0]], (v, c, even)


def test_active_mask_under_a_branch(tmp_path: Path) -> None:
    """warp.active_mask() asked by some lanes only (CUDA's usual `mask = __activemask()` in a
    branch) is the lanes executing that call together, as on the GPU: not the lanes of the
    other branch, nor those that returned; all the warp's live lanes where they all call it.
    The other branch's lanes waiting at a warp operation with the whole warp do not stall it."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, u32, thread, warp

        @ox.kernel
        def masks(out: MutSlice[u32], after: MutSlice[u32], total: MutSlice[u32]) -> None:
            t = thread.idx.x
            if t >= 40:
                return
            if t % 3 == 0:
                with ox.unsafe():
                    out[t] = warp.active_mask()
            else:
                with ox.unsafe():
                    total[t] = warp.reduce_sum(u32(1), mask=warp.active_mask())
            with ox.unsafe():
                after[t] = warp.active_mask()
    """)
    spec = m.kernels[0]
    out, after, total = np.zeros(64, np.uint32), np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    m.function(spec.symbol).launch((1, 1, 1), (64, 1, 1), 0, slots(spec, {
        "out": [out.ctypes.data, 64], "after": [after.ctypes.data, 64], "total": [total.ctypes.data, 64]}))
    for t in range(40):
        warp_lanes = range(t // 32 * 32, min(t // 32 * 32 + 32, 40))
        branch = [u for u in warp_lanes if (u % 3 == 0) == (t % 3 == 0)]
        if t % 3 == 0:
            assert out[t] == sum(1 << (u % 32) for u in branch), (t, hex(out[t]))
        else:
            assert total[t] == len(branch), (t, total[t])
        assert after[t] == sum(1 << (u % 32) for u in warp_lanes), (t, hex(after[t]))


def test_nanosleep_lets_the_other_threads_run(tmp_path: Path) -> None:
    """A thread spinning on a flag that a later thread of the block sets, with nanosleep between
    its reads (a kernel with no barrier), sees the flag set: nanosleep lets the others run."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, i32, thread

        @ox.kernel
        def handoff(flag: MutSlice[i32], out: MutSlice[i32]) -> None:
            t = thread.idx.x
            with ox.unsafe():
                if t == 0:
                    spins = 0
                    while ox.volatile.load(flag, 0) == 0:
                        ox.timer.nanosleep(100)
                        spins += 1
                    out[0] = ox.volatile.load(flag, 1) + 1
                    out[1] = spins
                elif t == 63:
                    ox.volatile.store(flag, 1, 41)
                    ox.fence.block()
                    ox.volatile.store(flag, 0, 1)
    """)
    spec = m.kernels[0]
    flag, out = np.zeros(2, np.int32), np.zeros(2, np.int32)
    m.function(spec.symbol).launch((1, 1, 1), (64, 1, 1), 0, slots(spec, {"flag": [flag.ctypes.data, 2],
                                                                         "out": [out.ctypes.data, 2]}))
    assert out[0] == 42 and out[1] >= 1, out


def _nearest_even(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The bits of the element of ``table`` (the finite non-negative values of a format, by
    bits, then infinity as the next power of two) nearest each |x|, a tie to the even bits,
    with x's sign."""
    mag = np.abs(x)
    hi = np.clip(np.searchsorted(table, mag), 1, len(table) - 1)
    lo = hi - 1
    d_lo, d_hi = mag - table[lo], table[hi] - mag
    pick = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    return pick.astype(np.uint16) | np.where(np.signbit(x), 0x8000, 0).astype(np.uint16)


def test_conversions_to_halves_round_once_to_nearest_even(tmp_path: Path) -> None:
    """f64 -> f16 and f32/f64 -> bf16 (compiler-rt calls on x86-64, which the scheduler provides:
    they were resolved to address 0, a crash) round once to nearest even, ties, subnormals,
    overflow to infinity and NaN included, against the formats' tables."""
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, Slice, bf16, f16, f32, f64, thread

        @ox.kernel
        def narrow(d: Slice[f64], s: Slice[f32], h64: MutSlice[f16], h32: MutSlice[f16], b64: MutSlice[bf16],
                   b32: MutSlice[bf16]) -> None:
            i = thread.index_1d()
            if i < len(d) and i < len(s):
                with ox.unsafe():
                    h64[i] = f16(d[i])
                    h32[i] = f16(s[i])
                    b64[i] = bf16(d[i])
                    b32[i] = bf16(s[i])
    """)
    rng = np.random.default_rng(7)
    n = 20000
    h_table = np.append(np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64), 65536.0)
    b_table = np.append((np.arange(0x7F80, dtype=np.uint32) << 16).view(np.float32).astype(np.float64), 2.0 ** 128)
    # values near the formats' grids (ties and their neighbours), their subnormals and overflow edges
    d = np.concatenate([
        h_table[rng.integers(0, 0x7C00, n // 4)] * (1 + rng.choice([-1, 1], n // 4) * 2.0 ** -rng.integers(11, 60, n // 4)),
        (h_table[:-2][rng.integers(0, 0x7BFF, n // 4)] + h_table[1:-1][rng.integers(0, 0x7BFF, n // 4)]) / 2,
        b_table[rng.integers(0, 0x7F80, n // 4)] * (1 + rng.choice([-1, 1], n // 4) * 2.0 ** -rng.integers(8, 60, n // 4)),
        np.ldexp(rng.uniform(0.5, 1, n // 4), rng.integers(-140, 130, n // 4)),
    ]) * rng.choice([-1, 1], n)
    d[:6] = [np.nan, np.inf, -np.inf, 65520.0, 65519.99, 2.0 ** -25]
    s = d.astype(np.float32)
    outs = [np.zeros(n, np.uint16) for _ in range(4)]
    spec = m.kernels[0]
    with np.errstate(over="ignore"):
        m.function(spec.symbol).launch((n // 256 + 1, 1, 1), (256, 1, 1), 0, slots(spec, {
            "d": [d.ctypes.data, n], "s": [s.ctypes.data, n],
            **{k: [o.ctypes.data, n] for k, o in zip(("h64", "h32", "b64", "b32"), outs)}}))
        h64, h32, b64, b32 = outs
        finite = ~np.isnan(d)
        np.testing.assert_array_equal(h64[finite], d[finite].astype(np.float16).view(np.uint16))  # NumPy rounds once
        np.testing.assert_array_equal(h32[finite], s[finite].astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(h64[finite], _nearest_even(d[finite], h_table))
    np.testing.assert_array_equal(b64[finite], _nearest_even(d[finite], b_table))
    np.testing.assert_array_equal(b32[finite], _nearest_even(s[finite].astype(np.float64), b_table))
    for bits, mask in ((h64, 0x7C00), (h32, 0x7C00), (b64, 0x7F80), (b32, 0x7F80)):
        assert int(bits[0]) & mask == mask and int(bits[0]) & ~mask & 0x7FFF, hex(bits[0])  # NaN


def test_half_multiply_add_is_fused_as_on_the_gpu(tmp_path: Path) -> None:
    """``a * b + c`` (and the other three shapes) of f16, bf16 and f16x2 rounds once, as the GPU
    build contracts it (fma.rn.f16x2: test_half2.py); with fma = false, twice."""
    source = """
        import oxide as ox
        from oxide import MutSlice, Slice, bf16, f16, f16x2, thread

        @ox.kernel
        def shapes(a: Slice[f16], b: Slice[f16], c: Slice[f16], out: MutSlice[f16], ba: Slice[bf16], bb: Slice[bf16],
                   bc: Slice[bf16], bout: MutSlice[bf16]) -> None:
            i = thread.index_1d()
            if i < len(a) and i < len(b) and i < len(c) and i < len(ba) and i < len(bb) and i < len(bc):
                with ox.unsafe():
                    out[4 * i] = a[i] * b[i] + c[i]
                    out[4 * i + 1] = c[i] - a[i] * b[i]
                    v = f16x2(a[i], c[i]) * f16x2(b[i], b[i]) - f16x2(c[i], a[i])
                    out[4 * i + 2] = v.x
                    out[4 * i + 3] = v.y
                    bout[2 * i] = ba[i] * bb[i] + bc[i]
                    bout[2 * i + 1] = bc[i] + ba[i] * bb[i]
    """
    rng = np.random.default_rng(3)
    n = 4096
    a, b, c = (rng.uniform(-4, 4, n).astype(np.float16) for _ in range(3))
    b_table = np.append((np.arange(0x7F80, dtype=np.uint32) << 16).view(np.float32).astype(np.float64), 2.0 ** 128)
    ba, bb, bc = (_nearest_even(rng.uniform(-4, 4, n), b_table) for _ in range(3))

    def wide(bits: np.ndarray) -> np.ndarray:
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)

    x, y, z = (v.astype(np.float64) for v in (a, b, c))
    from oxide_build.compile import CompileOptions

    for fma in (True, False):
        folder = tmp_path / f"fma_{fma}"
        folder.mkdir()
        (folder / "kern.py").write_text(textwrap.dedent(source))
        m = engine.compile_module_for_cpu(folder / "kern.py", "kern", folder, CompileOptions(fma=fma))
        out, bout = np.zeros(4 * n, np.float16), np.zeros(2 * n, np.uint16)
        spec = m.kernels[0]
        m.function(spec.symbol).launch((n // 256, 1, 1), (256, 1, 1), 0, slots(spec, {
            "a": [a.ctypes.data, n], "b": [b.ctypes.data, n], "c": [c.ctypes.data, n], "out": [out.ctypes.data, 4 * n],
            "ba": [ba.ctypes.data, n], "bb": [bb.ctypes.data, n], "bc": [bc.ctypes.data, n],
            "bout": [bout.ctypes.data, 2 * n]}))
        if fma:  # every product and sum here is exact in f64: the fused result is the f64 one, rounded
            want = np.stack([x * y + z, z - x * y, x * y - z, z * y - x], 1).astype(np.float16)
            bwant = _nearest_even(wide(ba) * wide(bb) + wide(bc), b_table)
            np.testing.assert_array_equal(bout.reshape(n, 2), np.stack([bwant, bwant], 1))
        else:
            p, q = (a * b).astype(np.float16), (c * b).astype(np.float16)
            want = np.stack([p + c, c - p, p - c, q - a], 1).astype(np.float16)
        np.testing.assert_array_equal(out.reshape(n, 4), want)


def test_local_arrays_beyond_a_threads_stack_are_refused(tmp_path: Path) -> None:
    m = module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, f32, thread

        @ox.kernel
        def big(out: MutSlice[f32]) -> None:
            scratch = ox.local.array(60000, f32)
            i = thread.index_1d()
            scratch[i % 60000] = f32(i)
            with ox.unsafe():
                out[i] = scratch[(i + 1) % 60000]
    """)
    with pytest.raises(CompileError, match=r"big\(\) declares 240000 bytes of local arrays; a thread of the CPU "
                                           r"device has 192 KiB") as info:
        m.function(m.kernels[0].symbol)
    assert info.value.location is not None and info.value.location.line == 7


def test_fma_off_rounds_each_operation(tmp_path: Path) -> None:
    """[tool.oxide] fma = false: a * x + y rounds twice, as NumPy's f32 arithmetic (and the GPU build's)."""
    from oxide_build.compile import CompileOptions

    m = engine.compile_module_for_cpu(EXAMPLES / "saxpy.py", "examples.saxpy", ROOT, CompileOptions(fma=False))
    spec = spec_of(m, "saxpy_f32")
    n = 50_000
    rng = np.random.default_rng(16)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    a = np.float32(1.37)
    m.function("saxpy_f32").launch((-(-n // 256), 1, 1), (256, 1, 1), 0, slots(spec, {
        "a": [f32_bits(a)], "x": [x.ctypes.data, n], "y": [y.ctypes.data, n], "out": [out.ctypes.data, n]}))
    np.testing.assert_array_equal(out, a * x + y)
    fused = (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    assert not np.array_equal(out, fused)  # the inputs tell the two apart
