"""The ports of public CUDA kernels (tests/packages/ports) on the GPU, against NumPy in
float64: fresh random inputs, outputs poisoned before the run, every element checked."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "ports"))
rng = np.random.default_rng()


def port(name: str) -> ModuleType:
    return importlib.import_module(f"port_{name}")


def dev(a: np.ndarray) -> "torch.Tensor":
    return torch.as_tensor(np.ascontiguousarray(a), device="cuda")


def poisoned(shape: tuple[int, ...] | int, dtype: "torch.dtype" = torch.float32) -> "torch.Tensor":
    if dtype.is_floating_point:
        return torch.full(shape if isinstance(shape, tuple) else (shape,), float("nan"), dtype=dtype, device="cuda")
    value = 0x5A if dtype in (torch.uint8, torch.int8) else 0x5A5A
    return torch.full(shape if isinstance(shape, tuple) else (shape,), value, dtype=dtype, device="cuda")


def test_bitonic_sort_shared() -> None:
    m = port("bitonic_sort")
    blocks = 7
    keys = rng.integers(0, 2**32, (blocks, 1024), dtype=np.uint64).astype(np.uint32)
    for direction in (1, 0):
        out = poisoned(blocks * 1024, torch.uint32)
        m.bitonic_sort_shared[blocks, 512](out, dev(keys.ravel()), np.uint32(1024), np.uint32(direction))
        ref = np.sort(keys, axis=1)
        if not direction:
            ref = ref[:, ::-1]
        np.testing.assert_array_equal(out.cpu().numpy().reshape(blocks, 1024), ref)


@pytest.mark.parametrize("block_size", [128, 256])
def test_reduction_reduce4(block_size: int) -> None:
    m = port("reduction")
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    blocks = (n + 2 * block_size - 1) // (2 * block_size)
    out = poisoned(blocks)
    m.reduce4[blocks, block_size](dev(x), out, n, block_size)
    ref = np.pad(x.astype(np.float64), (0, blocks * 2 * block_size - n)).reshape(blocks, 2 * block_size).sum(1)
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)


def test_black_scholes() -> None:
    m = port("black_scholes")
    n = 40_009
    price = rng.uniform(5.0, 30.0, n).astype(np.float32)
    strike = rng.uniform(1.0, 100.0, n).astype(np.float32)
    years = rng.uniform(0.25, 10.0, n).astype(np.float32)
    r, v = 0.02, 0.30
    call, put = poisoned(n), poisoned(n)
    m.black_scholes[(n + 127) // 128, 128](call, put, dev(price), dev(strike), dev(years), r, v)
    from scipy.special import ndtr  # type: ignore[import-untyped]

    s, x, t = price.astype(np.float64), strike.astype(np.float64), years.astype(np.float64)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    ref_call = s * ndtr(d1) - x * np.exp(-r * t) * ndtr(d2)
    ref_put = x * np.exp(-r * t) * ndtr(-d2) - s * ndtr(-d1)
    # the polynomial approximation of the normal CDF is good to ~7.5e-8 (Abramowitz-Stegun 26.2.17)
    np.testing.assert_allclose(call.cpu().numpy(), ref_call, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(put.cpu().numpy(), ref_put, rtol=1e-4, atol=2e-4)


def test_fast_matmul() -> None:
    m = port("fast_matmul")
    n = 16 * 13  # the port, like its original, needs a square grid covering both operands
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = poisoned((n, n))
    m.fast_matmul[(13, 13), (16, 16)](dev(a), dev(b), c)
    np.testing.assert_allclose(c.cpu().numpy(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)


def test_transpose_no_bank_conflicts() -> None:
    m = port("transpose_coalesced")
    h, w = 32 * 9, 32 * 5
    x = rng.standard_normal((h, w)).astype(np.float32)
    out = poisoned(h * w)
    m.transpose_no_bank_conflicts[(w // 32, h // 32), (32, 8)](out, dev(x.ravel()), w, h)
    np.testing.assert_array_equal(out.cpu().numpy().reshape(w, h), x.T)


def test_spmv_csr_vector() -> None:
    m = port("spmv_csr_vector")
    rows, cols = 3001, 2003
    counts = rng.integers(0, 90, rows)
    ap = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    aj = np.concatenate([rng.choice(cols, c, replace=False) for c in counts]).astype(np.int32)
    ax = rng.standard_normal(len(aj)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    y = poisoned(rows)
    m.spmv_csr_vector[120, 256](rows, dev(ap), dev(aj), dev(ax), dev(x), y)
    dense = np.zeros((rows, cols))
    dense[np.repeat(np.arange(rows), counts), aj] = ax
    np.testing.assert_allclose(y.cpu().numpy(), dense @ x.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_softmax_rows() -> None:
    m = port("softmax_rows")
    x = (rng.standard_normal((37, 1999)) * 4).astype(np.float32)
    out = poisoned(x.shape)
    m.softmax[37, 256](dev(x), out)
    v = x.astype(np.float64)
    e = np.exp(v - v.max(1, keepdims=True))
    np.testing.assert_allclose(out.cpu().numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_mandelbrot() -> None:
    m = port("mandelbrot")
    h, w, iters = 200, 301, 20
    image = poisoned((h, w), torch.uint8)
    m.mandel_kernel[((w + 15) // 16, (h + 15) // 16), (16, 16)](-2.0, 1.0, -1.0, 1.0, image, iters)
    # reference in float32, as the kernel computes, step by step
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    c_re = np.float32(-2.0) + xs * np.float32(3.0 / w)
    c_im = np.float32(-1.0) + ys * np.float32(2.0 / h)
    got = image.cpu().numpy()
    z_re = np.zeros_like(c_re)
    z_im = np.zeros_like(c_im)
    ref = np.full((h, w), iters)
    done = np.zeros((h, w), bool)
    for i in range(iters):
        z_re, z_im = z_re * z_re - z_im * z_im + c_re, np.float32(2) * z_re * z_im + c_im
        esc = ~done & (z_re * z_re + z_im * z_im >= 4)
        ref[esc] = i
        done |= esc
    # FMA contraction may move a boundary pixel by one iteration; the rest must agree exactly
    assert np.mean(got == ref) > 0.995
    assert np.all(np.abs(got.astype(int) - ref) <= iters)


def test_histogram256() -> None:
    m = port("histogram256")
    n_words = 1_000_003
    data = rng.integers(0, 2**32, n_words, dtype=np.uint64).astype(np.uint32)
    blocks = 64
    partial = poisoned(blocks * 256, torch.uint32)
    m.histogram256[blocks, 192](partial, dev(data), np.uint32(n_words))
    hist = partial.cpu().numpy().reshape(blocks, 256).astype(np.int64).sum(0)
    np.testing.assert_array_equal(hist, np.bincount(data.view(np.uint8), minlength=256))


def test_scan_blelloch() -> None:
    m = port("scan_blelloch")
    blocks = 5
    x = rng.integers(-8, 9, blocks * 1024).astype(np.float32)  # integers: the float sums are exact
    out = poisoned(blocks * 1024)
    m.prescan[blocks, 512](out, dev(x))
    v = x.reshape(blocks, 1024).astype(np.float64)
    ref = np.cumsum(v, axis=1) - v
    np.testing.assert_array_equal(out.cpu().numpy().reshape(blocks, 1024), ref)


def test_warp_aggregated_filter() -> None:
    m = port("warp_aggregated_filter")
    n = 200_003
    src = rng.standard_normal(n).astype(np.float32)
    dst = poisoned(n)
    count = torch.zeros(1, dtype=torch.int32, device="cuda")
    m.filter_k[(n + 255) // 256, 256](dst, count, dev(src), n)
    kept = int(count.item())
    ref = src[src > 0]
    assert kept == len(ref)
    # the order of the kept elements is not fixed; the multiset is
    np.testing.assert_array_equal(np.sort(dst.cpu().numpy()[:kept]), np.sort(ref))
    assert torch.isnan(dst[kept:]).all()


def test_grid_sync_reduce() -> None:
    m = port("grid_sync_reduce")
    n = 1_000_003
    x = rng.standard_normal(n).astype(np.float32)
    blocks = 132
    out = poisoned(blocks)
    m.reduce_single_pass[blocks, 256](dev(x), out, n)
    np.testing.assert_allclose(out[0].item(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)


def test_convolution_rows() -> None:
    m = port("convolution_rows")
    radius, bx, by, steps = m.KERNEL_RADIUS, m.ROWS_BLOCKDIM_X, m.ROWS_BLOCKDIM_Y, m.ROWS_RESULT_STEPS
    w, h = bx * steps * 3, by * 11
    src = rng.standard_normal((h, w)).astype(np.float32)
    taps = rng.uniform(0.1, 1.0, 2 * radius + 1).astype(np.float32)
    out = poisoned(h * w)
    m.convolution_rows[(w // (bx * steps), h // by), (bx, by)](out, dev(src.ravel()), dev(taps), w, h, w)
    padded = np.pad(src.astype(np.float64), ((0, 0), (radius, radius)))
    ref = sum(taps[radius - j] * padded[:, radius + j:radius + j + w] for j in range(-radius, radius + 1))
    np.testing.assert_allclose(out.cpu().numpy().reshape(h, w), ref, rtol=1e-4, atol=1e-4)
