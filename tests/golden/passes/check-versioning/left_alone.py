"""check-versioning leaves a loop alone when its index is not linear in the loop variable
(j * j), moves with a name the body assigns, or the body holds a barrier. (A loop of a
constant step other than 1 is versioned: tests/test_passes_versioning.py.)"""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def k(A: Slice[f32], out: MutSlice[f32], n: i32) -> None:
    i = thread.index_1d()
    s: f32 = 0.0
    for j in range(n):
        s += A[j * j]
    k2 = 0
    for a in range(n):
        k2 += 3
        s += A[k2]
    for c in range(n):
        s += A[c]
        block.sync()
    with ox.unsafe():
        out[i] = s

# AFTER: bounds-elimination(launch_versioning=0)
# UNCHANGED
