"""The ports of public CUDA kernels (tests/packages/ports) on the GPU, against NumPy in
float64: fresh random inputs, outputs poisoned before the run, every element checked."""
from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "ports"))
rng = np.random.default_rng()


def port(name: str) -> ModuleType:
    return importlib.import_module(f"port_{name}")


dev = devices.array
erf = np.vectorize(math.erf)  # float64, within an ulp (SciPy is no test dependency)


def typed(values: np.ndarray, dtype: str) -> object:
    """``values`` as ``dtype`` (a NumPy name, or "bfloat16": a torch tensor) on the device."""
    return devices.bf16(values) if dtype == "bfloat16" else dev(values.astype(dtype))


def poisoned(shape: tuple[int, ...] | int, dtype: object = np.float32) -> object:
    if dtype == "bfloat16":
        return devices.bf16(np.full(shape, np.nan))
    dt = np.dtype(dtype)  # type: ignore[call-overload]
    if dt.kind == "f":
        return devices.full(shape, np.nan, dt)
    return devices.full(shape, 0x5A if dt.itemsize == 1 else 0x5A5A, dt)


def test_bitonic_sort_shared() -> None:
    m = port("bitonic_sort")
    blocks = 7
    keys = rng.integers(0, 2**32, (blocks, 1024), dtype=np.uint64).astype(np.uint32)
    for direction in (1, 0):
        out = poisoned(blocks * 1024, np.uint32)
        m.bitonic_sort_shared[blocks, 512](out, dev(keys.ravel()), np.uint32(1024), np.uint32(direction))
        ref = np.sort(keys, axis=1)
        if not direction:
            ref = ref[:, ::-1]
        np.testing.assert_array_equal(to_numpy(out).reshape(blocks, 1024), ref)


