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
