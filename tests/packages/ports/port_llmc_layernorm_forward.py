"""Layer norm forward, one warp per row, warp-shuffle reductions.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/layernorm_forward.cu
(`layernorm_forward_kernel3`), the way its author writes it: the row from the block and the warp's
rank in it, strided sums over the row, `cg::reduce` as `warp.reduce_sum`, `rsqrtf` of the variance
plus 1e-5, the statistics written by lane 0, the original's streaming hints (`__ldcs`, `__stcs`)
as `ox.cache.load(..., "cs")` and `ox.cache.store(..., "cs")`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread, warp


@ox.kernel
def layernorm_forward_kernel3(out: MutSlice[f32], mean: MutSlice[f32], rstd: MutSlice[f32], inp: Slice[f32],
                              weight: Slice[f32], bias: Slice[f32], N: i32, C: i32) -> None:
    idx = block.idx.x * (block.dim.x // 32) + warp.id()
    if idx >= N:
        return
    x = inp[idx * C:]
    sum = f32(0.0)
    for i in range(warp.lane(), C, 32):
        sum += x[i]
    sum = warp.reduce_sum(sum)
    m = sum / C
    if warp.lane() == 0:
        with ox.unsafe():
            ox.cache.store(mean, idx, m, "cs")
    sum = 0.0
    for i in range(warp.lane(), C, 32):
        diff = x[i] - m
        sum += diff * diff
    sum = warp.reduce_sum(sum)
    s = ox.math.rsqrt(sum / C + 1e-5)
    if warp.lane() == 0:
        with ox.unsafe():
            ox.cache.store(rstd, idx, s, "cs")
    o = out[idx * C:]
    for c in range(warp.lane(), C, 32):
        n = s * (ox.cache.load(x, c, "cs") - m)
        with ox.unsafe():
            ox.cache.store(o, c, n * weight[c] + bias[c], "cs")
