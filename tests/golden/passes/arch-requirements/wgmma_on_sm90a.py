"""arch-requirements: the same module built for sm_90a only is accepted; the pass only checks."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=128)
def k(c: MutSlice[f32]) -> None:
    ox.wgmma.fence()

# OPTIONS: archs=sm_90a
# UNCHANGED
