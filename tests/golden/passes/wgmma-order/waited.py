"""wgmma-order: an accumulator read after the wait_group that completes its mma is accepted."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=128)
def k(c: MutSlice[f32]) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    with ox.unsafe():
        c[thread.idx.x] = acc[0]

# UNCHANGED
