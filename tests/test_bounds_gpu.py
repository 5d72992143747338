"""Kernels with proven bounds on the GPU: results against NumPy, and the entry checks that keep the
proofs honest (a grid too large for i32 index arithmetic, a range loop that would wrap)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "langkernels"))
rng = np.random.default_rng()


dev = devices.array


def test_grid_limit_assumed_by_i32_indices() -> None:
    import oxide
    import proofs

    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    out = devices.full((n,), np.nan)
    proofs.scale_wide[(n + proofs.WIDTH - 1) // proofs.WIDTH, 1024](dev(x), n, out)
    np.testing.assert_array_equal(to_numpy(out), 2.0 * x)
    # more blocks than the i32 arithmetic allows: refused at the launch, the kernel never runs
    small = dev(x[:10])
    with pytest.raises(oxide.KernelError, match=r"assertion failed in kernel scale_wide at .*proofs\.py:\d+:\d+: "
                       r"grid\.x <= 262144: the i32 index arithmetic here assumes it .*\(checked at launch"):
        proofs.scale_wide[262_145, 32](small, 10, devices.zeros(10))
    # a length precondition, likewise
    with pytest.raises(oxide.KernelError, match=r"scale_wide at .*proofs\.py:\d+:\d+: len\(x\) == n and len\(out\) == n"):
        proofs.scale_wide[1, 32](small, 11, devices.zeros(11))
    oxide.runtime.check_kernel_errors()  # nothing was left behind on the device
    devices.fill(out, np.nan)  # the process is still usable
    proofs.scale_wide[(n + proofs.WIDTH - 1) // proofs.WIDTH, 1024](dev(x), n, out)
    np.testing.assert_array_equal(to_numpy(out), 2.0 * x)


def test_range_loop_that_would_wrap_is_stopped() -> None:
    import oxide
    import proofs

    n = 5003
    x = rng.standard_normal(n).astype(np.float32)
    out = devices.full((256,), np.nan)
    proofs.strided_sum[1, 256](dev(x), n, out)
    ref = np.array([x[t::256].astype(np.float64).sum() for t in range(256)])
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(oxide.KernelError, match=r"stop \+ step must not exceed 2147483648"):
        proofs.strided_sum[1, 256](dev(x), 2**31 - 1, out)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()


@pytest.mark.parametrize("shape", [(1, 1), (3, 517), (257, 129), (1000, 999)])
def test_gather_stencil(shape: tuple[int, int]) -> None:
    import proofs

    rows, cols = shape
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-x.size, 2 * x.size, shape).astype(np.int32)  # a third out of range
    out = devices.full((x.size,), np.nan)
    proofs.gather_stencil[((cols + 31) // 32, (rows + 7) // 8), (32, 8)](dev(x.ravel()), dev(idx.ravel()), rows, cols, out)
    v = x.astype(np.float64)
    ref = v.copy()
    ref[1:-1, 1:-1] += 0.25 * (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])
    flat = idx.ravel()
    inside = (flat >= 0) & (flat < x.size)
    ref.ravel()[inside] += v.ravel()[flat[inside]]
    np.testing.assert_allclose(to_numpy(out), ref.ravel(), rtol=1e-5, atol=1e-5)


def _watch_launches(monkeypatch: pytest.MonkeyPatch, *kernels: object) -> list[str]:
    """The symbols of the entry points launched from now on. A choice's first launch in a process
    goes through the Python path, which is watched; ``kernels`` start afresh for the test (no
    launch configuration, no C plan), whatever an earlier test in this process launched."""
    from oxide.runtime import launcher
    from oxide.runtime.kernel import Kernel

    for k in kernels:
        monkeypatch.setattr(k, "_configs", {})
        monkeypatch.setattr(k, "_plan", launcher.new_plan())
        monkeypatch.setattr(k, "_planned", False)
        monkeypatch.setattr(k, "_dispatch", None)
    launched: list[str] = []
    real = Kernel._launch_in_context

    def watched(self, args, variant, *rest, **kw):  # type: ignore[no-untyped-def]
        launched.append(variant.spec.symbol)
        return real(self, args, variant, *rest, **kw)

    monkeypatch.setattr(Kernel, "_launch_in_context", watched)
    return launched


def test_launch_versioned_kernel_runs_unchecked_and_still_reports() -> None:
    """The copy proven under len(...) >= n gives the results; a short view takes the checked copy,
    which reports the first failing access as before."""
    import oxide
    import versioned

    n = 1_000_003
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = devices.full((n,), np.nan)
    versioned.guarded_axpy[(n + 255) // 256, 256](np.float32(1.5), dev(x), dev(y), out, n)
    np.testing.assert_allclose(to_numpy(out), np.float32(1.5) * x + y, rtol=1e-6, atol=1e-6)
    short = dev(y[: n - 7])
    with pytest.raises(oxide.KernelError, match=rf"bounds check failed in kernel guarded_axpy at .*versioned\.py:\d+:\d+: "
                       rf"y\[i\] with index \d+ but length {n - 7}$"):
        versioned.guarded_axpy[(n + 255) // 256, 256](np.float32(1.5), dev(x), short, out, n)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    devices.fill(out, np.nan)  # the process is still usable
    versioned.guarded_axpy[(n + 255) // 256, 256](np.float32(1.5), dev(x), dev(y), out, n)
    np.testing.assert_allclose(to_numpy(out), np.float32(1.5) * x + y, rtol=1e-6, atol=1e-6)


def test_launch_versioned_kernel_is_two_entry_points_the_launch_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch-instances pass splits a launch-versioned kernel: the runtime evaluates the test
    (len(x), len(y), len(out) >= n; a block of at most 16 x 16) over the packed arguments and
    launches the fast instance where it holds, the kernel as written (its checked copy) elsewhere.
    Each choice's first launch in a process goes through the Python path, which is watched here."""
    import oxide
    import versioned

    launched = _watch_launches(monkeypatch, versioned.guarded_axpy, versioned.tile_transpose)
    n = 4099
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = devices.full((n,), np.nan)
    versioned.guarded_axpy[(n + 255) // 256, 256](np.float32(0.5), dev(x), dev(y), out, n)
    np.testing.assert_allclose(to_numpy(out), np.float32(0.5) * x + y, rtol=1e-6, atol=1e-6)
    assert launched and launched[-1].startswith("guarded_axpy__fast"), launched
    with pytest.raises(oxide.KernelError, match=r"y\[i\] with index \d+ but length 4000$"):
        versioned.guarded_axpy[(n + 255) // 256, 256](np.float32(0.5), dev(x), dev(y[:4000]), out, n)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    assert not launched[-1].startswith("guarded_axpy__fast"), launched
    # a block shape the tile proofs do not cover: the kernel as written
    m = 32
    a = rng.standard_normal((m, m)).astype(np.float32)
    t = devices.full((m * m,), np.nan)
    versioned.tile_transpose[(2, 2), (16, 16)](dev(a.ravel()), t, m)
    np.testing.assert_array_equal(to_numpy(t), a.T.ravel())
    assert launched[-1].startswith("tile_transpose__fast"), launched
    with pytest.raises(oxide.KernelError, match=r"tile_transpose .*axis [01] index tx \(size 16\)"):
        versioned.tile_transpose[(2, 2), (32, 16)](dev(a.ravel()), t, m)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    assert not launched[-1].startswith("tile_transpose__fast"), launched


def test_argument_index_is_tested_at_the_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """``src[t]`` with t an argument: the fast instance runs where 0 <= t < len(src) holds (the
    launcher's test), the checked copy reports t out of range either way; the stencil's taps are
    exact in i32 under the guards (the row above, in the ``else`` of ``i == 0``)."""
    import oxide
    import versioned

    launched = _watch_launches(monkeypatch, versioned.fdtd_source_row)
    n = versioned.FDTD_N
    src = rng.standard_normal(9).astype(np.float32)
    e0 = rng.standard_normal(n * n).astype(np.float32)
    h = rng.standard_normal(n * n).astype(np.float32)
    for t in (0, 4, 8):
        e = dev(e0)
        versioned.fdtd_source_row[(2, 8), (32, 8)](dev(src), e, dev(h), t)
        ref = e0.reshape(n, n).astype(np.float64)
        hh = h.reshape(n, n).astype(np.float64)
        ref[1:] = ref[1:] - 0.5 * (hh[1:] - hh[:-1])
        ref[0] = src[t]
        np.testing.assert_allclose(to_numpy(e).reshape(n, n), ref, rtol=1e-6, atol=1e-6)
        assert launched[-1].startswith("fdtd_source_row__fast"), launched
    for t in (9, -1):
        with pytest.raises(oxide.KernelError, match=rf"src\[t\] with index {t} but length 9$"):
            versioned.fdtd_source_row[(2, 8), (32, 8)](dev(src), dev(e0), dev(h), t)
            devices.synchronize()
            oxide.runtime.check_kernel_errors()
        assert not launched[-1].startswith("fdtd_source_row__fast"), launched


def test_block_shape_versioned_kernel_runs_unchecked_and_still_reports() -> None:
    """A 16 x 16 shared tile indexed by thread.idx: a launch with blocks of at most 16 x 16 runs the
    copy whose tile checks are proven (results exact); a larger block takes the checked copy, which
    reports the tile access a thread past the tile makes."""
    import oxide
    import versioned

    n = 50  # not a multiple of the tile: the edge blocks' guards matter
    x = rng.standard_normal((n, n)).astype(np.float32)
    out = devices.full((n * n,), np.nan)
    tiles = (n + versioned.TILE - 1) // versioned.TILE
    versioned.tile_transpose[(tiles, tiles), (versioned.TILE, versioned.TILE)](dev(x.ravel()), out, n)
    np.testing.assert_array_equal(to_numpy(out), x.T.ravel())
    # the tile's load (tile[ty, tx], axis 1) or its read (tile[tx, ty], axis 0): whichever thread's
    # failure the GPU records first (threads past the matrix skip the load but not every read)
    with pytest.raises(oxide.KernelError, match=r"bounds check failed in kernel tile_transpose at .*versioned\.py:\d+:\d+: "
                       r"axis [01] index tx \(size 16\) with index (1[6-9]|2\d|3[01]) but length 16$"):
        versioned.tile_transpose[(tiles, tiles), (2 * versioned.TILE, versioned.TILE)](dev(x.ravel()), out, n)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    devices.fill(out, np.nan)  # the process is still usable
    versioned.tile_transpose[(tiles, tiles), (versioned.TILE, versioned.TILE)](dev(x.ravel()), out, n)
    np.testing.assert_array_equal(to_numpy(out), x.T.ravel())


def test_run_versioned_kernel_runs_unchecked_and_still_reports() -> None:
    """A straight-line run of loads tested once (passes/run_versioning.py): in range, the copy
    without the checks gives the results; a short view takes the run as written, which reports
    the first access that fails, at its own line, with its index and length."""
    import oxide
    import versioned

    pitch, blocks = 256, 4
    x = rng.standard_normal(4 * pitch).astype(np.float32)
    out = devices.full((blocks * 64,), np.nan)
    versioned.column_taps[blocks, 64](dev(x), out, pitch, 4)
    col = np.arange(blocks * 64)
    np.testing.assert_allclose(to_numpy(out), x[col] + x[col + pitch] + x[col + 2 * pitch] + x[col + 3 * pitch],
                               rtol=1e-6, atol=1e-6)
    versioned.column_taps[blocks, 64](dev(x), out, pitch, 2)  # the third load skipped
    np.testing.assert_allclose(to_numpy(out), x[col] + x[col + pitch] + x[col + 3 * pitch], rtol=1e-6, atol=1e-6)
    # the fourth row is short: threads past its end fail there (the first three rows are in range)
    lines = Path(versioned.__file__).read_text().splitlines()
    line_of = {text: lines.index(f"    {text}") + 1 for text in ("b = src[col + pitch]", "d = src[col + 3 * pitch]")}
    short = dev(x[: 3 * pitch + 100])
    with pytest.raises(oxide.KernelError, match=rf"bounds check failed in kernel column_taps at .*versioned\.py:"
                       rf"{line_of['d = src[col + 3 * pitch]']}:\d+: src\[col \+ 3 \* pitch\] with index \d+ but length "
                       rf"{3 * pitch + 100}$"):
        versioned.column_taps[blocks, 64](short, out, pitch, 4)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    # no second row: every thread's first failing access is that one
    shorter = dev(x[:pitch])
    with pytest.raises(oxide.KernelError, match=rf"bounds check failed in kernel column_taps at .*versioned\.py:"
                       rf"{line_of['b = src[col + pitch]']}:\d+: src\[col \+ pitch\] with index \d+ but length {pitch}$"):
        versioned.column_taps[1, 64](shorter, out, pitch, 4)
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    devices.fill(out, np.nan)  # the process is still usable
    versioned.column_taps[blocks, 64](dev(x), out, pitch, 4)
    np.testing.assert_allclose(to_numpy(out), x[col] + x[col + pitch] + x[col + 2 * pitch] + x[col + 3 * pitch],
                               rtol=1e-6, atol=1e-6)
