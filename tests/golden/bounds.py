"""The frontend's bounds proofs: guarded reads lose their checks, unguarded ones keep them."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i64, thread


@ox.kernel
def k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32], k: i64) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i] + y[i] + x[k]
