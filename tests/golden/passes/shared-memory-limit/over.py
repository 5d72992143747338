"""shared-memory-limit: static shared arrays past 48 KiB (here through a device function) are
refused at the array that goes past the limit."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


def helper() -> None:
    b = ox.shared.array(4096, f32)
    b[thread.idx.x] = 1.0


@ox.kernel
def k(c: MutSlice[f32]) -> None:
    a = ox.shared.array(9216, f32)
    a[thread.idx.x] = 0.0
    helper()

# ERROR: over.py:8:5: the shared arrays of k() take 53248 bytes with 'b' (in helper(), which it calls); static shared memory holds 49152 bytes (48 KiB) per block
