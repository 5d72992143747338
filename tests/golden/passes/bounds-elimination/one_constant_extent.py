"""bounds-elimination: one check that a constant extent would prove (out[0], written once a
block) is not worth a second copy of the kernel (a second entry point to compile): the kernel
keeps it, unversioned."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread


@ox.kernel
def total(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = x[i] if i < len(x) else 0.0
    if thread.idx.x == 0:
        ox.atomic.add(out, 0, v)

# CHECK-LABEL: kernel total(
# CHECK-NOT: launch-versioned
# CHECK: atomic.add[gpu](out, 0:i64?, v)!{{\d+}}:f32
