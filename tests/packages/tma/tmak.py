"""Kernels of tests/test_tma_gpu.py: TMA loads into shared memory and stores out of it, the
zero fill of boxes past the tensor's edge, a ring of stages guarded by mbarriers, cluster ranks."""
import oxide as ox
from oxide import f32, i32, thread, block, MutSlice

T = ox.TypeVar("T", f32, ox.f16)

ROWS = 16  # the box: 16 x 32 elements
COLS = 32
STAGES = 3


@ox.kernel
def tile_copy(src: ox.tma.Descriptor[T, 2], dst: ox.tma.Descriptor[T, 2]) -> None:
    """dst = src, one box per block: a TMA load, then a TMA store of the same shared tile."""
    tile = ox.shared.array((ROWS, COLS), T)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars, 1)
        ox.mbarrier.fence_init()
    block.sync()
    row = block.idx.y * ROWS
    col = block.idx.x * COLS
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
        ox.tma.load(src, bars, tile, row, col)
    ox.mbarrier.wait(bars, 0)
    if t == 0:
        with ox.unsafe():
            ox.tma.store(dst, tile, row, col)
        ox.tma.store_commit()
        ox.tma.store_wait(0)


@ox.kernel
def tile_transpose(src: ox.tma.Descriptor[f32, 2], dst: ox.tma.Descriptor[f32, 2]) -> None:
    """dst = src.T: a 32 x 32 box loaded by TMA, transposed in shared memory by the threads,
    stored by TMA (after the async-proxy fence that makes the threads' writes visible to it)."""
    tile = ox.shared.array((32, 32), f32)
    out = ox.shared.array((32, 32), f32)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars[0], 1)
        ox.mbarrier.fence_init()
    block.sync()
    row = block.idx.y * 32
    col = block.idx.x * 32
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars[0], ox.tma.box_bytes(src))
        ox.tma.load(src, bars[0], tile, row, col)
    ox.mbarrier.wait(bars[0], 0)
    for k in range(t, 32 * 32, block.dim.x):
        r = k // 32
        c = k % 32
        out[c, r] = tile[r, c]
    with ox.unsafe():
        ox.asm("fence.proxy.async.shared::cta;", memory=True)
    block.sync()
    if t == 0:
        with ox.unsafe():
            ox.tma.store(dst, out, col, row)
        ox.tma.store_commit()
        ox.tma.store_wait(0)


@ox.kernel
def box_to_global(src: ox.tma.Descriptor[f32, 2], row: i32, col: i32, out: MutSlice[f32]) -> None:
    """One box at (row, col), which may reach past the tensor, written whole to out: the
    elements outside the tensor must read as zero."""
    tile = ox.shared.array(ROWS * COLS, f32)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars, 1)
        ox.mbarrier.fence_init()
    block.sync()
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
        ox.tma.load(src, bars, tile, row, col)
    ox.mbarrier.wait(bars, 0)
    for k in range(t, ROWS * COLS, block.dim.x):
        with ox.unsafe():
            out[k] = tile[k]


@ox.kernel
def ring(src: ox.tma.Descriptor[f32, 2], tiles: i32, out: MutSlice[f32]) -> None:
    """out = 2 * src + 1 through a ring of STAGES shared tiles of 8 x 32: thread 0 loads tile
    k into stage k % STAGES once every thread has released it (the "empty" barrier of the
    previous round), every thread waits for the "full" barrier at phase (k // STAGES) % 2."""
    tile = ox.shared.array(STAGES * 8 * 32, f32)
    full = ox.mbarrier.array(STAGES)
    empty = ox.mbarrier.array(STAGES)
    t = thread.idx.x
    n = block.dim.x
    if t == 0:
        for s in range(STAGES):
            ox.mbarrier.init(full[s], 1)
            ox.mbarrier.init(empty[s], n)
        ox.mbarrier.fence_init()
    block.sync()
    for k in range(tiles):
        s = k % STAGES
        if t == 0:
            if k >= STAGES:
                ox.mbarrier.wait(empty[s], (k // STAGES - 1) % 2)
            ox.mbarrier.arrive_expect_tx(full[s], ox.tma.box_bytes(src))
            ox.tma.load(src, full[s], tile[s * 256:], k * 8, 0)
        ox.mbarrier.wait(full[s], (k // STAGES) % 2)
        for e in range(t, 256, n):
            with ox.unsafe():
                out[k * 256 + e] = 2.0 * tile[s * 256 + e] + 1.0
        ox.mbarrier.arrive(empty[s])


@ox.kernel
def cluster_ranks(out: ox.DisjointSlice[i32]) -> None:
    """out[i] = 100 * the block's rank in its cluster + the cluster's size, after a cluster sync."""
    i = thread.index_1d()
    ox.cluster.sync()
    if i < len(out):
        out[i] = ox.cluster.rank() * 100 + ox.cluster.num_blocks()


@ox.kernel
def swizzled_box(src: ox.tma.Descriptor[f32, 2], out: MutSlice[f32]) -> None:
    """The 8 x 32 box at (0, 0) into a shared array declared swizzle=128, copied out as it lies
    in shared memory (the 16-byte chunks of row r permuted by XOR with r % 8)."""
    tile = ox.shared.array((8, 32), f32, swizzle=128)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars, 1)
        ox.mbarrier.fence_init()
    block.sync()
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
        ox.tma.load(src, bars, tile, 0, 0)
    ox.mbarrier.wait(bars, 0)
    for k in range(t, 8 * 32, block.dim.x):
        with ox.unsafe():
            out[k] = tile[k // 32, k % 32]


@ox.kernel
def box_at_offset(src: ox.tma.Descriptor[f32, 2], off: i32, out: MutSlice[f32]) -> None:
    """The 16 x 32 box at (0, 0) into tile[off:] (TMA's shared memory must be 128-byte aligned:
    off a multiple of 32 f32), copied out from there."""
    tile = ox.shared.array(1024, f32)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars, 1)
        ox.mbarrier.fence_init()
    block.sync()
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
        ox.tma.load(src, bars, tile[off:], 0, 0)
    ox.mbarrier.wait(bars, 0)
    for k in range(t, ROWS * COLS, block.dim.x):
        with ox.unsafe():
            out[k] = tile[off + k]
