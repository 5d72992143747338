"""constant-loop-unroll: a range loop with constant bounds and a small body gets the hint to
unroll completely (its trip count); a loop over a parameter, one with the user's own hint, one
past the trip limit and one whose body assigns its variable stay as they are."""
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
    i = thread.index_1d()
    acc = ox.local.array(4, f32)
    for a in range(4):
        acc[a] = 0.0
    for b in range(2, 14, 3):
        acc[b % 4] += 1.0
    for c in range(n):
        acc[0] += 1.0
    for d in ox.unroll(range(8), 1):
        acc[1] += 1.0
    for e in range(64):
        acc[2] += 1.0
    for f in range(8):
        f = f + 1
        acc[3] += f32(f)
    with ox.unsafe():
        out[i] = acc[0] + acc[1] + acc[2] + acc[3] + x[i]

# BEFORE-NOT: unroll 4
# CHECK-LABEL: kernel k(
# CHECK: while (a < $stop1):  ; unroll 4
# CHECK: while (b < $stop3):  ; unroll 4
# CHECK: while (c < $stop5):
# CHECK-NOT: unroll
# CHECK: while (d < $stop7):  ; unroll 1
# CHECK: while (e < $stop9):
# CHECK-NOT: unroll
# CHECK: while (f < $stop11):
# CHECK-NOT: unroll
