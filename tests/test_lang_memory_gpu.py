"""Views as values, vector and struct types, memory spaces (docs/language.md): the kernels of
tests/packages/memkernels/ against NumPy in float64, on fresh random inputs, outputs poisoned
before each launch, every element checked."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu
PACKAGE = Path(__file__).resolve().parent / "packages" / "memkernels"
BLOCK = 256
rng = np.random.default_rng()
POISON = np.float32(-12345.5)


def _compile(name: str, backend: str, root: Path) -> ModuleType:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    pkg_name = f"memk_{name}_{backend}"
    pkg = root / pkg_name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(PACKAGE / f"{name}.py", pkg / f"{name}.py")
    if not devices.on_cpu():  # the CPU device compiles the source at the first launch
        compiled = compile_module(pkg / f"{name}.py", f"{pkg_name}.{name}", CompileOptions(archs=(arch,), backend=backend), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(f"{pkg_name}.{name}")
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module", params=devices.backends())
def viewk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield _compile("viewk", request.param, tmp_path_factory.mktemp(f"viewk_{request.param}"))


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


def poisoned(n: int, dtype: Any = np.float32) -> Any:
    return dev(np.full(n, POISON, dtype))


def values(n: int) -> np.ndarray:
    """Random non-zero float32 values in ±[0.5, 2)."""
    return (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def assert_sums_close(got: np.ndarray, exact: np.ndarray, terms: Any, abs_sums: Any) -> None:
    """float32 sums against float64 ones, within the rounding bound of summing ``terms``
    values whose magnitudes add up to ``abs_sums``: |error| <= terms * 2**-24 * abs_sums."""
    bound = np.asarray(terms) * 2.0 ** -23 * np.asarray(abs_sums) + 1e-6
    assert got.shape == exact.shape
    bad = np.abs(got.astype(np.float64) - exact) > bound
    assert not bad.any(), (np.flatnonzero(bad)[:10], got[bad][:10], exact[bad][:10])


def sync() -> None:
    from oxide.runtime import synchronize

    synchronize()


def test_block_sums_with_a_shared_array_passed_to_a_device_function(viewk: ModuleType) -> None:
    n = 7 * BLOCK + 45
    x = values(n)
    blocks = (n + BLOCK - 1) // BLOCK
    out = poisoned(blocks)
    viewk.block_sums[blocks, BLOCK](dev(x), out)
    sync()
    padded = np.zeros(blocks * BLOCK)
    padded[:n] = x
    per_block = padded.reshape(blocks, BLOCK)
    assert_sums_close(out.to_numpy(), per_block.sum(axis=1), BLOCK, np.abs(per_block).sum(axis=1))


def test_row_sums_through_slices(viewk: ModuleType) -> None:
    rows, cols = 1000, 37
    x = values(rows * cols)
    out = poisoned(rows)
    viewk.row_sums[(rows + 127) // 128, 128](dev(x), cols, out)
    sync()
    m = x.astype(np.float64).reshape(rows, cols)
    assert_sums_close(out.to_numpy(), m.sum(axis=1), cols, np.abs(m).sum(axis=1))


def test_suffix_sums_through_pointer_offsets(viewk: ModuleType) -> None:
    n = 700
    x = values(n)
    out = poisoned(n)
    viewk.suffix_sums[(n + 127) // 128, 128](dev(x), out)
    sync()
    expect = np.cumsum(x.astype(np.float64)[::-1])[::-1]
    assert_sums_close(out.to_numpy(), expect, n - np.arange(n), np.cumsum(np.abs(x.astype(np.float64))[::-1])[::-1])


def test_shared_slices_to_device_functions(viewk: ModuleType) -> None:
    n = 5 * BLOCK
    x = values(n)
    out = poisoned(n)
    viewk.shared_slices[n // BLOCK, BLOCK](dev(x), out)
    sync()
    t = x.astype(np.float64).reshape(-1, BLOCK)
    nxt = np.roll(t, -1, axis=1)
    expect = 3 * t - t + t + nxt
    expect[:, -1] = 3 * t[:, -1]  # tid + 2 > BLOCK: hi[tid] alone
    np.testing.assert_allclose(out.to_numpy(), expect.ravel(), rtol=1e-5, atol=1e-5)


def test_hillis_steele_scan_with_swapped_buffers(viewk: ModuleType) -> None:
    n = 6 * BLOCK + 100
    x = values(n)
    blocks = (n + BLOCK - 1) // BLOCK
    out = poisoned(n)
    viewk.hillis_steele_scan[blocks, BLOCK](dev(x), out)
    sync()
    padded = np.zeros(blocks * BLOCK)
    padded[:n] = x
    expect = np.cumsum(padded.reshape(blocks, BLOCK), axis=1).ravel()[:n]
    abs_sums = np.cumsum(np.abs(padded.reshape(blocks, BLOCK)), axis=1).ravel()[:n]
    assert_sums_close(out.to_numpy(), expect, BLOCK, abs_sums)


def test_pick_buffer_by_block_parity(viewk: ModuleType) -> None:
    n = 4 * BLOCK
    x = values(n)
    out = poisoned(n)
    viewk.pick_buffer[n // BLOCK, BLOCK](dev(x), out)
    sync()
    t = x.astype(np.float64).reshape(-1, BLOCK)[:, ::-1].copy()
    t[0::2] *= -2.0  # even blocks read buf_1 = -2 x
    np.testing.assert_allclose(out.to_numpy(), t.ravel(), rtol=1e-6)


def test_window_mean_with_slice_length(viewk: ModuleType) -> None:
    n, w = 900, 7
    x = values(n + w)
    out = poisoned(n)
    viewk.window_mean[(n + 127) // 128, 128](dev(x), w, out)
    sync()
    expect = np.array([x[i:i + w].astype(np.float64).mean() for i in range(n)])
    abs_means = np.array([np.abs(x[i:i + w].astype(np.float64)).mean() for i in range(n)])
    assert_sums_close(out.to_numpy(), expect, w + 1, abs_means)


def test_an_offset_is_checked_against_the_length(viewk: ModuleType) -> None:
    from oxide import KernelError

    n = 300
    x = values(n)
    out = poisoned(64)
    viewk.tail_sum[1, 64](dev(x), 3, out)
    sync()
    tail = x[3:].astype(np.float64)
    assert_sums_close(out.to_numpy(), np.full(64, tail.sum()), n - 3, np.full(64, np.abs(tail).sum()))
    with pytest.raises(KernelError, match=r"slice x \+ k .* with index 305 but length 300"):
        viewk.tail_sum[1, 64](dev(x), n + 5, poisoned(64))
        sync()


def test_a_slice_past_the_end_is_a_kernel_error(viewk: ModuleType) -> None:
    from oxide import KernelError

    n, w = 256, 7
    x = values(n)  # the last windows reach past the end of x
    out = poisoned(n)
    with pytest.raises(KernelError, match=r"x\[i:i \+ w\]"):
        viewk.window_mean[2, 128](dev(x), w, out)
        sync()


# ---- item 5: constant and global memory -----------------------------------------------------

@pytest.fixture(scope="module", params=devices.backends())
def memspaces(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield _compile("memspaces", request.param, tmp_path_factory.mktemp(f"memspaces_{request.param}"))


def test_constant_tables_initial_and_filled_from_the_host(memspaces: ModuleType) -> None:
    n = 1000
    x = values(n + 4)
    scale = np.array([rng.uniform(0.5, 2.0), rng.uniform(-3.0, 3.0)], np.float32)
    memspaces.SCALE.write(scale)
    np.testing.assert_array_equal(memspaces.SCALE.read(), scale)
    np.testing.assert_array_equal(memspaces.WEIGHTS.read(), [0.0625, 0.25, 0.375, 0.25, 0.0625])
    out = poisoned(n)
    memspaces.blur[(n + 127) // 128, 128](dev(x), out)
    sync()
    w = np.array([0.0625, 0.25, 0.375, 0.25, 0.0625])
    offsets = np.array([3, -1, 4, -1, 5, -9, 2, 6], np.float64)
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), 5)[:n]
    expect = windows @ w * float(scale[0]) + float(scale[1]) + offsets[np.arange(n) % 8]
    np.testing.assert_allclose(out.to_numpy(), expect, rtol=1e-5, atol=1e-5)
    # new values from the host reach the next launch
    memspaces.SCALE.write([1.0, 0.0])
    out2 = poisoned(n)
    memspaces.blur[(n + 127) // 128, 128](dev(x), out2)
    sync()
    np.testing.assert_allclose(out2.to_numpy(), windows @ w + offsets[np.arange(n) % 8], rtol=1e-5, atol=1e-5)


def test_device_globals_count_and_flag(memspaces: ModuleType) -> None:
    n = 5000 + int(rng.integers(0, 100))
    x = values(n)
    memspaces.COUNTER.write([7])  # a non-zero start: the kernel adds to it
    memspaces.FLAG.write(np.zeros(1, np.int32))
    memspaces.PER_BUCKET.write(np.full(8, 3, np.uint32))
    threshold = np.float32(0.75)
    memspaces.count_above[(n + 255) // 256, 256](dev(x), threshold)
    sync()
    assert int(memspaces.COUNTER.read()[0]) == 7 + int((x > threshold).sum())
    assert int(memspaces.FLAG.read()[0]) == int((x < 0).any())
    np.testing.assert_array_equal(memspaces.PER_BUCKET.read(), 3 + np.bincount(np.arange(n) % 8, minlength=8))
    memspaces.FLAG.write([0])
    memspaces.count_above[(n + 255) // 256, 256](dev(np.abs(x)), threshold)
    sync()
    assert int(memspaces.FLAG.read()[0]) == 0  # no negative value this time
    assert memspaces.COUNTER.device_pointer() != 0


def test_writing_a_module_array_checks_size_and_type(memspaces: ModuleType) -> None:
    with pytest.raises(ValueError, match="holds 2 element"):
        memspaces.SCALE.write([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="cannot convert"):
        memspaces.COUNTER.write(np.array([1.5]))


# ---- item 4: vector types -----------------------------------------------------------------

@pytest.fixture(scope="module", params=devices.backends())
def vectork(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield _compile("vectork", request.param, tmp_path_factory.mktemp(f"vectork_{request.param}"))


def test_float4_arithmetic_loads_and_stores(vectork: ModuleType) -> None:
    n4 = 1000
    x, y = values(4 * n4), values(4 * n4)
    a = np.float32(rng.uniform(0.5, 2.0))
    out = poisoned(4 * n4)
    vectork.saxpy4[(n4 + 127) // 128, 128](a, dev(x), dev(y), out)
    sync()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    v = float(a) * x64 + y64
    w = (v + (x64 - v) * 0.25).reshape(-1, 4)
    w[:, 1] += 1.0
    w[:, 3] = -w[:, 3]
    np.testing.assert_allclose(out.to_numpy(), w.ravel(), rtol=1e-5, atol=1e-5)


def test_uchar4_pixels(vectork: ModuleType) -> None:
    n = 4 * 777
    pixels = rng.integers(1, 255, n, dtype=np.uint8)
    out = dev(np.full(n, 7, np.uint8))
    vectork.invert_rgb[(n // 4 + 127) // 128, 128](dev(pixels), out)
    sync()
    expect = (255 - pixels.astype(np.int64)).reshape(-1, 4)
    expect[:, 3] = pixels.reshape(-1, 4)[:, 3]
    np.testing.assert_array_equal(out.to_numpy(), expect.ravel().astype(np.uint8))


def test_double2_complex_multiply(vectork: ModuleType) -> None:
    n = 600
    x = rng.uniform(-2.0, 2.0, 2 * n) + 0.25
    y = rng.uniform(-2.0, 2.0, 2 * n) - 0.125
    out = dev(np.full(2 * n, -12345.5))
    vectork.complex_multiply[(n + 127) // 128, 128](dev(x), dev(y), out)
    sync()
    zx, zy = x[0::2] + 1j * x[1::2], y[0::2] + 1j * y[1::2]
    z = zx * zy + np.conj(zx)
    expect = np.empty(2 * n)
    expect[0::2], expect[1::2] = z.real, z.imag
    np.testing.assert_allclose(out.to_numpy(), expect, rtol=1e-12, atol=1e-12)


def test_int2_pairs_ordered(vectork: ModuleType) -> None:
    n = 901
    x = rng.integers(-1000, 1000, 2 * n).astype(np.int32)
    x[x == 0] = 5
    out = dev(np.full(2 * n, -77, np.int32))
    vectork.pair_min_max[(n + 127) // 128, 128](dev(x), out)
    sync()
    pairs = x.reshape(-1, 2)
    expect = np.stack([pairs.min(axis=1), pairs.max(axis=1)], axis=1).ravel()
    np.testing.assert_array_equal(out.to_numpy(), expect)


# ---- item 4: structs ------------------------------------------------------------------------

@pytest.fixture(scope="module", params=devices.backends())
def structk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield _compile("structk", request.param, tmp_path_factory.mktemp(f"structk_{request.param}"))


def test_particles_through_struct_device_functions(structk: ModuleType) -> None:
    n = 1500
    px, py, vx, vy = values(n), values(n), values(n), values(n)
    mass = rng.uniform(0.5, 3.0, n).astype(np.float32)
    g, dt = np.float32(9.81), np.float32(0.01)
    out_x, out_y, out_s = poisoned(n), poisoned(n), poisoned(n)
    structk.step[(n + 127) // 128, 128](dev(px), dev(py), dev(vx), dev(vy), dev(mass), g, dt, out_x, out_y, out_s)
    sync()
    m = mass.astype(np.float64)
    fy = -float(g) * m  # gravity: (0, -g) * mass
    new_vx = vx.astype(np.float64)
    new_vy = vy.astype(np.float64) + fy * (float(dt) / m)
    np.testing.assert_allclose(out_x.to_numpy(), px + new_vx * float(dt), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_y.to_numpy(), py + new_vy * float(dt), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_s.to_numpy(), new_vx ** 2 + new_vy ** 2, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module", params=devices.backends())
def recordk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield _compile("recordk", request.param, tmp_path_factory.mktemp(f"recordk_{request.param}"))


def test_views_of_records_from_a_numpy_record_dtype(recordk: ModuleType) -> None:
    import oxide as ox

    n = 1234
    dtype = ox.struct_dtype(recordk.Particle)
    assert dtype.itemsize == 24 and dtype.fields["id"][1] == 8  # C's layout: the i64 aligned to 8
    particles = np.zeros(n, dtype)
    for name in ("x", "y", "vx", "vy"):
        particles[name] = values(n)
    particles["id"] = rng.integers(-2**40, 2**40, n)
    out = dev(np.frombuffer(np.full(n * dtype.itemsize, 0x5A, np.uint8).tobytes(), dtype))  # poisoned bytes
    ids = dev(np.full(n, -3, np.int64))
    dt = np.float32(0.01)
    recordk.step[(n + 127) // 128, 128](dev(particles), dt, out, ids)
    sync()
    got = out.to_numpy()
    f = {k: particles[k].astype(np.float64) for k in ("x", "y", "vx", "vy")}
    np.testing.assert_allclose(got["x"], f["x"] + f["vx"] * float(dt), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["y"], f["y"] + f["vy"] * float(dt), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["vx"], particles["vx"])
    np.testing.assert_allclose(got["vy"], f["vy"] - 9.81 * float(dt), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["id"], particles["id"])
    np.testing.assert_array_equal(ids.to_numpy(), particles["id"] * 2 + 1)


def test_a_record_dtype_of_another_layout_is_refused(recordk: ModuleType) -> None:
    same_layout = np.dtype([("x", "<f4"), ("y", "<f4"), ("id", "<i8"), ("vx", "<f4"), ("vy", "<f4")])
    unaligned = np.dtype([("x", "<f4"), ("id", "<i8"), ("y", "<f4"), ("vx", "<f4"), ("vy", "<f4")])
    for bad in (unaligned, np.dtype([("x", "<f4"), ("y", "<f4")])):
        with pytest.raises(TypeError, match=r"parameter 'particles' of step needs record\{x:f32@0,y:f32@4,id:i64@8"):
            recordk.step[1, 128](dev(np.zeros(8, bad)), np.float32(0.1), dev(np.zeros(8, same_layout)),
                                 dev(np.zeros(8, np.int64)))


def test_cache_hinted_loads_and_stores(viewk: ModuleType) -> None:
    """ox.cache.load / ox.cache.store (ld.global.cs, st.global.cs, ...): the same values as
    plain accesses, every element; an index past the end is the bounds error of x[i]."""
    n = 5 * BLOCK + 77
    x = values(n)
    y0 = values(n)
    h = values(n).astype(np.float16)
    y, hy, z = dev(y0), dev(np.full(n, 7, np.float16)), dev(values(n))
    viewk.hinted_axpy[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), dev(h), y, hy, z, n)
    sync()
    np.testing.assert_array_equal(y.to_numpy(), (2 * x.astype(np.float64) + y0).astype(np.float32))
    np.testing.assert_array_equal(hy.to_numpy(), h)
    np.testing.assert_array_equal(z.to_numpy(), x - np.float32(1.0))
    from oxide.errors import KernelError

    with pytest.raises(KernelError, match=rf"x\[i\] .*index {n} but length {n}"):
        viewk.hinted_axpy[(n + BLOCK) // BLOCK, BLOCK](dev(x), dev(h), y, hy, z, n + 1)
        sync()
