"""Block-wide inclusive prefix sum built from warp shuffles, CUB's warp-scan-smem shape.

Ported from the CUB pattern (cub/block/specializations/block_scan_warp_scans.cuh, and the
"Faster Parallel Reductions/Scans with shuffle" recipe of NVIDIA's blog), the way a CUDA
author writes it: a Kogge-Stone inclusive scan in each warp with `__shfl_up_sync`, the warp
totals in shared memory, the first warp scanning those, each warp adding its prefix. Unsigned
counts (`unsigned int`) as in a histogram offset computation; one block per 1024 elements, the
block total written out too."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, thread, u32, warp

WARP_SIZE = 32
BLOCK_THREADS = 1024
WARPS = BLOCK_THREADS // WARP_SIZE


def warp_inclusive_scan(value: u32, lane: int) -> u32:
    for offset in ox.static_range(5):
        n = warp.shfl_up(value, 1 << offset)
        if lane >= (1 << offset):
            value += n
    return value


@ox.kernel(launch_bounds=BLOCK_THREADS)
def block_inclusive_scan(d_in: Slice[u32], d_out: DisjointSlice[u32], d_block_totals: MutSlice[u32],
                         num_items: u32) -> None:
    warp_totals = ox.shared.array(WARPS, u32)
    i = thread.index_1d()
    lane = thread.idx.x & (WARP_SIZE - 1)
    warp_id = thread.idx.x >> 5

    value = d_in[i] if i < num_items else 0
    value = warp_inclusive_scan(value, lane)
    if lane == WARP_SIZE - 1:
        warp_totals[warp_id] = value
    block.sync()

    if warp_id == 0:
        total = warp_totals[lane] if lane < WARPS else 0
        total = warp_inclusive_scan(total, lane)
        if lane < WARPS:
            warp_totals[lane] = total
    block.sync()

    if warp_id > 0:
        value += warp_totals[warp_id - 1]
    if i < num_items:
        d_out[i] = value
    if thread.idx.x == BLOCK_THREADS - 1:
        with ox.unsafe():
            d_block_totals[block.idx.x] = value
