"""bounds-elimination: checks that a launch-invariant fact would prove (len(x) >= N under the
guard i < N, N an argument; len(A) >= R * C for A[r * C + c] under r < R and c < C) are
versioned: after the kernel's leading asserts, one test of those facts picks a copy proven
under them, else the kernel as written runs with its checks (and reports a failing access)."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, i64, thread


@ox.kernel
def k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32], N: i32) -> None:
    assert N >= 0
    i = thread.index_1d()
    if i < N:
        out[i] = x[i] + y[i]


@ox.kernel
def rows(A: Slice[f32], out: DisjointSlice[f32], R: i32, C: i32) -> None:
    r = thread.index_1d()
    if r < R:
        s: f32 = 0.0
        for c in range(C):
            s += A[i64(r) * C + c]
        out[r] = s

# CHECK-LABEL: kernel k(
# CHECK-NEXT: check (N >= 0:i32)!{{\d+}}  ; hoistable
# CHECK-NEXT: if ((len(x) >= i64(N)) and (len(y) >= i64(N)) and (len(out) >= i64(N))):  ; launch-versioned
# CHECK-NEXT: i: ThreadIndex = index_1d()
# CHECK: out[i] = (x[i] + y[i])
# CHECK-NEXT: else:
# CHECK-NEXT: i: ThreadIndex = index_1d()
# CHECK: out[i]!{{\d+}} = (x[i]!{{\d+}} + y[i]!{{\d+}})
# CHECK-LABEL: kernel rows(
# CHECK: if ((len(A) >= (i64(C) * i64(R))) and (len(out) >= i64(R))):  ; launch-versioned
# CHECK: s: f32 = (s + A[((i64(r) * i64(C)) + i64(c))])
# CHECK: else:
# CHECK: s: f32 = (s + A[((i64(r) * i64(C)) + i64(c))]!{{\d+}})
