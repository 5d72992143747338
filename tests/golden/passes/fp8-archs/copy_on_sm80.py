"""fp8-archs: copying fp8 elements (a byte move) on sm_80 is accepted; so is converting on sm_90."""
import oxide as ox
from oxide import MutSlice, Slice, f8e4m3, thread


@ox.kernel
def k(x: Slice[f8e4m3], out: MutSlice[f8e4m3]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        with ox.unsafe():
            out[i] = x[i]

# OPTIONS: archs=sm_80
# UNCHANGED
