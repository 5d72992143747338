"""constant-loop-unroll with max_trip=4 and a size budget: an outer loop over an inner loop it
unrolls is unrolled when the two fit the budget together; an inner loop left rolled keeps the
outer one rolled; a body too large for its trip count stays rolled."""
import oxide as ox
from oxide import MutSlice, f32, i32, thread


@ox.kernel
def k(out: MutSlice[f32], n: i32) -> None:
    i = thread.index_1d()
    s: f32 = 0.0
    for a in range(3):
        for b in range(4):
            s += f32(a * b)
    for c in range(2):
        for d in range(n):
            s += f32(c + d)
    for e in range(4):
        s += f32(e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e)
        s += f32(e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e * e)
    with ox.unsafe():
        out[i] = s

# OPTIONS: max_trip=4; max_unrolled_size=300
# CHECK-LABEL: kernel k(
# CHECK: while (a < $stop1):  ; unroll 3
# CHECK: while (b < $stop3):  ; unroll 4
# CHECK: while (c < $stop5):
# CHECK-NOT: unroll
# CHECK: while (d < $stop7):
# CHECK-NOT: unroll
# CHECK: while (e < $stop9):
# CHECK-NOT: unroll
