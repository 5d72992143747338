"""Sum of a vector: grid-stride loop with 16-byte loads, warp shuffles, one shared slot per
warp, one atomic per block."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, thread, warp


@ox.kernel
def block_sum(x: Slice[f32], out: MutSlice[f32]) -> None:
    partial = ox.shared.array(32, f32)
    i = thread.index_1d()
    stride = grid.dim.x * block.dim.x
    acc: f32 = 0.0
    for j in range(i, len(x) // 4, stride):
        a, b, c, d = x.load4(j)
        acc += (a + b) + (c + d)
    for j in range((len(x) // 4) * 4 + i, len(x), stride):
        acc += x[j]
    acc = warp.reduce_sum(acc)
    lane = warp.lane()
    wid = warp.id()
    if lane == 0:
        partial[wid] = acc
    block.sync()
    if wid == 0:
        v = partial[lane] if lane < block.dim.x // 32 else f32(0.0)
        v = warp.reduce_sum(v)
        if lane == 0:
            ox.atomic.add(out, 0, v)
