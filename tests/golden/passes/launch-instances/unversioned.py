"""launch-instances: a kernel whose checks the facts in scope prove (or that nothing
launch-invariant would) has no launch-versioned test: it keeps one entry point."""
import oxide as ox
from oxide import MutSlice, Slice, f32, thread


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        with ox.unsafe():
            out[i] = x[i] * 2.0

# AFTER: bounds-elimination
# UNCHANGED
