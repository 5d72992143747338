"""bounds-elimination: a read and a write under `if i < len(view)` lose their checks; a read
the guard does not cover keeps its check (and its error site)."""
# OPTIONS: launch_versioning=0
import oxide as ox
from oxide import DisjointSlice, Slice, f32, thread


@ox.kernel
def k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        out[i] = x[i] + y[i]

# BEFORE: out[i]!3 = (x[i]!1 + y[i]!2)
# CHECK: if ((i64(i) < len(x)) and (i64(i) < len(out))):
# CHECK-NEXT: out[i] = (x[i] + y[i]!1)
