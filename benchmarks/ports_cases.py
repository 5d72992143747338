"""The corpus of the ports benchmark (``benchmarks.ports``): one ``Spec`` per kernel.

Each ``make(torch, rng)`` allocates the inputs at the original's benchmark size (where the
original is a demonstration at a size whose run is all launch latency, a larger size, said in
its ``size``), and returns the launches of one run. The two sides launch the same grid, block and
shared memory; their arguments differ only where the signatures do (an original with
compile-time sizes takes none; numba-style originals take each array's shape, as numba passes
it; a templated original is named by its mangled instance).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks.ports import Case, Side, Spec
from benchmarks.ports_cases_util import (both, cdiv, close_to_max, cuda, dev, empty, f32, i32, i64, mostly_equal, poison,
                                        poisoner, restore, u32, u64, zeroer)

__all__ = ["SPECS", "FIRST_CORPUS", "NEW_CORPUS", "UNTIMED_PORTS"]

def random_u32(torch: Any, n: int) -> Any:
    """``n`` uniformly random 32-bit words, drawn on the device."""
    return torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int64, device="cuda").to(torch.int32).view(torch.uint32)


# ---- the first corpus: tests/packages/ports -------------------------------------------------------

def make_atax(torch: Any, rng: np.random.Generator) -> Case:
    nx = ny = 4096
    a = dev(torch, rng.standard_normal((nx, ny), dtype=np.float32).ravel())
    x = dev(torch, rng.standard_normal(ny, dtype=np.float32))
    tmp, y = torch.zeros(nx, device="cuda"), torch.zeros(ny, device="cuda")

    def body(s: Side) -> None:
        extra = () if cuda(s) else (i32(nx), i32(ny))
        s.launch("atax_kernel1", cdiv(nx, 256), 256, (a, x, tmp, *extra))
        s.launch("atax_kernel2", cdiv(ny, 256), 256, (a, y, tmp, *extra))

    def reset() -> None:
        tmp.zero_()
        y.zero_()
    return Case("4096 x 4096 f32", body, reset, lambda: [tmp, y], compare=close_to_max(1e-5),
                notes=("the original's NX/NY are #defines; the port's run-time ints",))


def make_bicg(torch: Any, rng: np.random.Generator) -> Case:
    nx = ny = 4096
    a = dev(torch, rng.standard_normal((nx, ny), dtype=np.float32).ravel())
    r = dev(torch, rng.standard_normal(nx, dtype=np.float32))
    p = dev(torch, rng.standard_normal(ny, dtype=np.float32))
    s_, q = empty(torch, ny), empty(torch, nx)

    def body(s: Side) -> None:
        extra = () if cuda(s) else (i32(nx), i32(ny))
        s.launch("bicg_kernel1", cdiv(ny, 256), 256, (a, r, s_, *extra))
        s.launch("bicg_kernel2", cdiv(nx, 256), 256, (a, p, q, *extra))
    return Case("4096 x 4096 f32", body, poisoner(s_, q), lambda: [s_, q], compare=close_to_max(1e-5),
                notes=("the original's NX/NY are #defines; the port's run-time ints",))


def make_correlation(torch: Any, rng: np.random.Generator) -> Case:
    m = n = 1024
    host = np.zeros((n + 1, m + 1), np.float32)
    host[1:, 1:] = rng.standard_normal((n, m)) * rng.uniform(1.0, 3.0, m) + rng.uniform(-1, 1, m)
    saved = dev(torch, host.ravel())
    data = saved.clone()
    mean, std = empty(torch, m + 1), empty(torch, m + 1)
    symmat = empty(torch, (m + 1) * (m + 1))

    def body(s: Side) -> None:
        extra = () if cuda(s) else (i32(m), i32(n))
        s.launch("mean_kernel", cdiv(m, 256), 256, (mean, data, *extra))
        s.launch("std_kernel", cdiv(m, 256), 256, (mean, std, data, *extra))
        s.launch("reduce_kernel", (cdiv(m, 32), cdiv(n, 8)), (32, 8), (mean, std, data, *extra))
        s.launch("corr_kernel", cdiv(m, 256), 256, (symmat, data, *extra))
    return Case("M = N = 1024 f32 (PolyBench STANDARD: 2048)", body,
                both(restore((data, saved)), poisoner(mean, std, symmat)), lambda: [mean, std, data, symmat],
                rtol=1e-4, atol=1e-6,
                notes=("the original's M/N are #defines; the port's run-time ints",
                       "timed runs normalise the already normalised data again (same work)"))


def make_bfs(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 20
    counts = rng.integers(1, 12, n).astype(np.int32)          # graph1MW_6: ~6 edges a node
    starting = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    edges = rng.integers(0, n, int(counts.sum())).astype(np.int32)
    g_start, g_count, g_edges = dev(torch, starting), dev(torch, counts), dev(torch, edges)
    mask0 = np.zeros(n, bool)
    mask0[0] = True
    cost0 = np.full(n, -1, np.int32)
    cost0[0] = 0
    saved = [dev(torch, mask0), dev(torch, np.zeros(n, bool)), dev(torch, mask0), dev(torch, cost0)]
    live = [t.clone() for t in saved]
    mask, updating, visited, cost = live
    over = torch.zeros(1, dtype=torch.bool, device="cuda")
    # levels of this graph (the host loop of the original polls g_over; the timed run launches
    # the same number of levels without the poll, so host round trips stay out of the figure)
    levels = 0
    frontier = np.array([0])
    seen = np.zeros(n, bool)
    seen[0] = True
    while len(frontier):
        cnt = counts[frontier]
        first = np.repeat(starting[frontier] - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
        nxt = edges[first + np.arange(int(cnt.sum()))]
        frontier = np.unique(nxt[~seen[nxt]])
        seen[frontier] = True
        levels += 1
    blocks = cdiv(n, 512)

    def body(s: Side) -> None:
        for _ in range(levels):
            s.launch("bfs_kernel", blocks, 512, (g_start, g_count, g_edges, mask, updating, visited, cost, i32(n)),
                     symbol="Kernel")
            s.launch("bfs_kernel2", blocks, 512, (mask, updating, visited, over, i32(n)), symbol="Kernel2")
    reset = restore(*zip(live, saved))
    return Case(f"2^20 nodes, ~6 edges each, {levels} levels", body, reset, lambda: [cost, visited], per_run=reset,
                notes=("each timed run restores the frontier, visited and cost arrays first (4 copies, both sides)",
                       "Node {starting, no_of_edges} as two int arrays on both sides, as the port has it"))


def make_hotspot(torch: Any, rng: np.random.Generator) -> Case:
    rows = cols = 1024
    pyramid, total = 2, 20
    t_chip, chip_height, chip_width = 0.0005, 0.016, 0.016
    factor_chip, spec_heat_si, k_si, max_pd, precision = 0.5, 1.75e6, 100, 3.0e6, 0.001
    temp = dev(torch, rng.uniform(320.0, 345.0, rows * cols).astype(np.float32))
    power = dev(torch, rng.uniform(0.0, 1.0, rows * cols).astype(np.float32))
    grid_height, grid_width = chip_height / rows, chip_width / cols
    cap = f32(factor_chip * spec_heat_si * t_chip * grid_width * grid_height)
    rx = f32(grid_width / (2.0 * k_si * t_chip * grid_height))
    ry = f32(grid_height / (2.0 * k_si * t_chip * grid_width))
    rz = f32(t_chip / (k_si * grid_height * grid_width))
    step = f32(precision / (max_pd / (factor_chip * t_chip * spec_heat_si)))
    small = 16 - pyramid * 2
    grid = (cdiv(cols, small), cdiv(rows, small))
    bufs = [temp.clone(), empty(torch, rows * cols)]
    final = [bufs[0]]

    def body(s: Side) -> None:
        src, dst = 1, 0
        for t in range(0, total, pyramid):
            src, dst = dst, src
            s.launch("calculate_temp", grid, (16, 16), (i32(min(pyramid, total - t)), power, bufs[src], bufs[dst],
                                                         i32(cols), i32(rows), i32(pyramid), i32(pyramid), cap, rx, ry,
                                                         rz, step, f32(0.001)))
        final[0] = bufs[dst]

    def reset() -> None:
        bufs[0].copy_(temp)
        poison(bufs[1])
    return Case("1024 x 1024, pyramid 2, 20 steps (10 launches)", body, reset, lambda: [final[0]], rtol=1e-5, atol=1e-3,
                notes=("the original computes `2.0*temp` in double (a double literal), the port in f32",))


def make_kmeans_point(torch: Any, rng: np.random.Generator) -> Case:
    npoints, nfeatures, nclusters = 494020, 16, 5
    feats = rng.uniform(-3.0, 3.0, (nfeatures, npoints)).astype(np.float32)   # feature-major
    table = np.zeros(32 * 16, np.float32)
    table[:nclusters * nfeatures] = rng.uniform(-3.0, 3.0, nclusters * nfeatures)
    features = dev(torch, feats.ravel())
    membership = empty(torch, npoints, torch.int32)
    blocks = cdiv(npoints, 256)
    per_dim = int(np.sqrt(blocks)) + 1

    def body(s: Side) -> None:
        s.launch("kmeans_point", (per_dim, per_dim), 256, (features, i32(nfeatures), i32(npoints), i32(nclusters),
                                                           membership), symbol="kmeansPoint")
    return Case("494020 points (kdd_cup), 16 features, 5 clusters", body, poisoner(membership), lambda: [membership],
                compare=mostly_equal(1e-4, max_step=nclusters),
                prepare=lambda s: s.write_constant("c_clusters", "c_clusters", table))


def make_needleman_wunsch(torch: Any, rng: np.random.Generator) -> Case:
    bs, block_width, penalty = 16, 128, 10
    cols = rows = block_width * bs + 1
    reference = dev(torch, rng.integers(-4, 12, rows * cols).astype(np.int32))
    init = np.zeros((rows, cols), np.int32)
    init[0, :] = -penalty * np.arange(cols)
    init[:, 0] = -penalty * np.arange(rows)
    saved = dev(torch, init.ravel())
    matrix = saved.clone()

    def body(s: Side) -> None:
        args = (reference, matrix, i32(cols), i32(penalty))
        for i in range(1, block_width + 1):
            s.launch("needle_cuda_shared_1", i, bs, (*args, i32(i), i32(block_width)))
        for i in range(block_width - 1, 0, -1):
            s.launch("needle_cuda_shared_2", i, bs, (*args, i32(i), i32(block_width)))
    return Case("2048 x 2048, penalty 10 (255 launches)", body, restore((matrix, saved)), lambda: [matrix])


def make_pathfinder(torch: Any, rng: np.random.Generator) -> Case:
    rows, cols, pyramid = 100, 100000, 20
    wall = rng.integers(1, 10, (rows, cols)).astype(np.int32)
    gpu_wall = dev(torch, wall[1:].ravel())
    first = dev(torch, wall[0])
    results = [first.clone(), empty(torch, cols, torch.int32)]
    small = 256 - pyramid * 2
    block_cols = cdiv(cols, small)
    final = [results[0]]

    def body(s: Side) -> None:
        src, dst = 1, 0
        for t in range(0, rows - 1, pyramid):
            src, dst = dst, src
            s.launch("dynproc_kernel", block_cols, 256, (i32(min(pyramid, rows - t - 1)), gpu_wall, results[src],
                                                         results[dst], i32(cols), i32(rows), i32(t), i32(pyramid)))
        final[0] = results[dst]

    def reset() -> None:
        results[0].copy_(first)
        poison(results[1])
    return Case("100000 columns x 100 rows, pyramid 20", body, reset, lambda: [final[0]])


def make_bitonic_sort(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 20
    src = dev(torch, rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
    dst = empty(torch, n, torch.uint32)

    def body(s: Side) -> None:
        s.launch("bitonic_sort_shared", n // 1024, 512, (dst, src, u32(1024), u32(1)), symbol="bitonicSortShared")
    return Case("2^20 keys in arrays of 1024", body, poisoner(dst), lambda: [dst])


def make_black_scholes(torch: Any, rng: np.random.Generator) -> Case:
    n = 4_000_000
    price = dev(torch, rng.uniform(5.0, 30.0, n).astype(np.float32))
    strike = dev(torch, rng.uniform(1.0, 100.0, n).astype(np.float32))
    years = dev(torch, rng.uniform(0.25, 10.0, n).astype(np.float32))
    call, put = empty(torch, n), empty(torch, n)

    def body(s: Side) -> None:
        extra = (i32(n),) if cuda(s) else ()
        s.launch("black_scholes", cdiv(n, 128), 128, (call, put, price, strike, years, f32(0.02), f32(0.30), *extra),
                 symbol="BlackScholesGPU")
    return Case("4M options", body, poisoner(call, put), lambda: [call, put], rtol=1e-4, atol=1e-4)


def make_block_scan(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 24
    x = dev(torch, rng.integers(0, 1 << 16, n).astype(np.uint32))
    out = empty(torch, n, torch.uint32)
    totals = empty(torch, n // 1024, torch.uint32)

    def body(s: Side) -> None:
        s.launch("block_inclusive_scan", n // 1024, 1024, (x, out, totals, u32(n)))
    return Case("2^24 u32", body, poisoner(out, totals), lambda: [out, totals])


def make_conv2d_tiled(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 4096
    image = dev(torch, rng.standard_normal(h * w, dtype=np.float32))
    mask = rng.uniform(-1.0, 1.0, (5, 5)).astype(np.float32)
    out = empty(torch, h * w)

    def body(s: Side) -> None:
        s.launch("convolution_2d_tiled", (cdiv(w, 12), cdiv(h, 12)), (16, 16), (out, image, i32(h), i32(w), i32(w)),
                 symbol="convolution_2D_tiled_kernel")
    return Case("4096 x 4096 f32, 5 x 5 mask", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-5,
                prepare=lambda s: s.write_constant("M", "M", mask))


def make_convolution_columns(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 3072
    src = dev(torch, rng.standard_normal(h * w, dtype=np.float32))
    taps = rng.uniform(0.1, 1.0, 17).astype(np.float32)
    out = empty(torch, h * w)

    def body(s: Side) -> None:
        s.launch("convolution_columns", (w // 16, h // 64), (16, 8), (out, src, i32(w), i32(h), i32(w)),
                 symbol="convolutionColumnsKernel")
    return Case("3072 x 3072 f32, radius 8", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-5,
                prepare=lambda s: s.write_constant("c_Kernel", "c_Kernel", taps))


def make_convolution_rows(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 3072
    src = dev(torch, rng.standard_normal(h * w, dtype=np.float32))
    taps = dev(torch, rng.uniform(0.1, 1.0, 17).astype(np.float32))
    out = empty(torch, h * w)

    def body(s: Side) -> None:
        s.launch("convolution_rows", (w // 128, h // 4), (16, 4), (out, src, taps, i32(w), i32(h), i32(w)),
                 symbol="convolutionRowsKernel")
    return Case("3072 x 3072 f32, radius 8", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-5)


def make_fast_matmul(torch: Any, rng: np.random.Generator) -> Case:
    n = 2048
    a = dev(torch, rng.standard_normal((n, n), dtype=np.float32))
    b = dev(torch, rng.standard_normal((n, n), dtype=np.float32))
    c = empty(torch, (n, n))

    def body(s: Side) -> None:
        g = n // 16
        if cuda(s):
            s.launch("fast_matmul", (g, g), (16, 16), (a, i64(n), i64(n), b, i64(n), i64(n), c, i64(n), i64(n)))
        else:
            s.launch("fast_matmul", (g, g), (16, 16), (a, b, c))
    return Case("2048^3 f32", body, poisoner(c), lambda: [c], compare=close_to_max(1e-5))


def make_fast_walsh(torch: Any, rng: np.random.Generator) -> Case:
    log2n, batch = 11, 4096
    n = 1 << log2n
    x = dev(torch, rng.standard_normal(batch * n, dtype=np.float32))
    out = empty(torch, batch * n)

    def body(s: Side) -> None:
        s.launch("fwt_batch1_kernel", batch, n // 4, (out, x, i32(log2n)), shared=n * 4, symbol="fwtBatch1Kernel")
    return Case("4096 vectors of 2048 (log2Data 23)", body, poisoner(out), lambda: [out], compare=close_to_max(1e-5))


def make_gelu(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 26
    x = torch.randn(n, device="cuda") * 3
    y = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("gelu_kernel", cdiv(n, 256), 256, (x, y, i64(n)), symbol="_Z11gelu_kernelIfEvPKT_PS0_l")
    return Case("2^26 f32", body, poisoner(y), lambda: [y], rtol=1e-6, atol=1e-6)


def make_grid_sync_reduce(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 25
    x = torch.randn(n, device="cuda")
    blocks = torch.cuda.get_device_properties(0).multi_processor_count * 4
    out = empty(torch, blocks)

    def body(s: Side) -> None:
        s.launch("reduce_single_pass", blocks, 256, (x, out, u32(n) if cuda(s) else i32(n)),
                 symbol="reduceSinglePassMultiBlockCG")
    return Case(f"2^25 f32, {blocks} blocks of 256 (4 per SM)", body, poisoner(out), lambda: [out[:1]],
                rtol=1e-4, atol=1e-2, cooperative=("reduce_single_pass",))


def make_histogram256(torch: Any, rng: np.random.Generator) -> Case:
    words = 1 << 24
    data = random_u32(torch, words)
    partial = empty(torch, 240 * 256, torch.uint32)

    def body(s: Side) -> None:
        s.launch("histogram256", 240, 192, (partial, data, u32(words)), symbol="histogram256Kernel")
    return Case("64 MB, 240 blocks of 192", body, poisoner(partial), lambda: [partial])


def make_histogram64(torch: Any, rng: np.random.Generator) -> Case:
    count = 1 << 22                                   # uint4 elements: 64 MB
    data = random_u32(torch, 4 * count)
    blocks = cdiv(16 * count, 128 * 240)
    partial = empty(torch, blocks * 64, torch.uint32)

    def body(s: Side) -> None:
        s.launch("histogram64_kernel", blocks, 128, (partial, data, u32(count)), symbol="histogram64Kernel")
    return Case(f"64 MB, {blocks} blocks of 128", body, poisoner(partial), lambda: [partial])


def make_laplace_jacobi(torch: Any, rng: np.random.Generator) -> Case:
    n = m = 4096
    a = dev(torch, rng.uniform(0.5, 2.0, (n, m)).astype(np.float32))
    a_new = empty(torch, (n, m))
    error = torch.zeros(1, device="cuda")

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("jacobi_sweep", (m // 16, n // 16), (16, 16), (a, i64(n), i64(m), a_new, error))
        else:
            s.launch("jacobi_sweep", (m // 16, n // 16), (16, 16), (a, a_new, error))
    return Case("4096 x 4096 f32", body, both(poisoner(a_new), error.zero_), lambda: [a_new, error], rtol=1e-6, atol=1e-6)


def make_layer_norm(torch: Any, rng: np.random.Generator) -> Case:
    rows, n, eps = 4096, 4096, 1e-5
    x = torch.as_tensor(rng.standard_normal((rows, n)) * 2 + 0.5, dtype=torch.float16, device="cuda")
    w = torch.as_tensor(rng.uniform(0.5, 1.5, n), dtype=torch.float16, device="cuda")
    b = torch.as_tensor(rng.uniform(-0.5, 0.5, n), dtype=torch.float16, device="cuda")
    y = empty(torch, rows * n, torch.float16)
    mean, rstd = empty(torch, rows), empty(torch, rows)

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("layer_norm_fwd", rows, 256, (x, y, w, b, mean, rstd, i32(n), f32(eps)),
                     symbol="_Z14layer_norm_fwdI6__halfEvPKT_PS1_S3_S3_PfS5_if")
        else:
            s.launch("layer_norm_fwd", rows, 256, (x, y, w, b, mean, rstd, f32(eps)))
    return Case("4096 x 4096 f16", body, poisoner(y, mean, rstd), lambda: [y, mean, rstd], rtol=2e-3, atol=2e-3)


def make_mandelbrot(torch: Any, rng: np.random.Generator) -> Case:
    h, w, iters = 1024, 1536, 20
    image = empty(torch, (h, w), torch.uint8)

    def body(s: Side) -> None:
        grid = (cdiv(w, 16), cdiv(h, 16))
        if cuda(s):
            s.launch("mandel_kernel", grid, (16, 16), (f32(-2.0), f32(1.0), f32(-1.0), f32(1.0), image, i64(h), i64(w),
                                                       i32(iters)))
        else:
            s.launch("mandel_kernel", grid, (16, 16), (f32(-2.0), f32(1.0), f32(-1.0), f32(1.0), image, i32(iters)))
    return Case("1536 x 1024, 20 iterations", body, poisoner(image), lambda: [image],
                compare=mostly_equal(1e-3, max_step=iters))


def make_matrix_mul(torch: Any, rng: np.random.Generator) -> Case:
    bs = 32
    h_a, w_a, w_b = 10 * bs, 10 * bs, 20 * bs          # the sample: dimsA 320 x 320, dimsB 640 x 320
    a = dev(torch, rng.standard_normal(h_a * w_a, dtype=np.float32))
    b = dev(torch, rng.standard_normal(w_a * w_b, dtype=np.float32))
    c = empty(torch, h_a * w_b)

    def body(s: Side) -> None:
        s.launch("matrix_mul_cuda", (w_b // bs, h_a // bs), (bs, bs), (c, a, b, i32(w_a), i32(w_b)), constexprs=(bs,),
                 symbol="_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii")
    return Case("A 320 x 320, B 320 x 640, block 32", body, poisoner(c), lambda: [c], compare=close_to_max(1e-5))


def make_median_filter(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 4096
    img = dev(torch, rng.standard_normal((h, w), dtype=np.float32))
    out = empty(torch, (h, w))

    def body(s: Side) -> None:
        grid = (cdiv(w, 16), cdiv(h, 16))
        if cuda(s):
            s.launch("median_filter", grid, (16, 16), (img, i64(h), i64(w), out, i64(h), i64(w)))
        else:
            s.launch("median_filter", grid, (16, 16), (img, out))
    return Case("4096 x 4096 f32", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_nbody(torch: Any, rng: np.random.Generator) -> Case:
    n, soft2 = 32768, 0.01
    pos = np.empty((n, 4), np.float32)
    pos[:, :3] = rng.uniform(-1.0, 1.0, (n, 3))
    pos[:, 3] = rng.uniform(0.5, 1.5, n)
    d_pos = dev(torch, pos.ravel())
    accel = empty(torch, 4 * n)

    def body(s: Side) -> None:
        s.launch("compute_body_accel", n // 128, 128, (d_pos, accel, i32(n), f32(soft2)), symbol="integrateBodiesAccel")
    return Case("32768 bodies", body, poisoner(accel), lambda: [accel], compare=close_to_max(1e-5))


def make_philox_dropout(torch: Any, rng: np.random.Generator) -> Case:
    n, p = 1 << 24, 0.5
    seed = u64(int(rng.integers(1, 2**63)))
    x = dev(torch, rng.uniform(0.5, 2.0, n).astype(np.float32))
    out = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("seeded_dropout", cdiv(n, 256), 256, (x, out, i32(n), f32(p), seed))
    return Case("2^24 f32, p = 0.5", body, poisoner(out), lambda: [out], rtol=1e-6, atol=0)


def make_radix_histogram(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 26
    keys = random_u32(torch, n)
    counts = torch.zeros(256, dtype=torch.int32, device="cuda").view(torch.uint32)
    blocks = torch.cuda.get_device_properties(0).multi_processor_count * 2

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("radix_histogram", blocks, 256, (keys, u64(n), counts, u32(8)),
                     symbol="_Z15radix_histogramIjEvPKT_mPjj")
        else:
            s.launch("radix_histogram", blocks, 256, (keys, counts, u32(8)))
    return Case(f"2^26 u32 keys, digit 1 of 4, {blocks} blocks", body, zeroer(counts), lambda: [counts])


def make_random_walk(torch: Any, rng: np.random.Generator) -> Case:
    walks, steps = 1 << 20, 1000
    seed = u64(int(rng.integers(1, 2**63)))
    final_pos, max_dist = empty(torch, walks, torch.int32), empty(torch, walks, torch.int32)

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("random_walk", walks // 128, 128, (seed, i32(steps), final_pos, i64(walks), max_dist, i64(walks)))
        else:
            s.launch("random_walk", walks // 128, 128, (seed, i32(steps), final_pos, max_dist))
    return Case("2^20 walks of 1000 steps", body, poisoner(final_pos, max_dist), lambda: [final_pos, max_dist])


def make_ray_spheres(torch: Any, rng: np.random.Generator) -> Case:
    dim = 1024
    table = np.empty((20, 7), np.float32)              # r, g, b, radius, x, y, z (the port's table)
    table[:, 0:3] = rng.uniform(0.0, 1.0, (20, 3))
    table[:, 3] = rng.uniform(20.0, 120.0, 20)
    table[:, 4:7] = rng.uniform(-500.0, 500.0, (20, 3))
    struct_table = np.ascontiguousarray(table[:, [0, 2, 1, 3, 4, 5, 6]])   # struct Sphere {r, b, g, radius, x, y, z}
    image = empty(torch, dim * dim * 4, torch.uint8)

    def body(s: Side) -> None:
        s.launch("ray_kernel", (dim // 16, dim // 16), (16, 16), (image, i32(dim)), symbol="kernel")
    return Case("1024 x 1024, 20 spheres", body, poisoner(image), lambda: [image], compare=mostly_equal(1e-3),
                prepare=lambda s: s.write_constant("SPHERE_TABLE", "s", table, struct_table))


def make_reduce6(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 24
    x = torch.randn(n, device="cuda")
    out = empty(torch, 64)

    def body(s: Side) -> None:
        s.launch("reduce6", 64, 256, (x, out, u32(n)), constexprs=(256, True), symbol="_Z7reduce6ILj256ELb1EEvPKfPfj")
    return Case("2^24 f32, 64 blocks of 256", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-3)


def make_reduction(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 24
    x = torch.randn(n, device="cuda")
    blocks = n // 512
    out = empty(torch, blocks)

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("reduce4", blocks, 256, (x, out, u32(n)), symbol="_Z7reduce4ILj256EEvPfS0_j")
        else:
            s.launch("reduce4", blocks, 256, (x, out, i32(n)), constexprs=(256,))
    return Case("2^24 f32, blocks of 256", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-4)


def make_scan_blelloch(torch: Any, rng: np.random.Generator) -> Case:
    blocks = 1 << 16
    x = torch.randint(-8, 9, (blocks * 1024,), device="cuda").float()
    out = empty(torch, blocks * 1024)

    def body(s: Side) -> None:
        s.launch("prescan", blocks, 512, (out, x))
    return Case("2^16 blocks of 1024 f32", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_sequential_rows(torch: Any, rng: np.random.Generator) -> Case:
    rows, cols = 1024, 1024
    start = np.full((rows, cols), 0x5A5A, np.int32)
    start[0] = rng.integers(-1000, 1000, cols)
    saved = dev(torch, start)
    m = saved.clone()

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("sequential_rows", cols // 128, 128, (m, i64(rows), i64(cols)))
        else:
            s.launch("sequential_rows", cols // 128, 128, (m,))
    return Case("1024 rows x 1024 (1023 grid barriers)", body, restore((m, saved)), lambda: [m],
                cooperative=("sequential_rows",))


def make_simple_atomics(torch: Any, rng: np.random.Generator) -> Case:
    init = rng.integers(1, 1000, 11).astype(np.int32)
    init[8] = init[10] = 0xFF
    uinit = rng.integers(1, 100, 11).astype(np.uint32)
    s_o, s_u = dev(torch, init), dev(torch, uinit)
    odata, udata = s_o.clone(), s_u.clone()
    det = [0, 1, 3, 4, 8, 9, 10]                  # exch and CAS (2, 7) depend on the order

    def body(s: Side) -> None:
        s.launch("test_kernel", 64, 256, (odata, udata), symbol="testKernel")

    def compare(got: list[Any], ref: list[Any]) -> None:
        gu, ru = got[1].view(torch.int32), ref[1].view(torch.int32)
        if not (got[0][det].equal(ref[0][det]) and gu[5:7].equal(ru[5:7])):
            raise AssertionError(f"atomics: {got[0].tolist()} {gu.tolist()} vs {ref[0].tolist()} {ru.tolist()}")
    return Case("64 blocks of 256, 11 atomics each", body, restore((odata, s_o), (udata, s_u)),
                lambda: [odata, udata], compare=compare)


def make_simple_templates(torch: Any, rng: np.random.Generator) -> Case:
    x = dev(torch, rng.standard_normal(256, dtype=np.float32))
    out = empty(torch, 256)

    def body(s: Side) -> None:
        s.launch("test_kernel", 1, 256, (x, out), shared=256 * 4, symbol="_Z10testKernelIfEvPT_S1_")
    return Case("one block of 256 f32 (the sample's)", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_sobel(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 4096
    img = dev(torch, rng.integers(0, 256, (h, w)).astype(np.uint8))
    out = empty(torch, (h, w), torch.uint8)

    def body(s: Side) -> None:
        grid = (cdiv(w, 16), cdiv(h, 16))
        if cuda(s):
            s.launch("sobel_tex", grid, (16, 16), (img, i64(h), i64(w), out, i64(h), i64(w), f32(0.625)),
                     symbol="SobelTex")
        else:
            s.launch("sobel_tex", grid, (16, 16), (img, out, f32(0.625)))
    return Case("4096 x 4096 u8 (the sample's lena: 512 x 512)", body, poisoner(out), lambda: [out])


def make_softmax_rows(torch: Any, rng: np.random.Generator) -> Case:
    rows, cols = 4096, 4096
    x = dev(torch, (rng.standard_normal((rows, cols)) * 4).astype(np.float32))
    out = empty(torch, (rows, cols))

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("softmax", rows, 256, (x, i64(rows), i64(cols), out, i64(rows), i64(cols)))
        else:
            s.launch("softmax", rows, 256, (x, out))
    return Case("4096 x 4096 f32", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-9)


def make_spmv_csr_vector(torch: Any, rng: np.random.Generator) -> Case:
    rows = cols = 1 << 20
    per_row = 32
    ap = dev(torch, (np.arange(rows + 1) * per_row).astype(np.int32))
    aj = torch.randint(0, cols, (rows * per_row,), dtype=torch.int32, device="cuda")
    ax = torch.randn(rows * per_row, device="cuda")
    x = dev(torch, rng.standard_normal(cols, dtype=np.float32))
    y = empty(torch, rows)
    blocks = torch.cuda.get_device_properties(0).multi_processor_count * 16

    def body(s: Side) -> None:
        s.launch("spmv_csr_vector", blocks, 128, (i32(rows), ap, aj, ax, x, y), symbol="spmv_csr_vector_kernel")
    return Case(f"2^20 rows, 32 non-zeros each, {blocks} blocks of 128", body, poisoner(y), lambda: [y],
                rtol=1e-5, atol=1e-5)


def make_transpose_coalesced(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 8192
    x = torch.randn(h * w, device="cuda")
    out = empty(torch, h * w)

    def body(s: Side) -> None:
        s.launch("transpose_no_bank_conflicts", (w // 32, h // 32), (32, 8), (out, x, i32(w), i32(h)),
                 symbol="transposeNoBankConflicts")
    return Case("8192 x 8192 f32 (the sample's: 1024 x 1024)", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_vote_intrinsics(torch: Any, rng: np.random.Generator) -> Case:
    data = rng.integers(1, 2**32, (4, 32), dtype=np.uint64).astype(np.uint32)
    data[0] = 0
    data[1] = 0
    data[1, 5] = 7
    data[3] *= rng.integers(0, 2, 32).astype(np.uint32)
    d = dev(torch, data.ravel())
    r1, r2 = empty(torch, 128, torch.uint32), empty(torch, 128, torch.uint32)
    info = torch.zeros(3 * 96, dtype=torch.bool, device="cuda")

    def body(s: Side) -> None:
        s.launch("vote_any_kernel1", 1, 128, (d, r1, i32(128)), symbol="VoteAnyKernel1")
        s.launch("vote_all_kernel2", 1, 128, (d, r2, i32(128)), symbol="VoteAllKernel2")
        s.launch("vote_any_kernel3", 1, 96, (info, i32(32)), symbol="VoteAnyKernel3")
    return Case("one block of 4 warps (the sample's)", body, both(poisoner(r1, r2), info.zero_), lambda: [r1, r2, info])


def make_warp_aggregated_filter(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 24
    src = torch.randn(n, device="cuda")
    dst = empty(torch, n)
    nres = torch.zeros(1, dtype=torch.int32, device="cuda")

    def body(s: Side) -> None:
        s.launch("filter_k", cdiv(n, 256), 256, (dst, nres, src, i32(n)))

    def compare(got: list[Any], ref: list[Any]) -> None:
        k = int(ref[1].item())
        if int(got[1].item()) != k:
            raise AssertionError(f"kept {int(got[1].item())} elements, the original {k}")
        if not torch.equal(torch.sort(got[0][:k]).values, torch.sort(ref[0][:k]).values):
            raise AssertionError("the kept elements differ from the original's (as multisets)")
    return Case("2^24 f32, half kept", body, both(poisoner(dst), nres.zero_), lambda: [dst, nres], compare=compare,
                per_run=nres.zero_, notes=("each timed run zeroes the count first (both sides)",))


def spec(name: str, source: str, make: Callable[[Any, np.random.Generator], Case], **kw: Any) -> Spec:
    return Spec(name=name, source=source, origin=kw.pop("origin", "tests/packages/ports"), make=make, **kw)


FIRST_CORPUS: tuple[Spec, ...] = (
    spec("atax", "PolyBench-GPU 1.0 CUDA/ATAX/atax.cu", make_atax),
    spec("bfs", "Rodinia 3.1 cuda/bfs (Kernel, Kernel2)", make_bfs),
    spec("bicg", "PolyBench-GPU 1.0 CUDA/BICG/bicg.cu", make_bicg),
    spec("bitonic_sort", "cuda-samples sortingNetworks/bitonicSort.cu (bitonicSortShared)", make_bitonic_sort),
    spec("black_scholes", "cuda-samples BlackScholes/BlackScholes_kernel.cuh", make_black_scholes, fast_math=True),
    spec("block_scan", "CUB block_scan_warp_scans pattern (hand-written)", make_block_scan),
    spec("conv2d_tiled", "Kirk & Hwu, PMPP 3rd ed. ch. 7 (convolution_2D_tiled_kernel)", make_conv2d_tiled),
    spec("convolution_columns", "cuda-samples convolutionSeparable (convolutionColumnsKernel)",
         make_convolution_columns),
    spec("convolution_rows", "cuda-samples convolutionSeparable (convolutionRowsKernel)", make_convolution_rows),
    spec("correlation", "PolyBench-GPU 1.0 CUDA/CORR/correlation.cu", make_correlation),
    spec("fast_matmul", "numba-cuda docs, Matrix multiplication (fast_matmul)", make_fast_matmul),
    spec("fast_walsh", "cuda-samples fastWalshTransform (fwtBatch1Kernel)", make_fast_walsh),
    spec("gelu", "PyTorch ATen ActivationGeluKernel.cu (GeluType::None)", make_gelu),
    spec("grid_sync_reduce", "cuda-samples reductionMultiBlockCG", make_grid_sync_reduce),
    spec("histogram256", "cuda-samples histogram/histogram256.cu", make_histogram256),
    spec("histogram64", "cuda-samples histogram/histogram64.cu", make_histogram64),
    spec("hotspot", "Rodinia 3.1 cuda/hotspot (calculate_temp)", make_hotspot),
    spec("kmeans_point", "Rodinia 3.1 cuda/kmeans (kmeansPoint)", make_kmeans_point),
    spec("laplace_jacobi", "numba-cuda stencil examples (Jacobi sweep)", make_laplace_jacobi),
    spec("layer_norm", "Triton tutorial 05-layer-norm as SIMT (apex/PyTorch shape)", make_layer_norm),
    spec("mandelbrot", "numba-cuda docs, Mandelbrot", make_mandelbrot),
    spec("matrix_mul", "cuda-samples matrixMul (MatrixMulCUDA<32>)", make_matrix_mul),
    spec("median_filter", "numba-cuda image-filter examples (3x3 median)", make_median_filter),
    spec("nbody", "cuda-samples nbody/bodysystemcuda_impl.h", make_nbody),
    spec("needleman_wunsch", "Rodinia 3.1 cuda/nw (needle_cuda_shared_1/2)", make_needleman_wunsch),
    spec("pathfinder", "Rodinia 3.1 cuda/pathfinder (dynproc_kernel)", make_pathfinder),
    spec("philox_dropout", "Triton tutorial 04-low-memory-dropout as SIMT (Philox4x32-10)", make_philox_dropout),
    spec("radix_histogram", "CUB agent_radix_sort_histogram pattern (hand-written)", make_radix_histogram),
    spec("random_walk", "numba-cuda random examples (xorshift64* walk)", make_random_walk),
    spec("ray_spheres", "CUDA by Example ch. 6 ray.cu (constant memory)", make_ray_spheres),
    spec("reduce6", "cuda-samples reduction_kernel.cu (reduce6<256, true>)", make_reduce6),
    spec("reduction", "cuda-samples reduction_kernel.cu (reduce4<256>)", make_reduction),
    spec("scan_blelloch", "GPU Gems 3 ch. 39, Example 39-2 (prescan)", make_scan_blelloch),
    spec("sequential_rows", "numba-cuda docs, Cooperative Groups (sequential_rows)", make_sequential_rows),
    spec("simple_atomics", "cuda-samples simpleAtomicIntrinsics (testKernel)", make_simple_atomics),
    spec("simple_templates", "cuda-samples simpleTemplates (testKernel<float>)", make_simple_templates),
    spec("sobel", "cuda-samples SobelFilter (ComputeSobel, SobelTex)", make_sobel),
    spec("softmax_rows", "Triton tutorial 02-fused-softmax as SIMT", make_softmax_rows),
    spec("spmv_csr_vector", "CUSP csr_vector_spmv.h (spmv_csr_vector_kernel)", make_spmv_csr_vector),
    spec("transpose_coalesced", "cuda-samples transpose (transposeNoBankConflicts)", make_transpose_coalesced),
    spec("vote_intrinsics", "cuda-samples simpleVoteIntrinsics", make_vote_intrinsics),
    spec("warp_aggregated_filter", "NVIDIA blog, warp-aggregated atomics (filter_k)", make_warp_aggregated_filter),
)

from benchmarks.ports_cases_new import NEW_CORPUS  # noqa: E402

SPECS: tuple[Spec, ...] = FIRST_CORPUS + NEW_CORPUS

# Ports in tests/packages/ports that are not timed yet: issue 29's second probe (kernels ported as
# first written, to measure the language; docs/language.md "Public kernels as first written"). Each
# is checked against NumPy/torch by its GPU test; none has its nvcc original in ports_cuda/ yet, so
# none is a case. A port leaves this set when its case and original are added.
UNTIMED_PORTS: frozenset[str] = frozenset({
    "aten_avg_pool2d", "aten_max_pool2d", "aten_upsample_bilinear2d", "fp16_scalar_product",
    "llmc_crossentropy_forward", "llmc_encoder_backward", "llmc_global_norm", "llmc_matmul_backward_bias",
    "llmc_repkv", "llmc_rmsnorm_forward", "llmc_rope", "llmc_softmax_forward", "odd_even_merge_sort",
    "quasirandom_inverse_cnd", "rodinia_backprop_adjust", "rodinia_cfd_step_factor", "rodinia_gaussian",
    "rodinia_srad", "scalar_prod", "shfl_scan",
})
