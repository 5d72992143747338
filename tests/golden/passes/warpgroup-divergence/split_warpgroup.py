"""warpgroup-divergence: wgmma under a condition that differs within a warpgroup is refused at
the call, naming the condition's line."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=384, max_registers=168)
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n128k16")
    if thread.idx.x < 64:
        ox.wgmma.fence()
        ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)

# ERROR: split_warpgroup.py:12:9: ox.wgmma.fence() is warpgroup-collective: all 128 threads of a warpgroup must reach it together, and this call is under a condition that differs within a warpgroup (line 11)
