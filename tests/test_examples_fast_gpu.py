"""The fast kernels of examples/saxpy.py (``saxpy_fast``) and examples/softmax.py
(``softmax_rows4``) on the GPU (or the CPU device: tests/devices.py), against NumPy float64
references on fresh random inputs, outputs poisoned with NaN and every element checked, at
ragged sizes: n not a multiple of 4 or of a tile, rows of 1, 31, 4096 and 5000 floats, rows
longer than the registers hold."""
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

TILE_ELEMS = 4 * 4 * 256  # examples.saxpy: VECS vectors of 4 for each of BLOCK threads


def poisoned(n: int, dtype: type = np.float32):  # type: ignore[no-untyped-def]
    return devices.full(n, np.nan, dtype)


# ---- saxpy_fast ---------------------------------------------------------------------------------

SAXPY_SIZES = [1, 3, 4, 5, 4 * 1000 + 1, TILE_ELEMS, TILE_ELEMS + 4, 3 * TILE_ELEMS + 4 * 37 + 3,
               sized(2**24 + 4 * 12345 + 1, 5 * TILE_ELEMS + 2)]


@pytest.mark.parametrize("n", SAXPY_SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("grid", ["default", 1, 2])
def test_saxpy_fast(n: int, dtype: type, grid: object) -> None:
    """Every element, with the default grid (a few blocks per multiprocessor) and with grids of
    1 and 2 blocks, whose blocks take several tiles each (the grid-stride loop)."""
    from examples.saxpy import BLOCK, saxpy_fast, saxpy_fast_launch

    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    a = -1.7
    out = poisoned(n, dtype)
    if grid == "default":
        saxpy_fast_launch(a, dev(x), dev(y), out)
    else:
        saxpy_fast[grid, BLOCK](a, dev(x), dev(y), out)
    ref = a * x.astype(np.float64) + y.astype(np.float64)
    got = to_numpy(out)
    assert np.isfinite(got).all(), f"{int((~np.isfinite(got)).sum())} elements not written"
    np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6 if dtype == np.float32 else 1e-14)


def test_saxpy_fast_grid() -> None:
    from examples.saxpy import TILE, fast_grid

    assert fast_grid(1 << 28, sm_count=132) == (1 << 26) // TILE  # one block a tile
    assert fast_grid(1 << 28, sm_count=132, blocks_per_sm=4) == 132 * 4  # or a few a multiprocessor, walking them
    assert fast_grid(4 * TILE * 3, sm_count=132, blocks_per_sm=4) == 3
    assert fast_grid(4 * TILE * 3, sm_count=132) == 3  # no more blocks than tiles
    assert fast_grid(4 * TILE * 3 + 4, sm_count=132) == 4  # a last, partial tile
    assert fast_grid(4 * TILE * 3 + 3, sm_count=132) == 3  # the last n % 4 elements need no tile
    assert fast_grid(1, sm_count=132) == 1 and fast_grid(0, sm_count=132) == 1


def test_saxpy_fast_preconditions() -> None:
    """The launch preconditions that prove the indices: refused before the launch, out untouched."""
    import oxide
    from examples.saxpy import BLOCK, saxpy_fast

    n = 1000
    x, y = dev(rng.standard_normal(n).astype(np.float32)), dev(rng.standard_normal(n).astype(np.float32))
    out = poisoned(n)
    with pytest.raises(oxide.KernelError, match=r"saxpy_fast .*saxpy\.py:\d+:\d+: block\.dim\.x == BLOCK"):
        saxpy_fast[1, 128](1.0, x, y, out)
    with pytest.raises(oxide.KernelError, match=r"saxpy_fast .*len\(x\) == len\(out\)"):
        saxpy_fast[1, BLOCK](1.0, dev(np.zeros(n - 1, np.float32)), y, out)
    assert np.isnan(to_numpy(out)).all()


# ---- softmax_rows4 ------------------------------------------------------------------------------

