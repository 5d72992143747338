"""wgmma-fence: the first mma of a kernel needs a fence before it."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=128)
def k(c: MutSlice[f32]) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)

# ERROR: first_mma.py:10:5: ox.wgmma.mma() on 'acc' with no ox.wgmma.fence() before it since k() began: the first wgmma of a warpgroup needs one
