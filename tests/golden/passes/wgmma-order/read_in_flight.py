"""wgmma-order: reading an accumulator before a wait_group completes its mma is refused at the read."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=128)
def k(c: MutSlice[f32]) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    ox.wgmma.commit_group()
    with ox.unsafe():
        c[thread.idx.x] = acc[0]
    ox.wgmma.wait_group(0, acc)

# ERROR: read_in_flight.py:14:27: the wgmma accumulator 'acc' is read while the ox.wgmma.mma at line 11 may still be writing it
