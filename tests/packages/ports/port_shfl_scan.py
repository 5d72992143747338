"""Warp-shuffle inclusive scan of a block, and the add of the blocks' partial sums.

Ported from NVIDIA cuda-samples (BSD-3-Clause), Samples/2_Concepts_and_Techniques/shfl_scan/
shfl_scan.cu (`shfl_scan_test`, `uniform_add`), as first written in issue 29's second probe: the
shuffle width is a run-time parameter (`__shfl_up_sync(mask, value, i, width)`), and the mask of
the second scan an `int` expression (`(1 << (blockDim.x / warpSize)) - 1`)."""
import oxide as ox
from oxide import Slice, MutSlice, i32, thread, block, warp


@ox.kernel
def shfl_scan_test(data: MutSlice[i32], width: i32, partial_sums: MutSlice[i32]) -> None:
    sums = ox.shared.array(32, i32)
    id = ((block.idx.x * block.dim.x) + thread.idx.x)
    lane_id = id % 32
    warp_id = thread.idx.x // 32
    value = data[id]
    i = 1
    while i <= width:
        n = warp.shfl_up(value, i, width)
        if lane_id >= i:
            value += n
        i *= 2
    if thread.idx.x % 32 == 31:
        sums[warp_id] = value
    block.sync()
    if warp_id == 0 and lane_id < (block.dim.x // 32):
        warp_sum = sums[lane_id]
        mask = (1 << (block.dim.x // 32)) - 1
        i = 1
        while i <= (block.dim.x // 32):
            n = warp.shfl_up(warp_sum, i, (block.dim.x // 32), mask=mask)
            if lane_id >= i:
                warp_sum += n
            i *= 2
        sums[lane_id] = warp_sum
    block.sync()
    blockSum = 0
    if warp_id > 0:
        blockSum = sums[warp_id - 1]
    value += blockSum
    with ox.unsafe():
        data[id] = value
    if len(partial_sums) > 0 and thread.idx.x == block.dim.x - 1:
        with ox.unsafe():
            partial_sums[block.idx.x] = value


@ox.kernel
def uniform_add(data: MutSlice[i32], partial_sums: Slice[i32], len_: i32) -> None:
    buf = ox.shared.array(1, i32)
    id = ((block.idx.x * block.dim.x) + thread.idx.x)
    if id > len_:
        return
    if thread.idx.x == 0:
        buf[0] = partial_sums[block.idx.x]
    block.sync()
    with ox.unsafe():
        data[id] += buf[0]
