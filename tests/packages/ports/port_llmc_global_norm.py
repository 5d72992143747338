"""The squared global norm of a vector: a grid-stride sum of squares, a block reduction (warp
reductions, then the warps' sums), one atomic add per block.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/global_norm.cu (`norm_kernel1`), as first
written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i64, thread, block, grid, warp


def block_reduce_sum(val: f32) -> f32:
    shared = ox.shared.array(32, f32)
    lane = thread.idx.x % 32
    wid = thread.idx.x // 32
    val = warp.reduce_sum(val)
    if lane == 0:
        shared[wid] = val
    block.sync()
    val = shared[lane] if thread.idx.x < block.dim.x // 32 else 0.0
    val = warp.reduce_sum(val)
    return val


@ox.kernel
def norm_kernel1(out: MutSlice[f32], data: Slice[f32], count: i64) -> None:
    idx = block.idx.x * block.dim.x + thread.idx.x
    grid_width = block.dim.x * grid.dim.x
    accumulator = 0.0
    for i in range(idx, count, grid_width):
        accumulator += data[i] * data[i]
    block_sum = block_reduce_sum(accumulator)
    if thread.idx.x == 0:
        ox.atomic.add(out, 0, block_sum)
