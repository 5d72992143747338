"""launch-preconditions: leading asserts on launch values move to the manifest; the first one
that cannot (it reads a local) stays, and so does every later one."""
import oxide as ox
from oxide import DisjointSlice, Slice, Tensor, f32, i64, thread, grid


@ox.kernel
def k(x: Slice[f32], t: Tensor[f32, 2], out: DisjointSlice[f32], n: i64) -> None:
    m = n + 1
    assert len(x) == len(out), "x and out differ"
    assert t.shape[1] * 2 <= len(x) and not n < 0
    assert grid.dim.x <= 4096
    assert m < 100
    assert n > 1
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i] * t[0, 0]

# CHECK-LABEL: kernel k(x: Slice[f32], t: Tensor[f32, 2], out: DisjointSlice[f32], n: i64) -> None
# CHECK: ; precondition !1 ['eq', ['arg', 1], ['arg', 8]]
# CHECK-NEXT: ; precondition !2 ['and', [['le', ['mul', 'i64', ['arg', 4], ['const', 2]], ['arg', 1]], ['not', ['lt', ['arg', 9], ['const', 0]]]]]
# CHECK-NEXT: ; precondition !3 ['le', ['grid', 0], ['const', 4096]]
# BEFORE: check (len(x) == len(out))!1  ; hoistable
# BEFORE: check (((t.shape[1] * 2:i64) <= len(x)) and (not (n < 0:i64)))!2  ; hoistable
# BEFORE: check (%nctaid.x <= 4096:i32)!3  ; hoistable