def softmax_ref(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_softmax(got: np.ndarray, x: np.ndarray) -> None:
    assert np.isfinite(got).all(), f"{int((~np.isfinite(got)).sum())} elements not written"
    np.testing.assert_allclose(got.reshape(x.shape), softmax_ref(x), rtol=1e-5, atol=1e-30)


# rows of 1, 3 and 31 floats (softmax_rows), of 4, 128 and 1000 (short rows: small blocks),
# 4096 (4 vectors a thread), 5000 (a ragged last vector of each thread), 8192 (8 vectors a
# thread, the most), 8196 and 12000 (too long for the registers: the looped path)
SOFTMAX_COLS = [1, 3, 4, 31, 128, 1000, 4096, 5000, 8192, 8196, sized(12000, 8196)]


@pytest.mark.parametrize("ncols", SOFTMAX_COLS)
def test_softmax_fast(ncols: int) -> None:
    """The host function ``softmax``: the fast kernel for rows of a multiple of 4 floats, the
    scalar one for others; every element against float64."""
    from examples.softmax import softmax

    rows = 5
    x = (rng.standard_normal((rows, ncols)) * 4).astype(np.float32)
    out = poisoned(rows * ncols)
    softmax(dev(x.ravel()), ncols, out)
    check_softmax(to_numpy(out), x)


@pytest.mark.parametrize("vpt", [1, 2, 4, 8])
@pytest.mark.parametrize("threads", [32, 256])
@pytest.mark.parametrize("ncols", [4, 1000, 4096, 5000])
def test_softmax_rows4_every_instance(vpt: int, threads: int, ncols: int) -> None:
    """Each VPT instance at each block size, on rows that fit its registers and rows that take
    its looped path (ncols > 4 * vpt * threads)."""
    from examples.softmax import softmax_rows4

    rows = 3
    x = (rng.standard_normal((rows, ncols)) * 4).astype(np.float32)
    out = poisoned(rows * ncols)
    softmax_rows4[rows, threads](dev(x.reshape(-1, 4)), ncols // 4, out.reshape(-1, 4), vpt)
    check_softmax(to_numpy(out), x)


def test_softmax_extreme_rows() -> None:
    """Large magnitudes (exp of the raw values would overflow), equal values, one huge value."""
    from examples.softmax import softmax

    ncols = 4096
    x = np.stack([rng.standard_normal(ncols) * 30 + 500, np.full(ncols, -7.5),
                  np.where(np.arange(ncols) == 17, 80.0, 0.0)]).astype(np.float32)
    out = poisoned(x.size)
    softmax(dev(x.ravel()), ncols, out)
    got = to_numpy(out).reshape(x.shape)
    assert np.isfinite(got).all()
    ref = softmax_ref(x)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-37)


def test_softmax_launch_choice() -> None:
    from examples.softmax import fast_launch

    assert fast_launch(4096) == (256, 4)  # 16 floats a thread
    assert fast_launch(8192) == (256, 8)
    assert fast_launch(5000) == (256, 8)  # 1250 vectors: 5 a thread, rounded up to 8
    assert fast_launch(4) == (32, 1) and fast_launch(128) == (32, 1) and fast_launch(256) == (64, 1)
    assert fast_launch(1 << 20) == (256, 8)  # the looped path


def test_softmax_misaligned_and_bad_shapes() -> None:
    """A row start that is not 16-byte aligned goes to the scalar kernel (right answer);
    a length that is not rows * ncols is refused."""
    from examples.softmax import softmax

    if not devices.on_cpu():
        pytest.skip("NumPy views select the misaligned case only on the CPU device")
    ncols, rows = 64, 4
    x = (rng.standard_normal(rows * ncols + 1) * 4).astype(np.float32)
    buf = np.full(rows * ncols + 1, np.nan, np.float32)
    softmax(x[1:], ncols, buf[1:])
    check_softmax(buf[1:], x[1:].reshape(rows, ncols))
    with pytest.raises(ValueError, match="rows \\* ncols"):
        softmax(x, ncols, buf)
