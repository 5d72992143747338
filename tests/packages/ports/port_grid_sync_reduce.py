"""Single-pass sum over the whole grid with a grid-wide barrier.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/reductionMultiBlockCG/
reductionMultiBlockCG.cu (`reduceSinglePassMultiBlockCG`), the way its author writes it:
each block reduces its grid-stride share into global partial sums, `grid.sync()`, then
block 0 reduces the partial sums."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i32, thread, warp

BLOCK = 256


def reduce_block(sdata: ox.MutSlice[f32], value: f32) -> f32:
    tid = thread.idx.x
    v = warp.reduce_sum(value)
    if warp.lane() == 0:
        sdata[warp.id()] = v
    block.sync()
    total = f32(0.0)
    if warp.id() == 0:
        total = sdata[warp.lane()] if warp.lane() < BLOCK // 32 else f32(0.0)
        total = warp.reduce_sum(total)
    block.sync()
    return total


@ox.kernel
def reduce_single_pass(g_idata: Slice[f32], g_odata: MutSlice[f32], n: i32) -> None:
    sdata = ox.shared.array(BLOCK // 32, f32)
    s = f32(0.0)
    i = block.idx.x * block.dim.x + thread.idx.x
    while i < n:
        s += g_idata[i]
        i += grid.dim.x * block.dim.x
    s = reduce_block(sdata, s)
    if thread.idx.x == 0:
        with ox.unsafe():
            g_odata[block.idx.x] = s
    grid.sync()
    if block.idx.x == 0:
        s = 0.0
        for b in range(thread.idx.x, grid.dim.x, block.dim.x):
            s += g_odata[b]
        s = reduce_block(sdata, s)
        if thread.idx.x == 0:
            with ox.unsafe():
                g_odata[0] = s
