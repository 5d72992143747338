"""GESUMMV, y = alpha A x + beta B x, one thread per row.

Ported from PolyBench-GPU 1.0, CUDA/GESUMMV/gesummv.cu (`gesummv_kernel`), the way its author
writes it: N, ALPHA and BETA as #defines (module constants), both sums accumulated in the output
arrays themselves."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

N = 4096
ALPHA = 43532.0
BETA = 12313.0


@ox.kernel
def gesummv_kernel(a: Slice[f32], b: Slice[f32], x: Slice[f32], y: MutSlice[f32], tmp: MutSlice[f32]) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < N:
        with ox.unsafe():
            for j in range(N):
                tmp[i] += a[i * N + j] * x[j]
                y[i] += b[i * N + j] * x[j]
            y[i] = ALPHA * tmp[i] + BETA * y[i]