@pytest.mark.parametrize("block_size", [128, 256])
def test_reduction_reduce4(block_size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warp-unrolled tail (warp_reduce) reads sdata[tid + k] in the step in which lane tid + k
    writes it: ox.warp.sync() between the steps orders neither before the other, so under CUDA's
    memory model (independent thread scheduling, since Volta) this is a data race, which a GPU's
    converged lanes happen to run in lockstep. The CPU device runs a warp's lanes one after another
    between warp operations: its racecheck reports the race, both accesses at that line."""
    m = port("reduction")
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    blocks = (n + 2 * block_size - 1) // (2 * block_size)
    out = poisoned(blocks)
    if devices.on_cpu():
        from oxide.errors import RacecheckError
        from oxide.runtime import cpu_driver

        monkeypatch.setenv("OXIDE_SANITIZE", "racecheck")
        monkeypatch.setattr(cpu_driver, "_sanitize", [])  # read again from the environment
        with pytest.raises(RacecheckError, match=r"a race on shared memory in kernel reduce4, block \(0, 0, 0\): "
                           r"thread \(\d+, 0, 0\) reads byte \d+ at port_reduction\.py:16:9, and thread \(\d+, 0, 0\) "
                           r"wrote it at port_reduction\.py:16:9"):
            m.reduce4[blocks, block_size](dev(x), out, n, block_size)
            devices.synchronize()
        return
    m.reduce4[blocks, block_size](dev(x), out, n, block_size)
    ref = np.pad(x.astype(np.float64), (0, blocks * 2 * block_size - n)).reshape(blocks, 2 * block_size).sum(1)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-4, atol=1e-4)


def test_black_scholes() -> None:
    m = port("black_scholes")
    n = 40_009
    price = rng.uniform(5.0, 30.0, n).astype(np.float32)
    strike = rng.uniform(1.0, 100.0, n).astype(np.float32)
    years = rng.uniform(0.25, 10.0, n).astype(np.float32)
    r, v = 0.02, 0.30
    call, put = poisoned(n), poisoned(n)
    m.black_scholes[(n + 127) // 128, 128](call, put, dev(price), dev(strike), dev(years), r, v)

    def ndtr(z: np.ndarray) -> np.ndarray:
        return 0.5 * np.vectorize(math.erfc)(-z / math.sqrt(2.0))

    s, x, t = price.astype(np.float64), strike.astype(np.float64), years.astype(np.float64)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    ref_call = s * ndtr(d1) - x * np.exp(-r * t) * ndtr(d2)
    ref_put = x * np.exp(-r * t) * ndtr(-d2) - s * ndtr(-d1)
    # the polynomial approximation of the normal CDF is good to ~7.5e-8 (Abramowitz-Stegun 26.2.17)
    np.testing.assert_allclose(to_numpy(call), ref_call, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(to_numpy(put), ref_put, rtol=1e-4, atol=2e-4)


def test_fast_matmul() -> None:
    m = port("fast_matmul")
    n = 16 * 13  # the port, like its original, needs a square grid covering both operands
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = poisoned((n, n))
    m.fast_matmul[(13, 13), (16, 16)](dev(a), dev(b), c)
    np.testing.assert_allclose(to_numpy(c), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)


def test_transpose_no_bank_conflicts() -> None:
    m = port("transpose_coalesced")
    h, w = 32 * 9, 32 * 5
    x = rng.standard_normal((h, w)).astype(np.float32)
    out = poisoned(h * w)
    m.transpose_no_bank_conflicts[(w // 32, h // 32), (32, 8)](out, dev(x.ravel()), w, h)
    np.testing.assert_array_equal(to_numpy(out).reshape(w, h), x.T)


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
    np.testing.assert_allclose(to_numpy(y), dense @ x.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_softmax_rows() -> None:
    m = port("softmax_rows")
    x = (rng.standard_normal((37, 1999)) * 4).astype(np.float32)
    out = poisoned(x.shape)
    m.softmax[37, 256](dev(x), out)
    v = x.astype(np.float64)
    e = np.exp(v - v.max(1, keepdims=True))
    np.testing.assert_allclose(to_numpy(out), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_mandelbrot() -> None:
    m = port("mandelbrot")
    h, w, iters = 200, 301, 20
    image = poisoned((h, w), np.uint8)
    m.mandel_kernel[((w + 15) // 16, (h + 15) // 16), (16, 16)](-2.0, 1.0, -1.0, 1.0, image, iters)
    # reference in float32, as the kernel computes, step by step
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    c_re = np.float32(-2.0) + xs * np.float32(3.0 / w)
    c_im = np.float32(-1.0) + ys * np.float32(2.0 / h)
    got = to_numpy(image)
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
    partial = poisoned(blocks * 256, np.uint32)
    m.histogram256[blocks, 192](partial, dev(data), np.uint32(n_words))
    hist = to_numpy(partial).reshape(blocks, 256).astype(np.int64).sum(0)
    np.testing.assert_array_equal(hist, np.bincount(data.view(np.uint8), minlength=256))


def test_scan_blelloch() -> None:
    m = port("scan_blelloch")
    blocks = 5
    x = rng.integers(-8, 9, blocks * 1024).astype(np.float32)  # integers: the float sums are exact
    out = poisoned(blocks * 1024)
    m.prescan[blocks, 512](out, dev(x))
    v = x.reshape(blocks, 1024).astype(np.float64)
    ref = np.cumsum(v, axis=1) - v
    np.testing.assert_array_equal(to_numpy(out).reshape(blocks, 1024), ref)


def test_warp_aggregated_filter() -> None:
    m = port("warp_aggregated_filter")
    n = 200_003
    src = rng.standard_normal(n).astype(np.float32)
    dst = poisoned(n)
    count = devices.zeros(1, np.int32)
    m.filter_k[(n + 255) // 256, 256](dst, count, dev(src), n)
    kept = int(to_numpy(count)[0])
    ref = src[src > 0]
    assert kept == len(ref)
    # the order of the kept elements is not fixed; the multiset is
    np.testing.assert_array_equal(np.sort(to_numpy(dst)[:kept]), np.sort(ref))
    assert np.isnan(to_numpy(dst)[kept:]).all()


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
    np.testing.assert_allclose(to_numpy(out).reshape(h, w), ref, rtol=1e-4, atol=1e-4)


# ---- ports added by the second round (porter): sources in each port's docstring ---------------

sys.path.insert(0, str(Path(__file__).parent))
from test_ports import NOT_YET  # noqa: E402


def needs_port(name: str) -> None:
    if f"port_{name}" in NOT_YET:
        pytest.skip(f"port_{name} does not compile yet: {NOT_YET[f'port_{name}']}")


@pytest.mark.parametrize("block_size", [16, 32])
def test_matrix_mul(block_size: int) -> None:
    m = port("matrix_mul")
    h_a, w_a, w_b = 5 * block_size, 7 * block_size, 3 * block_size
    a = rng.standard_normal((h_a, w_a)).astype(np.float32)
    b = rng.standard_normal((w_a, w_b)).astype(np.float32)
    c = poisoned(h_a * w_b)
    m.matrix_mul_cuda[(w_b // block_size, h_a // block_size), (block_size, block_size)](
        c, dev(a.ravel()), dev(b.ravel()), w_a, w_b, block_size)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(to_numpy(c).reshape(h_a, w_b), ref, rtol=1e-4, atol=1e-3)


def test_kmeans_point() -> None:
    m = port("kmeans_point")
    npoints, nfeatures, nclusters = 3001, 7, 5
    points = rng.uniform(-3.0, 3.0, (npoints, nfeatures)).astype(np.float32)
    centres = rng.uniform(-3.0, 3.0, (nclusters, nfeatures)).astype(np.float32)
    table = rng.uniform(50.0, 60.0, m.ASSUMED_NR_CLUSTERS * m.MAX_FEATURES).astype(np.float32)  # unused slots
    table[:nclusters * nfeatures] = centres.ravel()
    m.c_clusters.write(table)
    membership = poisoned(npoints, np.int32)
    blocks = (npoints + 255) // 256
    m.kmeans_point[((blocks + 1) // 2, 2), 256](dev(points.T.ravel()), nfeatures, npoints, nclusters, membership)
    got = to_numpy(membership)
    d = ((points.astype(np.float64)[:, None, :] - centres.astype(np.float64)[None, :, :]) ** 2).sum(2)
    assert got.min() >= 0 and got.max() < nclusters
    # the chosen centre is the nearest one (ties within f32 rounding may pick either)
    chosen = d[np.arange(npoints), got]
    np.testing.assert_allclose(chosen, d.min(1), rtol=1e-5, atol=1e-5)
    assert np.mean(got == d.argmin(1)) > 0.999


def test_atax() -> None:
    m = port("atax")
    nx, ny = 1000, 1203
    a = rng.standard_normal((nx, ny)).astype(np.float32)
    x = rng.standard_normal(ny).astype(np.float32)
    tmp, y = poisoned(nx), poisoned(ny)
    m.atax_kernel1[(nx + 255) // 256, 256](dev(a.ravel()), dev(x), tmp, nx, ny)
    m.atax_kernel2[(ny + 255) // 256, 256](dev(a.ravel()), y, tmp, nx, ny)
    a64 = a.astype(np.float64)
    ref_tmp = a64 @ x.astype(np.float64)
    np.testing.assert_allclose(to_numpy(tmp), ref_tmp, rtol=1e-4, atol=1e-4 * np.abs(ref_tmp).max())
    ref_y = a64.T @ to_numpy(tmp).astype(np.float64)
    np.testing.assert_allclose(to_numpy(y), ref_y, rtol=1e-4, atol=1e-4 * np.abs(ref_y).max())


def test_bicg() -> None:
    m = port("bicg")
    nx, ny = 1100, 907
    a = rng.standard_normal((nx, ny)).astype(np.float32)
    r = rng.standard_normal(nx).astype(np.float32)
    p = rng.standard_normal(ny).astype(np.float32)
    s, q = poisoned(ny), poisoned(nx)
    m.bicg_kernel1[(ny + 255) // 256, 256](dev(a.ravel()), dev(r), s, nx, ny)
    m.bicg_kernel2[(nx + 255) // 256, 256](dev(a.ravel()), dev(p), q, nx, ny)
    a64 = a.astype(np.float64)
    ref_s, ref_q = a64.T @ r.astype(np.float64), a64 @ p.astype(np.float64)
    np.testing.assert_allclose(to_numpy(s), ref_s, rtol=1e-4, atol=1e-4 * np.abs(ref_s).max())
    np.testing.assert_allclose(to_numpy(q), ref_q, rtol=1e-4, atol=1e-4 * np.abs(ref_q).max())


def test_convolution_columns() -> None:
    m = port("convolution_columns")
    radius = m.KERNEL_RADIUS
    bx, by, steps = m.COLUMNS_BLOCKDIM_X, m.COLUMNS_BLOCKDIM_Y, m.COLUMNS_RESULT_STEPS
    w, h = bx * 5, by * steps * 4
    src = rng.standard_normal((h, w)).astype(np.float32)
    taps = rng.uniform(0.1, 1.0, 2 * radius + 1).astype(np.float32)
    m.c_Kernel.write(taps)
    out = poisoned(h * w)
    m.convolution_columns[(w // bx, h // (by * steps)), (bx, by)](out, dev(src.ravel()), w, h, w)
    padded = np.pad(src.astype(np.float64), ((radius, radius), (0, 0)))
    ref = sum(taps[radius - j] * padded[radius + j:radius + j + h, :] for j in range(-radius, radius + 1))
    np.testing.assert_allclose(to_numpy(out).reshape(h, w), ref, rtol=1e-4, atol=1e-4)


def test_laplace_jacobi() -> None:
    m = port("laplace_jacobi")
    n, w = 100, 77
    a = rng.uniform(0.5, 2.0, (n, w)).astype(np.float32)
    a_new = poisoned((n, w))
    error = devices.zeros(1, np.float32)
    m.jacobi_sweep[((w + 15) // 16, (n + 15) // 16), (16, 16)](dev(a), a_new, error)
    v = a.astype(np.float64)
    ref = v.copy()
    ref[1:-1, 1:-1] = 0.25 * (v[1:-1, :-2] + v[1:-1, 2:] + v[:-2, 1:-1] + v[2:, 1:-1])
    np.testing.assert_allclose(to_numpy(a_new), ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(error.item(), np.abs(ref - v).max(), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_layer_norm(dtype: str) -> None:
    m = port("layer_norm")
    rows, n, eps = 37, 1999, 1e-5
    x = typed(rng.standard_normal((rows, n)) * 2 + 0.5, dtype)
    w = typed(rng.uniform(0.5, 1.5, n), dtype)
    b = typed(rng.uniform(-0.5, 0.5, n), dtype)
    y = poisoned(rows * n, dtype)
    mean, rstd = poisoned(rows), poisoned(rows)
    m.layer_norm_fwd[rows, m.BLOCK](x, y, w, b, mean, rstd, eps)
    xv, wv, bv = (to_numpy(t).astype(np.float64) for t in (x, w, b))
    ref_mean = xv.mean(1)
    ref_rstd = 1.0 / np.sqrt(xv.var(1) + eps)
    ref_y = (xv - ref_mean[:, None]) * ref_rstd[:, None] * wv + bv
    np.testing.assert_allclose(to_numpy(mean), ref_mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(rstd), ref_rstd, rtol=1e-4)
    tol = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-5}[dtype]
    np.testing.assert_allclose(to_numpy(y).astype(np.float64).reshape(rows, n), ref_y, rtol=tol, atol=tol)


def test_block_scan() -> None:
    m = port("block_scan")
    blocks = 5
    n = blocks * m.BLOCK_THREADS - 100
    x = rng.integers(1, 1 << 20, n, dtype=np.uint64).astype(np.uint32)
    out = poisoned(n, np.uint32)
    totals = poisoned(blocks, np.uint32)
    m.block_inclusive_scan[blocks, m.BLOCK_THREADS](dev(x), out, totals, np.uint32(n))
    padded = np.pad(x.astype(np.uint64), (0, blocks * m.BLOCK_THREADS - n)).reshape(blocks, m.BLOCK_THREADS)
    ref = (np.cumsum(padded, axis=1) % (1 << 32)).astype(np.uint32)
    np.testing.assert_array_equal(to_numpy(out), ref.ravel()[:n])
    np.testing.assert_array_equal(to_numpy(totals), ref[:, -1])


def test_random_walk() -> None:
    m = port("random_walk")
    walks, steps = 10_007, 301
    seed = int(rng.integers(1, 2**63))
    final_pos, max_dist = poisoned(walks, np.int32), poisoned(walks, np.int32)
    m.random_walk[(walks + 127) // 128, 128](np.uint64(seed), steps, final_pos, max_dist)

    def splitmix64(x: np.ndarray) -> np.ndarray:
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    state = splitmix64(np.uint64(seed) + np.arange(walks, dtype=np.uint64))
    pos = np.zeros(walks, np.int64)
    furthest = np.zeros(walks, np.int64)
    for _ in range(steps):
        state ^= state >> np.uint64(12)
        state ^= state << np.uint64(25)
        state ^= state >> np.uint64(27)
        r = state * np.uint64(0x2545F4914F6CDD1D)
        pos += np.where((r >> np.uint64(40)) < (1 << 23), -1, 1)
        furthest = np.maximum(furthest, np.abs(pos))
    np.testing.assert_array_equal(to_numpy(final_pos), pos)
    np.testing.assert_array_equal(to_numpy(max_dist), furthest)


def test_simple_atomics() -> None:
    m = port("simple_atomics")
    blocks, threads = 64, 256
    n = blocks * threads
    init = rng.integers(1, 1000, 11).astype(np.int32)
    init[8] = init[10] = 0xFF
    uinit = rng.integers(1, 100, 11).astype(np.uint32)
    odata, udata = dev(init), dev(uinit)
    m.test_kernel[blocks, threads](odata, udata)
    got, ugot = to_numpy(odata), to_numpy(udata)
    tids = np.arange(n, dtype=np.int64)
    assert got[0] == init[0] + 10 * n
    assert got[1] == init[1] - 10 * n
    assert 0 <= got[2] < n
    assert got[3] == max(int(init[3]), n - 1)
    assert got[4] == min(int(init[4]), 0)
    assert got[5] == init[5] and got[6] == init[6]          # inc/dec went to the unsigned array
    assert init[7] <= got[7] < n or got[7] == init[7]      # a chain of compare-and-swaps from init[7]
    and_ref = int(init[8])
    for t in tids:
        and_ref &= int(2 * t + 7)
    assert got[8] == np.int32(and_ref)
    assert got[9] == -1                                    # 1 << tid for tid < 32 sets every bit
    xor_ref = int(init[10])
    for t in tids:
        xor_ref ^= int(t)
    assert got[10] == np.int32(xor_ref)
    inc, dec = int(uinit[5]), int(uinit[6])
    for _ in range(n):
        inc = 0 if inc >= 17 else inc + 1
        dec = 137 if dec == 0 or dec > 137 else dec - 1
    assert ugot[5] == inc and ugot[6] == dec
    untouched = [k for k in range(11) if k not in (5, 6)]
    np.testing.assert_array_equal(ugot[untouched], uinit[untouched])


def test_needleman_wunsch() -> None:
    m = port("needleman_wunsch")
    bs = m.BLOCK_SIZE
    block_width = 9
    cols = rows = block_width * bs + 1
    penalty = 10
    reference = rng.integers(-4, 12, (rows, cols)).astype(np.int32)
    matrix = rng.integers(-(10**6), 10**6, (rows, cols)).astype(np.int32)   # poison
    matrix[0, :] = -penalty * np.arange(cols)
    matrix[:, 0] = -penalty * np.arange(rows)
    ref = matrix.astype(np.int64)
    for i in range(1, rows):
        for j in range(1, cols):
            ref[i, j] = max(ref[i - 1, j - 1] + reference[i, j], ref[i, j - 1] - penalty, ref[i - 1, j] - penalty)
    d_ref, d_matrix = dev(reference.ravel()), dev(matrix.ravel())
    for i in range(1, block_width + 1):
        m.needle_cuda_shared_1[i, bs](d_ref, d_matrix, cols, penalty, i, block_width)
    for i in range(block_width - 1, 0, -1):
        m.needle_cuda_shared_2[i, bs](d_ref, d_matrix, cols, penalty, i, block_width)
    np.testing.assert_array_equal(to_numpy(d_matrix).reshape(rows, cols), ref)


def test_nbody() -> None:
    needs_port("nbody")
    m = port("nbody")
    n, soft2 = 1000, 0.01
    pos = np.empty((n, 4), np.float32)
    pos[:, :3] = rng.uniform(-1.0, 1.0, (n, 3))
    pos[:, 3] = rng.uniform(0.5, 1.5, n)
    accel = poisoned(4 * n)
    m.compute_body_accel[(n + m.BLOCK - 1) // m.BLOCK, m.BLOCK](dev(pos.ravel()), accel, n, soft2)
    p = pos.astype(np.float64)
    r = p[None, :, :3] - p[:, None, :3]                       # r[i, j] = pos_j - pos_i
    inv = 1.0 / np.sqrt((r * r).sum(2) + soft2)
    ref = (r * (p[None, :, 3] * inv ** 3)[:, :, None]).sum(1)
    got = to_numpy(accel).reshape(n, 4)
    np.testing.assert_allclose(got[:, :3], ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    np.testing.assert_array_equal(got[:, 3], 0.0)


def test_ray_spheres() -> None:
    m = port("ray_spheres")
    dim = 256
    table = np.empty((m.SPHERES, m.FIELDS), np.float32)
    table[:, 0:3] = rng.uniform(0.05, 1.0, (m.SPHERES, 3))
    table[:, 3] = rng.uniform(20.0, 120.0, m.SPHERES)
    table[:, 4:7] = rng.uniform(-dim / 2, dim / 2, (m.SPHERES, 3))
    m.SPHERE_TABLE.write(table)
    image = poisoned(dim * dim * 4, np.uint8)
    m.ray_kernel[(dim // 16, dim // 16), (16, 16)](image, dim)
    got = to_numpy(image).reshape(dim, dim, 4).astype(np.int64)
    t = table.astype(np.float64)
    ys, xs = np.meshgrid(np.arange(dim) - dim // 2, np.arange(dim) - dim // 2, indexing="ij")
    dx = xs[None] - t[:, 4, None, None]
    dy = ys[None] - t[:, 5, None, None]
    rad2 = (t[:, 3] ** 2)[:, None, None]
    inside = dx * dx + dy * dy < rad2
    dz = np.sqrt(np.where(inside, rad2 - dx * dx - dy * dy, 0.0))
    depth = np.where(inside, dz + t[:, 6, None, None], -2e10)
    shade = np.where(inside, dz / np.sqrt(rad2), 0.0)
    front = depth.argmax(0)
    hit_any = depth.max(0) > -2e10
    s = np.take_along_axis(shade, front[None], 0)[0] * hit_any
    ref = np.zeros((dim, dim, 4), np.int64)
    for c in range(3):
        ref[:, :, c] = np.trunc(t[front, c] * s * 255)
    ref[:, :, 3] = 255
    assert np.all(got[:, :, 3] == 255)
    # f32 against f64: a channel may land one step lower or higher at a rounding edge
    assert np.abs(got - ref).max() <= 1 or np.mean(np.abs(got - ref) > 1) < 1e-3
    assert np.mean(got == ref) > 0.99


def test_pathfinder() -> None:
    m = port("pathfinder")
    rows, cols, pyramid = 100, 1003, 20
    wall = rng.integers(1, 10, (rows, cols)).astype(np.int32)
    border = pyramid * m.HALO
    small = m.BLOCK_SIZE - pyramid * m.HALO * 2
    block_cols = (cols + small - 1) // small
    gpu_wall = dev(wall[1:].ravel())
    results = [dev(wall[0]), poisoned(cols, np.int32)]
    src, dst = 1, 0
    for t in range(0, rows - 1, pyramid):
        src, dst = dst, src
        m.dynproc_kernel[block_cols, m.BLOCK_SIZE](min(pyramid, rows - t - 1), gpu_wall, results[src], results[dst],
                                                   cols, rows, t, border)
    dp = wall[0].astype(np.int64)
    for r in range(1, rows):
        left = np.concatenate([dp[:1], dp[:-1]])
        right = np.concatenate([dp[1:], dp[-1:]])
        dp = wall[r] + np.minimum(np.minimum(left, dp), right)
    np.testing.assert_array_equal(to_numpy(results[dst]), dp)


def test_vote_intrinsics() -> None:
    m = port("vote_intrinsics")
    warps = 4
    data = rng.integers(1, 2**32, (warps, 32), dtype=np.uint64).astype(np.uint32)
    data[0] = 0                                     # no lane votes
    data[1] = 0
    data[1, rng.integers(0, 32)] = 7                # one lane votes
    data[3] *= rng.integers(0, 2, 32).astype(np.uint32)  # some lanes vote
    data[3, 0] = 0
    size = warps * 32
    for kernel, reduce in ((m.vote_any_kernel1, np.any), (m.vote_all_kernel2, np.all)):
        result = poisoned(size, np.uint32)
        kernel[1, size](dev(data.ravel()), result, size)
        ref = np.repeat(reduce(data != 0, axis=1), 32).astype(np.uint32)
        np.testing.assert_array_equal(to_numpy(result), ref)
    warp_size = 32
    tx = np.arange(3 * warp_size)
    above = tx >= (warp_size * 3) // 2
    ref3 = np.stack([np.repeat(above.reshape(3, 32).any(1), 32), above,
                     np.repeat(above.reshape(3, 32).all(1), 32)], axis=1)
    for start in (np.tile([True, True, False], 3 * warp_size), np.zeros(9 * warp_size, bool)):
        info = dev(start)
        m.vote_any_kernel3[1, 3 * warp_size](info, warp_size)
        np.testing.assert_array_equal(to_numpy(info).reshape(-1, 3), ref3)


def test_median_filter() -> None:
    m = port("median_filter")
    h, w = 61, 83
    img = rng.standard_normal((h, w)).astype(np.float32)
    out = poisoned((h, w))
    m.median_filter[((w + 15) // 16, (h + 15) // 16), (16, 16)](dev(img), out)
    ref = img.copy()
    windows = np.stack([img[1 + di:h - 1 + di, 1 + dj:w - 1 + dj] for di in (-1, 0, 1) for dj in (-1, 0, 1)])
    ref[1:-1, 1:-1] = np.median(windows, axis=0)
    np.testing.assert_array_equal(to_numpy(out), ref)


def test_correlation() -> None:
    m = port("correlation")
    n_rows, m_cols = 300, 97                      # N data points of M variables, 1-based as the original
    data = np.zeros((n_rows + 1, m_cols + 1), np.float32)
    # scales chosen so every deviation is well away from EPS (0.005), whose test would otherwise flip
    data[1:, 1:] = rng.standard_normal((n_rows, m_cols)) * rng.uniform(1.0, 3.0, m_cols) + rng.uniform(-1, 1, m_cols)
    data[1:, 7] = 0.25                            # a constant column: its deviation is clamped to 1.0
    d_data = dev(data.ravel())
    mean, std = poisoned(m_cols + 1), poisoned(m_cols + 1)
    symmat = poisoned((m_cols + 1) * (m_cols + 1))
    blocks = (m_cols + 255) // 256
    m.mean_kernel[blocks, 256](mean, d_data, m_cols, n_rows)
    m.std_kernel[blocks, 256](mean, std, d_data, m_cols, n_rows)
    m.reduce_kernel[((m_cols + 31) // 32, (n_rows + 7) // 8), (32, 8)](mean, std, d_data, m_cols, n_rows)
    m.corr_kernel[blocks, 256](symmat, d_data, m_cols, n_rows)

    float_n = 3214212.01
    v = data[1:, 1:].astype(np.float64)
    ref_mean = v.sum(0) / float_n
    ref_std = np.sqrt(((v - ref_mean) ** 2).sum(0) / float_n)
    ref_std[ref_std <= 0.005] = 1.0
    np.testing.assert_allclose(to_numpy(mean)[1:], ref_mean, rtol=1e-4, atol=1e-10)
    np.testing.assert_allclose(to_numpy(std)[1:], ref_std, rtol=1e-4)
    z = (v - ref_mean) / (np.sqrt(float_n) * ref_std)
    np.testing.assert_allclose(to_numpy(d_data).reshape(n_rows + 1, m_cols + 1)[1:, 1:], z, rtol=1e-4,
                               atol=1e-6 * np.abs(z).max())
    corr = z.T @ z
    np.fill_diagonal(corr, 1.0)
    got = to_numpy(symmat).reshape(m_cols + 1, m_cols + 1)
    # the original fills rows/columns 1..M-1 above the diagonal and mirrors them; the last diagonal
    # element and row/column 0 stay as they were
    for j1 in range(1, m_cols):
        np.testing.assert_allclose(got[j1, j1 + 1:], corr[j1 - 1, j1:], rtol=1e-3, atol=1e-5 * np.abs(corr).max())
        np.testing.assert_allclose(got[j1 + 1:, j1], corr[j1:, j1 - 1], rtol=1e-3, atol=1e-5 * np.abs(corr).max())
        assert got[j1, j1] == 1.0


def test_bfs() -> None:
    m = port("bfs")
    from collections import deque

    n = 6007
    counts = rng.integers(0, 5, n).astype(np.int32)
    starting = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    edges = rng.integers(0, n, int(counts.sum())).astype(np.int32)
    mask = np.zeros(n, bool)
    visited = np.zeros(n, bool)
    cost = np.full(n, -1, np.int32)
    mask[0] = visited[0] = True
    cost[0] = 0
    d_mask, d_updating, d_visited, d_cost = dev(mask), dev(np.zeros(n, bool)), dev(visited), dev(cost)
    d_starting, d_counts, d_edges = dev(starting), dev(counts), dev(edges)
    blocks = (n + m.MAX_THREADS_PER_BLOCK - 1) // m.MAX_THREADS_PER_BLOCK
    levels = 0
    while True:
        over = devices.zeros(1, np.bool_)
        m.bfs_kernel[blocks, m.MAX_THREADS_PER_BLOCK](d_starting, d_counts, d_edges, d_mask, d_updating, d_visited,
                                                       d_cost, n)
        m.bfs_kernel2[blocks, m.MAX_THREADS_PER_BLOCK](d_mask, d_updating, d_visited, over, n)
        levels += 1
        if not over.item():
            break
        assert levels <= n
    ref = np.full(n, -1, np.int64)
    ref[0] = 0
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for v in edges[starting[u]:starting[u] + counts[u]]:
            if ref[v] < 0:
                ref[v] = ref[u] + 1
                queue.append(v)
    np.testing.assert_array_equal(to_numpy(d_cost), ref)
    np.testing.assert_array_equal(to_numpy(d_visited), ref >= 0)


@pytest.mark.parametrize("log2n", [10, 11])
def test_fast_walsh(log2n: int) -> None:
    m = port("fast_walsh")
    n, batch = 1 << log2n, 7
    x = rng.standard_normal((batch, n)).astype(np.float32)
    out = poisoned(batch * n)
    m.fwt_batch1_kernel[batch, n // 4, None, n * 4](out, dev(x.ravel()), log2n)
    ref = x.astype(np.float64)
    h = 1
    while h < n:                                  # Sylvester-ordered Walsh-Hadamard transform
        ref = ref.reshape(batch, -1, 2, h)
        ref = np.stack([ref[:, :, 0] + ref[:, :, 1], ref[:, :, 0] - ref[:, :, 1]], axis=2)
        h *= 2
    ref = ref.reshape(batch, n)
    np.testing.assert_allclose(to_numpy(out).reshape(batch, n), ref, rtol=1e-4, atol=1e-3)


def test_sobel() -> None:
    m = port("sobel")
    h, w, scale = 97, 131, 0.625                 # a scale exact in binary: the f32 product truncates like f64's
    img = rng.integers(0, 256, (h, w)).astype(np.uint8)
    out = poisoned((h, w), np.uint8)
    m.sobel_tex[((w + 15) // 16, (h + 15) // 16), (16, 16)](dev(img), out, scale)
    p = np.pad(img.astype(np.int64), 1, mode="edge")

    def at(dy: int, dx: int) -> np.ndarray:
        return p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]

    horz = at(-1, 1) + 2 * at(0, 1) + at(1, 1) - at(-1, -1) - 2 * at(0, -1) - at(1, -1)
    vert = at(-1, -1) + 2 * at(-1, 0) + at(-1, 1) - at(1, -1) - 2 * at(1, 0) - at(1, 1)
    ref = np.clip(np.trunc(scale * (np.abs(horz) + np.abs(vert))), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(to_numpy(out), ref)


@pytest.mark.parametrize("bits, shift", [(32, 0), (32, 24), (64, 8), (64, 56)])
def test_radix_histogram(bits: int, shift: int) -> None:
    m = port("radix_histogram")
    n = 300_007
    dtype = np.uint32 if bits == 32 else np.uint64
    keys = rng.integers(0, 2**bits, n, dtype=np.uint64 if bits == 64 else np.uint32).astype(dtype)
    counts = dev(np.zeros(m.RADIX_DIGITS, np.uint32))
    m.radix_histogram[40, 256](dev(keys), counts, np.uint32(shift))
    digits = ((keys >> dtype(shift)) & dtype(m.RADIX_DIGITS - 1)).astype(np.int64)
    np.testing.assert_array_equal(to_numpy(counts), np.bincount(digits, minlength=m.RADIX_DIGITS))


def test_philox_dropout() -> None:
    m = port("philox_dropout")
    n, p = 200_003, 0.3
    seed = int(rng.integers(1, 2**63))
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    out = poisoned(n)
    m.seeded_dropout[(n + 255) // 256, 256](dev(x), out, n, p, np.uint64(seed))
    mask32 = np.uint64(0xFFFFFFFF)
    k0, k1 = np.uint64(seed) & mask32, np.uint64(seed) >> np.uint64(32)
    c0 = np.arange(n, dtype=np.uint64)
    c1 = np.zeros(n, np.uint64)
    c2 = np.zeros(n, np.uint64)
    c3 = np.zeros(n, np.uint64)
    a, b = np.uint64(m.PHILOX_ROUND_A), np.uint64(m.PHILOX_ROUND_B)
    for _ in range(m.N_ROUNDS):
        _c0, _c2 = c0, c2
        c0 = ((b * _c2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((a * _c0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (b * _c2) & mask32
        c3 = (a * _c0) & mask32
        k0 = (k0 + np.uint64(m.PHILOX_KEY_A)) & mask32
        k1 = (k1 + np.uint64(m.PHILOX_KEY_B)) & mask32
    xi = c0.astype(np.uint32).view(np.int32).astype(np.int64)
    xi = np.where(xi < 0, -xi - 1, xi)
    random = xi.astype(np.float32) * np.float32(4.6566127342e-10)
    keep = random > np.float32(p)
    ref = np.where(keep, x / (np.float32(1) - np.float32(p)), np.float32(0)).astype(np.float32)
    got = to_numpy(out)
    np.testing.assert_array_equal(got != 0, keep)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=0)
    assert 0.6 < keep.mean() < 0.8


@pytest.mark.parametrize("block_size, n", [(128, 1 << 20), (256, 1_000_003), (512, 777_777), (512, 1 << 18)])
def test_reduce6(block_size: int, n: int) -> None:
    m = port("reduce6")
    x = rng.standard_normal(n).astype(np.float32)
    blocks = 64
    out = poisoned(blocks)
    pow2 = n & (n - 1) == 0
    m.reduce6[blocks, block_size](dev(x), out, np.uint32(n), block_size, pow2)
    # block b sums the elements whose position in each grid-sized stride falls in its 2 * block_size
    owner = (np.arange(n) % (2 * block_size * blocks)) // (2 * block_size)
    ref = np.bincount(owner, weights=x.astype(np.float64), minlength=blocks)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_gelu(dtype: str) -> None:
    m = port("gelu")
    n = devices.sized(100_003, 40_003)  # a grid-stride loop: 120 blocks of 256 threads either way
    x = typed(rng.standard_normal(n) * 3, dtype)
    y = poisoned(n, dtype)
    m.gelu_kernel[120, 256](x, y, n)
    v = to_numpy(x).astype(np.float64)
    ref = v * 0.5 * (1 + erf(v / np.sqrt(2.0)))
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(to_numpy(y).astype(np.float64), ref, rtol=tol, atol=tol)


def test_hotspot() -> None:
    m = port("hotspot")
    rows, cols, pyramid, total = 64, 80, 2, 7
    t_chip, chip_height, chip_width = 0.0005, 0.016, 0.016
    factor_chip, spec_heat_si, k_si, max_pd, precision = 0.5, 1.75e6, 100, 3.0e6, 0.001
    temp = rng.uniform(320.0, 345.0, (rows, cols)).astype(np.float32)
    power = rng.uniform(0.0, 1.0, (rows, cols)).astype(np.float32)
    grid_height, grid_width = np.float32(chip_height / rows), np.float32(chip_width / cols)
    cap = np.float32(factor_chip * spec_heat_si * t_chip * grid_width * grid_height)
    rx = np.float32(grid_width / (2.0 * k_si * t_chip * grid_height))
    ry = np.float32(grid_height / (2.0 * k_si * t_chip * grid_width))
    rz = np.float32(t_chip / (k_si * grid_height * grid_width))
    step = np.float32(precision / (max_pd / (factor_chip * t_chip * spec_heat_si)))
    border = pyramid                                   # pyramid_height * EXPAND_RATE / 2
    small = m.BLOCK_SIZE - pyramid * 2
    grid = ((cols + small - 1) // small, (rows + small - 1) // small)
    bufs = [dev(temp.ravel()), poisoned(rows * cols)]
    d_power = dev(power.ravel())
    src, dst = 1, 0
    for t in range(0, total, pyramid):
        src, dst = dst, src
        m.calculate_temp[grid, (m.BLOCK_SIZE, m.BLOCK_SIZE)](min(pyramid, total - t), d_power, bufs[src], bufs[dst],
                                                            cols, rows, border, border, float(cap), float(rx),
                                                            float(ry), float(rz), float(step), 0.001)
    ref = temp.astype(np.float64)
    p = power.astype(np.float64)
    sdc = float(step) / float(cap)
    for _ in range(total):
        e = np.pad(ref, 1, mode="edge")
        north, south = e[:-2, 1:-1], e[2:, 1:-1]
        west, east = e[1:-1, :-2], e[1:-1, 2:]
        ref = ref + sdc * (p + (south + north - 2.0 * ref) / float(ry) + (east + west - 2.0 * ref) / float(rx)
                           + (80.0 - ref) / float(rz))
    np.testing.assert_allclose(to_numpy(bufs[dst]).reshape(rows, cols), ref, rtol=1e-5, atol=1e-3)


def test_conv2d_tiled() -> None:
    m = port("conv2d_tiled")
    height, width, mw, tile = 53, 71, m.MASK_WIDTH, m.O_TILE_WIDTH
    image = rng.standard_normal((height, width)).astype(np.float32)
    mask = rng.uniform(-1.0, 1.0, (mw, mw)).astype(np.float32)
    m.M.write(mask)
    out = poisoned(height * width)
    grid = ((width + tile - 1) // tile, (height + tile - 1) // tile)
    m.convolution_2d_tiled[grid, (m.BLOCK_WIDTH, m.BLOCK_WIDTH)](out, dev(image.ravel()), height, width, width)
    r = mw // 2
    padded = np.pad(image.astype(np.float64), r)
    ref = sum(float(mask[i, j]) * padded[i:i + height, j:j + width] for i in range(mw) for j in range(mw))
    np.testing.assert_allclose(to_numpy(out).reshape(height, width), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_simple_templates(dtype: str) -> None:
    m = port("simple_templates")
    threads = 256
    if dtype == "int32":
        x = rng.integers(-1000, 1000, threads).astype(np.int32)
    else:
        x = rng.standard_normal(threads).astype(dtype)
    out = poisoned(threads, dtype)
    m.test_kernel[1, threads, None, threads * x.itemsize](dev(x), out)
    np.testing.assert_array_equal(to_numpy(out), x * x.dtype.type(threads))


def test_sequential_rows() -> None:
    m = port("sequential_rows")
    rows, cols = 300, 1024                        # like the original: one thread per column, exactly
    first = rng.integers(-1000, 1000, cols).astype(np.int32)
    start = np.full((rows, cols), 0x5A5A, np.int32)
    start[0] = first
    M = dev(start)
    m.sequential_rows[cols // 128, 128](M)
    ref = start.astype(np.int64)
    for row in range(1, rows):
        ref[row] = ref[row - 1, ::-1] + 1
    np.testing.assert_array_equal(to_numpy(M), ref)


def test_histogram64() -> None:
    m = port("histogram64")
    threads = m.HISTOGRAM64_THREADBLOCK_SIZE
    data_count = 40_001                           # uint4 elements
    data = rng.integers(0, 2**32, 4 * data_count, dtype=np.uint64).astype(np.uint32)
    # as the sample sizes the grid: each thread's byte counters stay below 256
    blocks = (16 * data_count + threads * 240 - 1) // (threads * 240)
    partial = poisoned(blocks * m.HISTOGRAM64_BIN_COUNT, np.uint32)
    m.histogram64_kernel[blocks, threads](partial, dev(data), np.uint32(data_count))
    hist = to_numpy(partial).reshape(blocks, m.HISTOGRAM64_BIN_COUNT).astype(np.int64).sum(0)
    np.testing.assert_array_equal(hist, np.bincount(data.view(np.uint8) >> 2, minlength=m.HISTOGRAM64_BIN_COUNT))


# ---- ports added by issue 29's second probe: sources in each port's docstring -----------------

def shfl_scan_reference(data: np.ndarray, width: int, block: int) -> np.ndarray:
    """shfl_scan_test's result, step by step: __shfl_up_sync(…, i, width) reads lane l - i of the
    lane's width-segment (its own value below the segment's lane i), and is added where the warp
    lane is at least i, as the sample's `if (lane_id >= i)`; then the warps' sums are scanned."""
    vals = data.astype(np.int64).reshape(-1, block // 32, 32)
    lane = np.arange(32)
    i = 1
    while i <= width:
        src = np.where(lane % width >= i, lane - i, lane)
        vals = vals + np.where(lane >= i, vals[..., src], 0)
        i *= 2
    sums = vals[..., 31].cumsum(axis=1)
    before = np.concatenate([np.zeros((len(vals), 1), np.int64), sums[:, :-1]], axis=1)
    return (vals + before[..., None]).reshape(-1)


@pytest.mark.parametrize("width", [8, 32])
def test_shfl_scan(width: int) -> None:
    """shfl_scan_test with a run-time shuffle width (the sample passes 32; 8 scans 8-lane
    segments), then uniform_add of the blocks' partial sums: the whole array's inclusive scan."""
    m = port("shfl_scan")
    block, blocks = 256, 40
    n = block * blocks
    data_np = rng.integers(-50, 50, n).astype(np.int32)
    data = dev(data_np)
    partial = devices.full((blocks,), -7, np.int32)
    m.shfl_scan_test[blocks, block](data, width, partial)
    want = shfl_scan_reference(data_np, width, block)
    np.testing.assert_array_equal(to_numpy(data), want)
    np.testing.assert_array_equal(to_numpy(partial), want.reshape(blocks, -1)[:, -1])
    if width == 32:
        np.testing.assert_array_equal(want, data_np.reshape(blocks, -1).cumsum(axis=1).reshape(-1))
        sums = devices.zeros(blocks, np.int32)
        sums = dev(np.concatenate([[0], np.cumsum(to_numpy(partial))[:-1]]).astype(np.int32))
        m.uniform_add[blocks, block](data, sums, n)
        np.testing.assert_array_equal(to_numpy(data), data_np.astype(np.int64).cumsum())


def test_llmc_repkv() -> None:
    m = port("llmc_repkv")
    b, n, nh, nh_kv, hd = 2, 5, 8, 2, 16
    r = nh // nh_kv
    inp = rng.standard_normal((b, n, nh + 2 * nh_kv, hd)).astype(np.float32)
    out = poisoned(b * n * 3 * nh * hd)
    total = b * n * 3 * nh * hd
    m.repkv_forward_kernel1[(total + 127) // 128, 128](out, dev(inp.ravel()), b, n, nh, r, hd)
    q = inp[:, :, :nh]
    k = np.repeat(inp[:, :, nh:nh + nh_kv], r, axis=2)
    v = np.repeat(inp[:, :, nh + nh_kv:], r, axis=2)
    np.testing.assert_array_equal(to_numpy(out).reshape(b, n, 3 * nh, hd), np.concatenate([q, k, v], axis=2))


def test_scalar_prod() -> None:
    m = port("scalar_prod")
    vector_n, element_n = 67, 5000
    a = rng.standard_normal((vector_n, element_n)).astype(np.float32)
    b = rng.standard_normal((vector_n, element_n)).astype(np.float32)
    c = poisoned(vector_n)
    m.scalar_prod[40, 256](c, dev(a.ravel()), dev(b.ravel()), vector_n, element_n)
    ref = (a.astype(np.float64) * b).sum(axis=1)
    np.testing.assert_allclose(to_numpy(c), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("block_size", [128, 512])
def test_llmc_rmsnorm_forward(block_size: int) -> None:
    m = port("llmc_rmsnorm_forward")
    b, t, c = 3, 17, 768
    inp = rng.standard_normal((b * t, c)).astype(np.float32)
    weight = rng.standard_normal(c).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    rms = poisoned(b * t)
    m.rms_val_kernel[b * t, block_size](rms, dev(inp.ravel()), b * t, c, block_size)
    ref_rms = 1.0 / np.sqrt((inp.astype(np.float64) ** 2).sum(axis=1) / c)
    np.testing.assert_allclose(to_numpy(rms), ref_rms, rtol=1e-5)
    out = poisoned(b * t * c)
    m.rmsnorm_forward_kernel2[b * t * c // 128, 128](out, rms, dev(inp.ravel()), dev(weight), dev(bias), b, t, c)
    ref = inp * ref_rms[:, None] * weight + bias
    np.testing.assert_allclose(to_numpy(out).reshape(b * t, c), ref, rtol=1e-4, atol=1e-5)


def test_llmc_crossentropy_forward() -> None:
    m = port("llmc_crossentropy_forward")
    b, t, v = 4, 33, 1001
    probs = rng.uniform(0.01, 1.0, (b * t, v)).astype(np.float32)
    targets = rng.integers(0, v, b * t).astype(np.int32)
    losses = poisoned(b * t)
    m.crossentropy_forward_kernel1[(b * t + 127) // 128, 128](losses, dev(probs.ravel()), dev(targets), b, t, v)
    ref = -np.log(probs[np.arange(b * t), targets].astype(np.float64))
    np.testing.assert_allclose(to_numpy(losses), ref, rtol=1e-6, atol=1e-6)


def test_llmc_rope() -> None:
    m = port("llmc_rope")
    b, t, nh, hd = 2, 9, 4, 32
    inp = rng.standard_normal((b, t, nh, hd // 2, 2)).astype(np.float32)
    angle = rng.uniform(-3, 3, (t, hd // 2))
    freqs = np.stack([np.cos(angle), np.sin(angle)], axis=-1).astype(np.float32)
    out = poisoned(inp.size)
    total = b * t * nh * hd // 2
    m.rope_forward_kernel1[(total + 63) // 64, 64](out, dev(inp.ravel()), dev(freqs.ravel()), b, t, nh, hd)
    cos, sin = freqs[None, :, None, :, 0], freqs[None, :, None, :, 1]
    re, im = inp[..., 0], inp[..., 1]
    want = np.stack([re * cos - im * sin, re * sin + im * cos], axis=-1)
    np.testing.assert_allclose(to_numpy(out).reshape(want.shape), want, rtol=1e-5, atol=1e-6)
    dinp = poisoned(inp.size)
    m.rope_backward_inplace_kernel1[(total + 63) // 64, 64](dinp, out, dev(freqs.ravel()), b, t, nh, hd)
    np.testing.assert_allclose(to_numpy(dinp).reshape(want.shape), inp, rtol=1e-4, atol=1e-5)  # rotated back


def test_rodinia_gaussian() -> None:
    m = port("rodinia_gaussian")
    size = 70
    a_np = rng.standard_normal((size, size)).astype(np.float32) + size * np.eye(size, dtype=np.float32)
    b_np = rng.standard_normal(size).astype(np.float32)
    a, b, mult = dev(a_np.ravel()), dev(b_np), devices.zeros(size * size)
    for t in range(size - 1):
        m.fan1[(size + 511) // 512, 512](mult, a, size, t)
        m.fan2[((size + 3) // 4, (size + 3) // 4), (4, 4)](mult, a, b, size, size - t, t)
    upper = np.triu(to_numpy(a).reshape(size, size).astype(np.float64))
    x = np.linalg.solve(upper, to_numpy(b).astype(np.float64))  # Rodinia's BackSub
    np.testing.assert_allclose(x, np.linalg.solve(a_np.astype(np.float64), b_np.astype(np.float64)), rtol=1e-4, atol=1e-5)


def test_rodinia_backprop_adjust() -> None:
    m = port("rodinia_backprop_adjust")
    hid, inp_n = 16, 64
    delta = rng.standard_normal(hid + 1).astype(np.float32)
    ly = rng.standard_normal(inp_n + 1).astype(np.float32)
    w_np = rng.standard_normal((inp_n + 1) * (hid + 1)).astype(np.float32)
    oldw_np = rng.standard_normal((inp_n + 1) * (hid + 1)).astype(np.float32)
    w, oldw = dev(w_np), dev(oldw_np)
    m.bpnn_adjust_weights_cuda[(1, inp_n // 16), (16, 16)](dev(delta), hid, dev(ly), inp_n, w, oldw)
    want_w, want_old = w_np.astype(np.float64).reshape(inp_n + 1, hid + 1), oldw_np.astype(np.float64).reshape(inp_n + 1, hid + 1)
    step = 0.3 * delta[None, 1:].astype(np.float64) * ly[1:, None] + 0.3 * want_old[1:, 1:]
    want_w[1:, 1:] += step
    want_old[1:, 1:] = step
    step0 = 0.3 * delta[1:].astype(np.float64) + 0.3 * want_old[0, 1:]
    want_w[0, 1:] += step0
    want_old[0, 1:] = step0
    np.testing.assert_allclose(to_numpy(w), want_w.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(oldw), want_old.ravel(), rtol=1e-5, atol=1e-6)


def test_odd_even_merge_sort() -> None:
    m = port("odd_even_merge_sort")
    n = 4 * 1024
    keys = rng.permutation(np.arange(n, dtype=np.uint32) * 7919 % 1000003).astype(np.uint32)
    vals = np.arange(n, dtype=np.uint32)
    for direction in (1, 0):
        dst_k, dst_v = dev(np.full(n, 0x5A5A5A5A, np.uint32)), dev(np.full(n, 0x5A5A5A5A, np.uint32))
        m.odd_even_merge_sort_shared[n // 1024, 512](dst_k, dst_v, dev(keys), dev(vals), 1024, direction)
        got_k = to_numpy(dst_k).reshape(-1, 1024)
        got_v = to_numpy(dst_v).reshape(-1, 1024)
        want = np.sort(keys.reshape(-1, 1024), axis=1)
        np.testing.assert_array_equal(got_k, want if direction else want[:, ::-1])
        np.testing.assert_array_equal(keys[got_v], got_k)  # each value travelled with its key


def test_llmc_encoder_backward() -> None:
    m = port("llmc_encoder_backward")
    b, t, c, v = 3, 11, 64, 23
    dout = rng.standard_normal((b, t, c)).astype(np.float32)
    tokens = rng.integers(0, v, (b, t)).astype(np.int32)
    dwte_np = rng.standard_normal((v, c)).astype(np.float32)
    dwpe_np = rng.standard_normal((t, c)).astype(np.float32)
    dwte, dwpe = dev(dwte_np.ravel()), dev(dwpe_np.ravel())
    m.encoder_backward_kernel2[(b * t * c + 255) // 256, 256](dwte, dwpe, dev(dout.ravel()), dev(tokens.ravel()), b, t, c)
    want_te, want_pe = dwte_np.astype(np.float64), dwpe_np.astype(np.float64)
    np.add.at(want_te, tokens.ravel(), dout.reshape(b * t, c))
    want_pe += dout.sum(axis=0)
    np.testing.assert_allclose(to_numpy(dwte).reshape(v, c), want_te, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(dwpe).reshape(t, c), want_pe, rtol=1e-5, atol=1e-5)


def test_llmc_global_norm() -> None:
    m = port("llmc_global_norm")
    n = 1_000_003
    data = rng.standard_normal(n).astype(np.float32)
    out = devices.zeros(1)
    m.norm_kernel1[96, 512](out, dev(data), n)
    np.testing.assert_allclose(to_numpy(out)[0], (data.astype(np.float64) ** 2).sum(), rtol=1e-4)


def pooled_windows(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], p: tuple[int, int],
                   d: tuple[int, int] = (1, 1)) -> tuple[int, int, list[list[tuple[list[int], list[int]]]]]:
    """ATen's pooling windows over the planes of ``x`` (n, c, h, w), floor mode: the output's
    height and width, and per output position the input rows and columns it covers (those in
    the input; padding is outside)."""
    h, w = x.shape[2:]
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    windows = [[([r for r in (i * s[0] - p[0] + a * d[0] for a in range(k[0])) if 0 <= r < h],
                 [c for c in (j * s[1] - p[1] + b * d[1] for b in range(k[1])) if 0 <= c < w]) for j in range(ow)]
               for i in range(oh)]
    return oh, ow, windows


def test_aten_max_pool2d() -> None:
    """Against ATen's max_pool2d with return_indices, in NumPy: the first largest element of
    each window in row-major order, its index in the plane."""
    m = port("aten_max_pool2d")
    n, c, h, w = 2, 3, 19, 23
    kh, kw, sh, sw, ph, pw, dh, dw = 3, 2, 2, 1, 1, 1, 2, 1
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    oh, ow, windows = pooled_windows(x, (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    want = np.empty((n, c, oh, ow), np.float32)
    want_idx = np.empty((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            rows, cols = windows[i][j]
            flat = [r * w + q for r in rows for q in cols]
            values = x.reshape(n, c, h * w)[:, :, flat]
            want[:, :, i, j] = values.max(2)
            want_idx[:, :, i, j] = np.array(flat)[values.argmax(2)]
    out, mask = poisoned(want.size), poisoned(want.size, np.int64)
    m.max_pool_forward_nchw[(want.size + 127) // 128, 128](want.size, dev(x.ravel()), c, h, w, oh, ow, kh, kw, sh, sw,
                                                           ph, pw, dh, dw, out, mask)
    np.testing.assert_array_equal(to_numpy(out).reshape(want.shape), want)
    np.testing.assert_array_equal(to_numpy(mask).reshape(want.shape), want_idx)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_aten_avg_pool2d(count_include_pad: bool) -> None:
    """Against ATen's avg_pool2d in NumPy (float64): the window's sum over its size, padding
    counted (up to the padded edge) or not."""
    m = port("aten_avg_pool2d")
    n, c, h, w, k, s, p = 2, 3, 17, 20, 3, 2, 1
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    oh, ow, windows = pooled_windows(x, (k, k), (s, s), (p, p))
    want = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows, cols = windows[i][j]
            padded = (min(i * s - p + k, h + p) - (i * s - p)) * (min(j * s - p + k, w + p) - (j * s - p))
            size = padded if count_include_pad else len(rows) * len(cols)
            want[:, :, i, j] = x[:, :, rows][:, :, :, cols].astype(np.float64).sum((2, 3)) / size
    out = poisoned(want.size)
    m.avg_pool2d_out_cuda_frame[(want.size + 127) // 128, 128](want.size, dev(x.ravel()), c, h, w, oh, ow, k, k, s, s,
                                                               p, p, out, 0, count_include_pad, False)
    np.testing.assert_allclose(to_numpy(out).reshape(want.shape), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("align_corners", [True, False])
def test_aten_upsample_bilinear2d(align_corners: bool) -> None:
    """Against ATen's bilinear interpolation in NumPy (float64): the source coordinate of each
    output pixel (align_corners or half-pixel centres, clamped at 0), its two neighbours in
    each direction and their weights."""
    m = port("aten_upsample_bilinear2d")
    n, c, h1, w1, h2, w2 = 2, 3, 7, 9, 15, 20
    x = rng.standard_normal((n, c, h1, w1)).astype(np.float32)
    rh = (h1 - 1) / (h2 - 1) if align_corners else h1 / h2
    rw = (w1 - 1) / (w2 - 1) if align_corners else w1 / w2

    def taps(size_in: int, size_out: int, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        dst = np.arange(size_out, dtype=np.float64)
        src = scale * dst if align_corners else np.maximum(scale * (dst + 0.5) - 0.5, 0.0)
        low = src.astype(np.int64)
        return low, np.where(low < size_in - 1, low + 1, low), src - low

    r0, r1, lr = taps(h1, h2, np.float32(rh))
    c0, c1, lc = taps(w1, w2, np.float32(rw))
    v = x.astype(np.float64)
    top = v[:, :, r0][:, :, :, c0] * (1 - lc) + v[:, :, r0][:, :, :, c1] * lc
    bottom = v[:, :, r1][:, :, :, c0] * (1 - lc) + v[:, :, r1][:, :, :, c1] * lc
    want = top * (1 - lr)[:, None] + bottom * lr[:, None]
    out = poisoned(want.size)
    m.upsample_bilinear2d_out_frame[(h2 * w2 + 127) // 128, 128](h2 * w2, rh, rw, align_corners, dev(x.ravel()), out, n,
                                                                 c, h1, w1, h2, w2)
    np.testing.assert_allclose(to_numpy(out).reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_llmc_softmax_forward() -> None:
    m = port("llmc_softmax_forward")
    rows, cols = 77, 300
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = poisoned(rows * cols)
    m.softmax_forward_kernel1[(rows + 31) // 32, 32](out, dev(x.ravel()), rows, cols)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(to_numpy(out).reshape(rows, cols), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_rodinia_srad() -> None:
    m = port("rodinia_srad")
    rows, cols, lam = 64, 80, 0.5
    j_np, c_np = rng.uniform(0.5, 1.5, (rows, cols)).astype(np.float32), rng.uniform(0, 1, (rows, cols)).astype(np.float32)
    dn, ds, dw, de = (rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(4))
    j = dev(j_np.ravel())
    # the C reads c one block row past its end on the last block row (then replaces the value):
    # oxide's bounds check reports that read, so c gets a block row of padding here
    c_padded = np.concatenate([c_np, np.full((16, cols), np.nan, np.float32)])
    m.srad_cuda_2[(cols // 16, rows // 16), (16, 16)](dev(de.ravel()), dev(dw.ravel()), dev(dn.ravel()), dev(ds.ravel()),
                                                      j, dev(c_padded.ravel()), cols, rows, lam, 0.1)
    c64 = c_np.astype(np.float64)
    c_south = np.concatenate([c64[1:], c64[-1:]], axis=0)
    c_east = np.concatenate([c64[:, 1:], c64[:, -1:]], axis=1)
    want = j_np + 0.25 * lam * (c64 * dn + c_south * ds + c64 * dw + c_east * de)
    np.testing.assert_allclose(to_numpy(j).reshape(rows, cols), want, rtol=1e-5, atol=1e-5)


def test_rodinia_cfd_step_factor() -> None:
    m = port("rodinia_cfd_step_factor")
    nelr = 192 * 5
    density = rng.uniform(1.0, 2.0, nelr)
    momentum = rng.uniform(-0.5, 0.5, (3, nelr))
    energy = rng.uniform(3.0, 5.0, nelr)
    variables = np.concatenate([density[None], momentum, energy[None]]).astype(np.float32)
    areas = rng.uniform(0.5, 2.0, nelr).astype(np.float32)
    out = poisoned(nelr)
    m.cuda_compute_step_factor[nelr // 192, 192](nelr, dev(variables.ravel()), dev(areas), out)
    v = variables.astype(np.float64)
    speed_sqd = ((v[1:4] / v[0]) ** 2).sum(axis=0)
    pressure = 0.4 * (v[4] - 0.5 * v[0] * speed_sqd)
    want = 0.5 / (np.sqrt(areas) * (np.sqrt(speed_sqd) + np.sqrt(1.4 * pressure / v[0])))
    np.testing.assert_allclose(to_numpy(out), want, rtol=1e-5)


def test_llmc_matmul_backward_bias() -> None:
    m = port("llmc_matmul_backward_bias")
    b, t, oc, block_size = 4, 50, 96, 128
    dout = rng.standard_normal((b * t, oc)).astype(np.float32)
    dbias_np = rng.standard_normal(oc).astype(np.float32)
    dbias = dev(dbias_np)
    m.matmul_backward_bias_kernel1[oc, block_size, 0, block_size * 4](dbias, dev(dout.ravel()), b, t, oc)
    np.testing.assert_allclose(to_numpy(dbias), dbias_np + dout.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4)


def moro_inv_cnd(x: np.ndarray) -> np.ndarray:
    """The sample's MoroInvCND in float64 (quasirandomGenerator_gold.cpp's formulas)."""
    a = [2.50662823884, -18.61500062529, 41.39119773534, -25.44106049637]
    b = [-8.4735109309, 23.08336743743, -21.06224101826, 3.13082909833]
    c = [0.337475482272615, 0.976169019091719, 0.160797971491821, 2.76438810333863e-02, 3.8405729373609e-03,
         3.951896511919e-04, 3.21767881768e-05, 2.888167364e-07, 3.960315187e-07]
    negate = x >= 0x80000000
    xx = np.where(negate, 0xFFFFFFFF - x.astype(np.int64), x.astype(np.int64)).astype(np.float64)
    p1 = xx / 0xFFFFFFFF + 0.5 / 0xFFFFFFFF
    p2 = p1 - 0.5
    z2 = p2 * p2
    body = p2 * (((a[3] * z2 + a[2]) * z2 + a[1]) * z2 + a[0]) / ((((b[3] * z2 + b[2]) * z2 + b[1]) * z2 + b[0]) * z2 + 1.0)
    r = np.log(-np.log(np.maximum(p1, 1e-300)))
    tail = -sum(ck * r ** k for k, ck in enumerate(c))
    z = np.where(p2 > -0.42, body, tail)
    return np.where(negate, -z, z)  # type: ignore[no-any-return]


def test_quasirandom_inverse_cnd() -> None:
    m = port("quasirandom_inverse_cnd")
    n = 100_003
    inp = rng.integers(1, 2**32 - 1, n, dtype=np.uint64).astype(np.uint32)
    out = poisoned(n)
    m.inverse_cnd_kernel[128, 128](out, dev(inp), n)
    np.testing.assert_allclose(to_numpy(out), moro_inv_cnd(inp), rtol=2e-4, atol=2e-4)
    out = poisoned(n)
    m.inverse_cnd_kernel[128, 128](out, dev(np.zeros(0, np.uint32)), n)
    distance = 0xFFFFFFFF // (n + 1)
    np.testing.assert_allclose(to_numpy(out), moro_inv_cnd((np.arange(n, dtype=np.uint64) + 1) * distance),
                               rtol=2e-4, atol=2e-4)


def test_fp16_scalar_product() -> None:
    """half2 products accumulated with a * b + value (fma.rn.f16x2), then reduced in shared memory
    by a helper taking the array as MutSlice[f16x2]. Small integers keep every partial sum exact
    in f16 (at most 1024 per lane), so the blocks' results equal the float64 dot products."""
    m = port("fp16_scalar_product")
    threads, blocks, pairs = 128, 128, 128 * 128 * 4
    a = rng.integers(-1, 2, 2 * pairs).astype(np.float16)
    b = rng.integers(0, 3, 2 * pairs).astype(np.float16)
    results = poisoned(blocks)
    m.scalar_product_kernel_intrinsics[blocks, threads](dev(a), dev(b), results, pairs)
    per_pair = (a.astype(np.float64) * b).reshape(-1, 2).sum(axis=1)
    owner = (np.arange(pairs) // threads) % blocks
    np.testing.assert_array_equal(to_numpy(results), np.bincount(owner, weights=per_pair, minlength=blocks))
