"""The examples on the GPU (or the CPU device: tests/devices.py), against NumPy float64
references, at sizes that are not multiples of the block size; outputs are poisoned before each
launch and every element is checked."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import sized, to_numpy

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

rng = np.random.default_rng()
dev = devices.array


def poisoned(n: int | tuple[int, ...], dtype=np.float32):  # type: ignore[no-untyped-def]
    return devices.full(n, np.nan, dtype)


@pytest.mark.parametrize("n", [1, 1000, sized(2**24 + 3, 2**18 + 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("checked", [True, False])
def test_saxpy(n: int, dtype: type, checked: bool) -> None:
    from examples.saxpy import saxpy, saxpy_unchecked

    k = saxpy if checked else saxpy_unchecked
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    a = 1.7
    out = poisoned(n, dtype)
    k[k.grid_for(n, 256), 256](a, dev(x), dev(y), out)
    ref = a * x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)


class _CudaArrayInterface:
    """What the runtime sees of a CuPy array: ``__cuda_array_interface__`` (GPU memory)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                                         "strides": None, "version": 3}


@pytest.mark.parametrize("n", [1, 1000, sized(2**24 + 3, 2**16 + 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saxpy_with_cupy_arrays(n: int, dtype: type) -> None:
    """CuPy arrays on the GPU; on the CPU device, which reads host memory, an array of
    ``__cuda_array_interface__`` (CuPy's) is refused naming the parameter and saying what to pass,
    and the same data as NumPy arrays runs."""
    from examples.saxpy import saxpy

    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    ref = -0.5 * x.astype(np.float64) + y.astype(np.float64)
    if devices.on_cpu():
        out = poisoned(n, dtype)
        with pytest.raises(TypeError, match=r"parameter 'x' of saxpy is a .*\(__cuda_array_interface__\) \(GPU memory\), "
                                            r"but kernels run on the CPU device .*: pass a NumPy array"):
            saxpy[saxpy.grid_for(n, 256), 256](dtype(-0.5), _CudaArrayInterface(x), dev(y), out)
        assert np.isnan(to_numpy(out)).all()  # nothing ran
        saxpy[saxpy.grid_for(n, 256), 256](dtype(-0.5), dev(x), dev(y), out)
        np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)
        return
    cupy = pytest.importorskip("cupy")
    out = cupy.full(n, np.nan, dtype=dtype)
    saxpy[saxpy.grid_for(n, 256), 256](dtype(-0.5), cupy.asarray(x), cupy.asarray(y), out)
    np.testing.assert_allclose(cupy.asnumpy(out), ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)


@pytest.mark.parametrize("n", [1, 1000, 12345, sized(2**22 + 7, 2**17 + 7)])
def test_block_sum(n: int) -> None:
    from examples.reduce import block_sum

    x = rng.random(n).astype(np.float32)
    out = devices.zeros(1)
    blocks = min((n + 255) // 256, 132 * 8)
    block_sum[blocks, 256](dev(x), out)
    ref = x.astype(np.float64).sum()
    assert abs(float(to_numpy(out)[0]) - ref) <= 1e-5 * max(ref, 1.0) + 1e-5


@pytest.mark.parametrize("n", [1, 1000, 1025, sized(3 * 1024 * 1024 + 11, 3 * 65536 + 11)])
def test_inclusive_scan(n: int) -> None:
    from examples.scan import inclusive_scan

    x = rng.random(n).astype(np.float32)
    out = poisoned(n)
    inclusive_scan(dev(x), out, lambda m: poisoned(m))
    ref = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-4, atol=1e-4)


LOOKBACK_TILES = (4096, 8192)  # examples/scan.py's tile builds, checked below
LOOKBACK_BUILDS = [(tile, vecs) for tile in LOOKBACK_TILES for vecs in (4, 8, 16)]


def _stale_words(m: int) -> object:
    """Status words as other calls leave them: the counter zero, then words tagged with epochs
    4 .. 7 (the test's calls have 1 .. 3), both flags, and a huge value: a scan that took one
    for its own would be far off."""
    words = np.zeros(m, np.int64)
    k = np.arange(1, m)
    tags = (4 + k % 4) * 4 + 1 + k % 2
    words[1:] = (tags << 32) | np.int64(np.float32(1e9).view(np.uint32))
    return dev(words)


@pytest.mark.parametrize("n", [1, 255, 4096, 4097, 8192, 8193, 37 * 8192 + 1029,
                               sized(2**20 + 3, 5 * 8192 + 3), sized(2**24 + 5, 3 * 8192 - 1)])
@pytest.mark.parametrize("build", LOOKBACK_BUILDS, ids=[f"{t}x{v}" for t, v in LOOKBACK_BUILDS])
def test_inclusive_scan_lookback(n: int, build: tuple[int, int]) -> None:
    """The single-pass decoupled look-back scan, each build (tiles of 4096 or 8192 floats, 4, 8
    or 16 f32x4 a thread): fresh inputs (a different sum each run), poisoned output past the end
    too, the same tolerance as the two-pass scan's test. There is no init launch: the status words
    start as other calls' words (_stale_words), and three calls share them, each reading the words
    the one before left (its epoch's flags, the counter it reset) as stale; the last is on a
    smaller input, over the first words only."""
    from examples import scan

    tile, vecs = build
    assert scan.LB_TILE in LOOKBACK_TILES and scan.EPOCH_LIMIT > 8
    state = scan.LookbackState(_stale_words)
    for size in (n, n, max(n // 3, 1)):
        x = rng.random(size).astype(np.float32)
        out = poisoned(size + 5)
        scan.inclusive_scan_lookback(dev(x), out, state, tile, vecs)
        got = to_numpy(out)
        ref = np.cumsum(x.astype(np.float64))
        np.testing.assert_allclose(got[:size], ref, rtol=1e-4, atol=1e-4)
        assert np.isnan(got[size:]).all(), "wrote past the end"
        assert int(to_numpy(state.status)[0]) == 0, "the tile counter was not reset for the next call"
    assert state.allocations == 1 and state.epoch == 3


def test_lookback_state_grows_and_starts_again_before_the_epoch_wraps() -> None:
    """LookbackState: new zeroed words for a call with more tiles, and when the epochs run out
    (the last epoch, EPOCH_LIMIT - 1, is used; the next call starts again at 1 on fresh words),
    and the scan is right each time."""
    from examples import scan

    made: list[int] = []

    def zeros(m: int) -> object:
        made.append(m)
        return devices.zeros(m, np.int64)

    state = scan.LookbackState(zeros)
    for size, epoch in ((3 * 8192, 1), (5 * 8192 + 1, 2), (8192, 3)):
        x = rng.random(size).astype(np.float32)
        out = poisoned(size)
        scan.inclusive_scan_lookback(dev(x), out, state)
        np.testing.assert_allclose(to_numpy(out), np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-4)
        assert state.epoch == epoch
    assert made == [4, 7]
    state.epoch = scan.EPOCH_LIMIT - 2
    for epoch in (scan.EPOCH_LIMIT - 1, 1):
        x = rng.random(2 * 8192 + 7).astype(np.float32)
        out = poisoned(len(x))
        scan.inclusive_scan_lookback(dev(x), out, state)
        np.testing.assert_allclose(to_numpy(out), np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-4)
        assert state.epoch == epoch
    assert made == [4, 7, 4]


def test_lookback_scan_refuses_an_unzeroed_counter_bad_epochs_and_misaligned_arrays() -> None:
    """A tile counter a failed scan left set is a KernelError naming it, not a wrong result; so is
    an epoch out of range. On the GPU a device-side assertion is reported at the next
    synchronisation, so each is synchronised inside its raises block, and nothing is left pending
    for the next test. An array that does not start 16-byte aligned is refused before any launch;
    an unbuilt tile or vecs likewise."""
    import oxide
    from examples import scan

    n = 3 * 8192
    x = dev(rng.random(n).astype(np.float32))
    out = poisoned(n)
    threads = scan.lookback_threads(8192, 8)
    status = devices.array(np.array([3, 0, 0, 0], np.int64))  # the counter as far as 3 tiles take it
    with pytest.raises(oxide.KernelError, match=r"the tile counter \(status\[0\]\) was not zero at the launch"):
        scan.scan_lookback[3, threads](x, out, status, 1, 2048, 8)
        devices.synchronize()
    for epoch in (0, scan.EPOCH_LIMIT):
        with pytest.raises(oxide.KernelError, match=r"the epoch is 1 \.\. EPOCH_LIMIT - 1"):
            scan.scan_lookback[3, threads](x, out, devices.zeros(4, np.int64), epoch, 2048, 8)
            devices.synchronize()
    oxide.runtime.check_kernel_errors()  # nothing left behind on the device
    state = scan.LookbackState(lambda m: devices.zeros(m, np.int64))
    shifted = dev(rng.random(n + 1).astype(np.float32))[1:]  # one float in: 4 bytes past an aligned start
    with pytest.raises(ValueError, match=r"x starts at 0x[0-9a-f]+, not 16-byte aligned"):
        scan.inclusive_scan_lookback(shifted, out, state)
    with pytest.raises(ValueError, match=r"tile=2048, vecs=8: the builds are tile 4096 or 8192"):
        scan.inclusive_scan_lookback(x, out, state, 2048, 8)
    assert state.status is None  # nothing was launched
    host = rng.random(n).astype(np.float32)  # the process is still usable
    scan.inclusive_scan_lookback(dev(host), out, state)
    np.testing.assert_allclose(to_numpy(out), np.cumsum(host.astype(np.float64)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 1000, sized(10**6 + 3, 10**5 + 3)])
def test_histogram(n: int) -> None:
    from examples.histogram import histogram

    data = rng.integers(0, 256, n, dtype=np.uint8)
    torch = devices.torch_or_none()
    as_torch = torch is not None and not devices.on_cpu()
    if as_torch and not hasattr(torch, "uint32"):
        pytest.skip("torch has no uint32")
    hist = (torch.zeros(256, dtype=torch.int32, device="cuda").view(torch.uint32) if as_torch
            else devices.zeros(256, np.uint32))
    histogram[min((n + 255) // 256, 512), 256](dev(data), hist)
    ref = np.bincount(data, minlength=256)
    got = to_numpy(hist.view(torch.int32) if as_torch else hist)
    np.testing.assert_array_equal(got.astype(np.int64), ref)


@pytest.mark.parametrize("shape", [(1, 1), (33, 65), (1000, 777)])
def test_transpose(shape: tuple[int, int]) -> None:
    from examples.transpose import transpose

    rows, cols = shape
    x = rng.standard_normal(shape).astype(np.float32)
    out = poisoned(rows * cols)
    transpose[((cols + 31) // 32, (rows + 31) // 32), (32, 8)](dev(x.ravel()), rows, cols, out)
    np.testing.assert_array_equal(to_numpy(out).reshape(cols, rows), x.T)


@pytest.mark.parametrize("shape", [(1, 1), (7, 1000), (300, 4097)])
def test_softmax(shape: tuple[int, int]) -> None:
    from examples.softmax import softmax_rows

    rows, cols = shape
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    out = poisoned(rows * cols)
    softmax_rows[rows, 256](dev(x.ravel()), cols, out)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(to_numpy(out).reshape(shape), ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (513, 1031)])
def test_stencil(shape: tuple[int, int]) -> None:
    from examples.stencil import stencil5

    rows, cols = shape
    x = rng.standard_normal(shape).astype(np.float32)
    out = poisoned(rows * cols)
    stencil5[((cols + 31) // 32, (rows + 7) // 8), (32, 8)](dev(x.ravel()), rows, cols, out)
    x64 = x.astype(np.float64)
    ref = x64.copy()
    ref[1:-1, 1:-1] = 0.25 * (x64[:-2, 1:-1] + x64[2:, 1:-1] + x64[1:-1, :-2] + x64[1:-1, 2:])
    np.testing.assert_allclose(to_numpy(out).reshape(shape), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mnk", [(1, 1, 1), (33, 65, 17), sized((511, 257, 1000), (130, 97, 200))])
def test_sgemm(mnk: tuple[int, int, int]) -> None:
    from examples.sgemm import sgemm

    m, n, k = mnk
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = poisoned(m * n)
    sgemm[((n + 31) // 32, (m + 31) // 32), (32, 32)](dev(a.ravel()), dev(b.ravel()), m, n, k, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(to_numpy(c).reshape(m, n), ref, rtol=1e-4, atol=1e-4 * np.sqrt(k))
