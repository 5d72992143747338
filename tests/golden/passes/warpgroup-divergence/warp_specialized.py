"""warpgroup-divergence: wgmma under a condition that is the same across each warpgroup (warp
specialization) is accepted; the pass only checks."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=384, max_registers=168)
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n128k16")
    if ox.warpgroup.id() == 1:
        ox.wgmma.fence()
        ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)

# UNCHANGED
