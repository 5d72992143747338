"""arch-requirements: a module built for sm_80 that calls ox.wgmma is refused at the call, naming
the intrinsic and the arch."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel(launch_bounds=128)
def k(c: MutSlice[f32]) -> None:
    ox.wgmma.fence()

# OPTIONS: archs=sm_80,sm_90a
# ERROR: wgmma_on_sm80.py:9:5: ox.wgmma.fence needs sm_90a (that arch only: sm_90a instructions are not on later GPUs); this module is built for sm_80
