"""shared-memory-limit: a kernel's shared arrays within 48 KiB are accepted."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel
def k(c: MutSlice[f32]) -> None:
    a = ox.shared.array(12288, f32)
    a[thread.idx.x] = 0.0

# UNCHANGED
