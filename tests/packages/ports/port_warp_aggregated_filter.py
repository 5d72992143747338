"""Stream compaction (keep the positive elements) with warp-aggregated atomics.

Ported from NVIDIA's developer blog "CUDA Pro Tip: Optimized Filtering with Warp-Aggregated
Atomics" (`filter_k` with `atomicAggInc`), the way its author writes it: the active mask, the
leader from `__ffs`, the rank from `__popc` of the lower lanes, the leader's result shuffled
to the others."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread, u32, warp


def atomic_agg_inc(ctr: ox.MutSlice[i32]) -> i32:
    active = warp.active_mask()
    leader = ox.bits.ffs(active) - 1
    change = ox.bits.popc(active)
    lane_mask_lt = (u32(1) << warp.lane()) - 1
    rank = ox.bits.popc(active & lane_mask_lt)
    warp_res = 0
    if warp.lane() == leader:
        warp_res = ox.atomic.add(ctr, 0, change)
    warp_res = warp.shfl_idx(warp_res, leader, mask=active)
    return warp_res + rank


@ox.kernel
def filter_k(dst: MutSlice[f32], nres: MutSlice[i32], src: Slice[f32], n: i32) -> None:
    i = thread.idx.x + block.idx.x * block.dim.x
    if i >= n:
        return
    if src[i] > 0:
        with ox.unsafe():
            dst[atomic_agg_inc(nres)] = src[i]
