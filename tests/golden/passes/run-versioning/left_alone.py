"""run-versioning leaves alone a run with one check (the test would cost what the check does),
an index that reads what the run loads, and checks split by a barrier or by a call of a device
function that reaches one."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


def twice(x: f32) -> f32:
    block.sync()
    return 2.0 * x


@ox.kernel
def k(dst: MutSlice[f32], src: Slice[f32], idx: Slice[i32], n: i32) -> None:
    i = thread.idx.x + n
    a = src[i]
    block.sync()
    j = idx[i + 1]
    b = src[j]
    c = twice(a + b)
    with ox.unsafe():
        dst[i] = c

# AFTER: bounds-elimination(launch_versioning=0)
# UNCHANGED
