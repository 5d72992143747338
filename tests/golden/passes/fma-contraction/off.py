"""fma-contraction with fma=False (CompileOptions.fma, --fmad=false): nothing is contracted."""
import oxide as ox
from oxide import MutSlice, Slice, f32, thread


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        with ox.unsafe():
            out[i] = x[i] * 2.0 + 1.0

# OPTIONS: fma=0
# UNCHANGED
# CHECK-NOT: math.fma
