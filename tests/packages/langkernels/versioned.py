"""A kernel whose checks hold under launch-invariant facts: launch-versioned (tests/test_bounds_gpu.py)."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel
def guarded_axpy(a: f32, x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
    """``i < n`` with ``n`` an argument nothing ties to the lengths: launch-versioned on
    len(x), len(y), len(out) >= n (the copy without checks), else the checks report."""
    i = thread.index_1d()
    if i < n:
        out[i] = a * x[i] + y[i]
