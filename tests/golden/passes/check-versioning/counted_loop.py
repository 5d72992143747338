"""check-versioning: a counted loop over a row of A whose length nothing ties to the size
arguments runs an unchecked copy when one test before the loop puts both ends of every moving
index in range; the checked loop is the other branch. An index that does not move with the loop
and reads nothing the loop assigns (out[i]) is tested before the loop too and loses its check
in the unchecked copy."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel
def k(A: Slice[f32], x: Slice[f32], out: DisjointSlice[f32], NX: i32, NY: i32) -> None:
    i = thread.index_1d()
    if i < NX:
        out[i] = 0.0
        for j in range(NY):
            out[i] += A[i * NY + j] * x[j]

# AFTER: bounds-elimination(launch_versioning=0)
# CHECK-LABEL: kernel k(
# CHECK: $stop1: i32 = NY
# CHECK: if ({{.*}}len(out){{.*}}len(A){{.*}}len(x){{.*}}):
# CHECK-NEXT: while (j < $stop1):
# CHECK-NEXT: out[i] = (out[i] + (A[((i64(i) * i64(NY)) + i64(j))] * x[j]))
# CHECK: else:
# CHECK-NEXT: while (j < $stop1):
# CHECK-NEXT: out[i]!{{\d+}} = (out[i]!{{\d+}} + (A[((i64(i) * i64(NY)) + i64(j))]!{{\d+}} * x[j]!{{\d+}}))
