"""Inclusive prefix sum: scan each block (warp shuffles + one shared slot per warp), scan the
block totals, add each block's offset."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, grid, i32, thread, warp

BLOCK = 1024


@ox.kernel
def scan_blocks(x: Slice[f32], out: MutSlice[f32], block_sums: MutSlice[f32]) -> None:
    assert len(block_sums) >= grid.dim.x
    warp_sums = ox.shared.array(32, f32)
    i = thread.index_1d()
    v = x[i] if i < len(x) else f32(0.0)
    lane = warp.lane()
    wid = warp.id()
    for k in ox.static_range(5):
        d = i32(1 << k)
        n = warp.shfl_up(v, d)
        if lane >= d:
            v += n
    if lane == 31:
        warp_sums[wid] = v
    block.sync()
    if wid == 0:
        s = warp_sums[lane] if lane < block.dim.x // 32 else f32(0.0)
        for k in ox.static_range(5):
            d = i32(1 << k)
            n = warp.shfl_up(s, d)
            if lane >= d:
                s += n
        warp_sums[lane] = s
    block.sync()
    if wid > 0:
        v += warp_sums[wid - 1]
    with ox.unsafe():
        if i < len(out):
            out[i] = v
        if thread.idx.x == block.dim.x - 1:
            block_sums[block.idx.x] = v


@ox.kernel
def add_block_offsets(scanned_sums: Slice[f32], out: DisjointSlice[f32]) -> None:
    assert len(scanned_sums) >= grid.dim.x - 1
    i = thread.index_1d()
    if i < len(out) and block.idx.x > 0:
        out[i] = out[i] + scanned_sums[block.idx.x - 1]


def inclusive_scan(x, out, empty_like):  # type: ignore[no-untyped-def]
    """Host driver: ``x`` and ``out`` are device arrays of f32; ``empty_like(n)`` makes a
    device f32 array of n elements. Recurses on the block totals."""
    n = len(x)
    blocks = (n + BLOCK - 1) // BLOCK
    sums = empty_like(blocks)
    scan_blocks[blocks, BLOCK](x, out, sums)
    if blocks > 1:
        scanned = empty_like(blocks)
        inclusive_scan(sums, scanned, empty_like)
        add_block_offsets[blocks, BLOCK](scanned, out)
