"""launch-preconditions: leading asserts over the launch move into the kernel's preconditions;
one that reads memory stays on the device, and so does every assert after it."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel
def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
    assert len(x) == n
    assert len(out) >= len(x)
    assert x[0] > 0.0
    assert n > 1
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i]

# BEFORE: check (len(x) == i64(n))!1  ; hoistable
# BEFORE-NEXT: check (len(out) >= len(x))!2  ; hoistable
# CHECK: kernel k(
# CHECK-NEXT: ; precondition !1 ['eq', ['arg', 1], ['cast', 'i64', ['arg', 2]]]
# CHECK-NEXT: ; precondition !2 ['ge', ['arg', 4], ['arg', 1]]
# CHECK-NEXT: check (x[0:i64?]!3 > 0.0:f32)!4  ; hoistable
# CHECK-NEXT: check (n > 1:i32)!5  ; hoistable
# CHECK-NOT: precondition
