"""fp8-archs: converting an fp8 value in a module built for sm_80 is refused at the expression."""
import oxide as ox
from oxide import MutSlice, Slice, f8e4m3, f32, thread


@ox.kernel
def k(x: Slice[f8e4m3], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        with ox.unsafe():
            out[i] = f32(x[i])

# OPTIONS: archs=sm_80,sm_90
# ERROR: convert_on_sm80.py:11:26: converting f8e4m3 values needs sm_89 or newer; this module is built for sm_80
