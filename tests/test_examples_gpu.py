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


LOOKBACK_TILE = 4096  # examples/scan.py TILE, checked below


@pytest.mark.parametrize("n", [1, 255, LOOKBACK_TILE, LOOKBACK_TILE + 1, 37 * LOOKBACK_TILE + 1029,
                               sized(2**20 + 3, 5 * LOOKBACK_TILE + 3), sized(2**24 + 5, 3 * LOOKBACK_TILE - 1)])
@pytest.mark.parametrize("vecs", [2, 4, 8])
def test_inclusive_scan_lookback(n: int, vecs: int) -> None:
    """The single-pass decoupled look-back scan: fresh inputs (a different sum each run),
    poisoned output past the end too, poisoned tile words (the scan's init kernel zeroes
    them); the same tolerance as the two-pass scan's test. The second run gets the status words
    the first left (flags set, the counter at the tile count): each call starts afresh. Each
    build of the kernel: 512 threads of 2 f32x4, 256 of 4, 128 of 8."""
    from examples import scan

    assert scan.TILE == LOOKBACK_TILE
    words: dict[int, object] = {}
    for _ in range(2):
        x = rng.random(n).astype(np.float32)
        out = poisoned(n + 5)
        scan.inclusive_scan_lookback(dev(x), out, lambda m: words.setdefault(m, devices.full(m, -7, np.int64)), vecs)
        got = to_numpy(out)
        ref = np.cumsum(x.astype(np.float64))
        np.testing.assert_allclose(got[:n], ref, rtol=1e-4, atol=1e-4)
        assert np.isnan(got[n:]).all(), "wrote past the end"


def test_lookback_scan_refuses_an_unzeroed_counter_and_misaligned_arrays() -> None:
    """A tile counter left from an earlier scan (not zeroed) is a KernelError naming it, not a
    wrong result; an array that does not start 16-byte aligned is refused before any launch."""
    import oxide
    from examples import scan

    n = 3 * LOOKBACK_TILE
    x = dev(rng.random(n).astype(np.float32))
    out = poisoned(n)
    status = devices.array(np.array([0, 0, 0, 3], np.int64))  # the counter where a scan left it
    with pytest.raises(oxide.KernelError, match="the tile counter .* was not zeroed"):
        scan.scan_lookback[3, scan.lookback_threads(4)](x, out, status, 4)
    shifted = dev(rng.random(n + 1).astype(np.float32))[1:]  # one float in: 4 bytes past an aligned start
    with pytest.raises(ValueError, match=r"x starts at 0x[0-9a-f]+, not 16-byte aligned"):
        scan.inclusive_scan_lookback(shifted, out, lambda m: devices.zeros(m, np.int64))


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
