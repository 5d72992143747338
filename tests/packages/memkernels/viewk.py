"""Views as values (docs/language.md, "Views as values"): shared arrays passed to device
functions, slices and offsets, views held in locals. Checked against NumPy by
tests/test_lang_memory_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f16, f32, i32, i64, thread

BLOCK = 256


def warp_reduce(sdata: MutSlice[f32], tid: i32) -> None:
    # the last warp of the tree reduction, as in NVIDIA's CUDA samples (reduction, reduce4),
    # with the warp's barrier made explicit instead of `volatile`
    for offset in ox.static_range(6):
        s = 32 >> offset
        v = sdata[tid] + sdata[tid + s]
        ox.warp.sync()
        sdata[tid] = v
        ox.warp.sync()


@ox.kernel
def block_sums(x: Slice[f32], out: MutSlice[f32]) -> None:
    """One partial sum per block of 256 (CUDA samples' reduce4, ported)."""
    sdata = ox.shared.array(BLOCK, f32)
    tid = thread.idx.x
    i = thread.index_1d()
    sdata[tid] = x[i] if i < len(x) else f32(0.0)
    block.sync()
    s = 128
    while s > 32:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        block.sync()
        s >>= 1
    if tid < 32:
        warp_reduce(sdata, tid)
    if tid == 0:
        with ox.unsafe():
            out[block.idx.x] = sdata[0]


def total(a: Slice[f32]) -> f32:
    acc: f32 = 0.0
    for k in range(len(a)):
        acc += a[k]
    return acc


def scale_into(dst: MutSlice[f32], src: Slice[f32], k: f32, tid: i32) -> None:
    dst[tid] = src[tid] * k


@ox.kernel
def row_sums(x: Slice[f32], cols: i32, out: DisjointSlice[f32]) -> None:
    """out[r] = sum of row r of a row-major (len(out), cols) matrix: a slice per row."""
    r = thread.index_1d()
    if r < len(out):
        start = r * cols
        row = x[start:start + cols]
        out[r] = total(row)


@ox.kernel
def suffix_sums(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """out[i] = sum of x[i:] via pointer-style offsets (x + i)."""
    i = thread.index_1d()
    if i < len(out):
        out[i] = total(x + i)


@ox.kernel
def shared_slices(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """Slices of a shared array passed to device functions, read-only and writable."""
    tile = ox.shared.array(2 * BLOCK, f32)
    tid = thread.idx.x
    i = thread.index_1d()
    tile[tid] = x[i] if i < len(x) else f32(1.5)
    block.sync()
    scale_into(tile[BLOCK:], tile, 3.0, tid)       # upper half = 3 * lower half
    block.sync()
    lo = tile[:BLOCK]
    hi = tile[BLOCK:]
    if i < len(out):
        out[i] = hi[tid] - lo[tid] + total(lo[tid:tid + 2]) if tid + 2 <= BLOCK else hi[tid]


@ox.kernel
def hillis_steele_scan(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """Inclusive scan of each block of 256 with two ping-pong buffers (GPU Gems 3, ch. 39,
    the naive double-buffered scan): views held in locals and swapped."""
    buf_0 = ox.shared.array(BLOCK, f32)
    buf_1 = ox.shared.array(BLOCK, f32)
    tid = thread.idx.x
    i = thread.index_1d()
    buf_0[tid] = x[i] if i < len(x) else f32(0.0)
    block.sync()
    src = buf_0
    dst = buf_1
    offset = 1
    while offset < BLOCK:
        v = src[tid]
        if tid >= offset:
            v += src[tid - offset]
        dst[tid] = v
        block.sync()
        src, dst = dst, src
        offset <<= 1
    if i < len(out):
        out[i] = src[tid]


@ox.kernel
def pick_buffer(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """data = buf_0 if odd else buf_1: a conditional choice of shared arrays."""
    buf_0 = ox.shared.array(BLOCK, f32)
    buf_1 = ox.shared.array(BLOCK, f32)
    tid = thread.idx.x
    i = thread.index_1d()
    v = x[i] if i < len(x) else f32(0.0)
    buf_0[tid] = v
    buf_1[tid] = -2.0 * v
    block.sync()
    odd = (block.idx.x & 1) == 1
    data = buf_0 if odd else buf_1
    if i < len(out):
        out[i] = data[BLOCK - 1 - tid]


@ox.kernel
def window_mean(x: Slice[f32], w: i64, out: DisjointSlice[f32]) -> None:
    """out[i] = mean of x[i:i + w] (a global slice, a local view, len() of a slice)."""
    i = thread.index_1d()
    if i < len(out):
        window = x[i:i + w]
        out[i] = total(window) / f32(len(window))


@ox.kernel
def tail_sum(x: Slice[f32], k: i64, out: DisjointSlice[f32]) -> None:
    """out[i] = sum of x[k:] (pointer style x + k, checked: k <= len(x))."""
    i = thread.index_1d()
    if i < len(out):
        out[i] = total(x + k)



@ox.kernel
def hinted_axpy(x: Slice[f32], h: Slice[f16], y: MutSlice[f32], hy: MutSlice[f16], z: MutSlice[f32], n: i64) -> None:
    """y[i] = 2 x[i] + y[i], hy[i] = h[i] and z[i] = x[i] - 1 through cache-hinted loads and
    stores (CUDA's __ldcs, __ldcv, __ldlu, __ldca, __ldcg and __stcs, __stcg, __stwt), each
    checked like x[i]."""
    i = thread.index_1d()
    if i < n:
        v = ox.cache.load(x, i, "cs") * 2.0 + ox.cache.load(y, i, "cv")
        with ox.unsafe():
            ox.cache.store(y, i, v, "cs")
            ox.cache.store(hy, i, ox.cache.load(h, i, "lu"), "cg")
            ox.cache.store(z, i, ox.cache.load(x, i, "ca") - ox.cache.load(z, i, "cg") * 0.0 - 1.0, "wt")
