"""A kernel for sm_90a alone (tests/test_tensor_cores_gpu.py)."""
import oxide as ox
from oxide import MutSlice, Slice, f32, thread


@ox.kernel
def arch_specific(x: Slice[f32], out: MutSlice[f32]) -> None:
    """wgmma.fence exists on sm_90a only: this module compiles for that target alone."""
    i = thread.index_1d()
    with ox.unsafe():
        ox.asm("wgmma.fence.sync.aligned;", memory=True)
        if i < len(x) and i < len(out):
            out[i] = 2.0 * x[i]
