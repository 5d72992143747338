"""block.sync_count / sync_and / sync_or (CUDA's __syncthreads_count / _and / _or)."""
import oxide as ox
from oxide import DisjointSlice, Slice, block, f32, i32, thread


@ox.kernel
def block_votes(x: Slice[f32], threshold: f32, count: DisjointSlice[i32], every: DisjointSlice[i32],
                some: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    v = x[i] if i < len(x) else 0.0
    n = block.sync_count(v > threshold)
    a = block.sync_and(v > threshold)
    o = block.sync_or(v > threshold)
    if i < len(count) and i < len(every) and i < len(some):
        count[i] = n
        every[i] = i32(a)
        some[i] = i32(o)
