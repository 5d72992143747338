"""GEMM, C = alpha A B + beta C, one thread per element of C.

Ported from PolyBench-GPU 1.0, CUDA/GEMM/gemm.cu (`gemm_kernel`), the way its author writes it:
NI/NJ/NK, ALPHA and BETA as #defines (module constants here), j from x and i from y, the sum
accumulated in C itself."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

NI = 512
NJ = 512
NK = 512
ALPHA = 32412.0
BETA = 2123.0


@ox.kernel
def gemm_kernel(a: Slice[f32], b: Slice[f32], c: MutSlice[f32]) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < NI and j < NJ:
        with ox.unsafe():
            c[i * NJ + j] *= BETA
            for k in range(NK):
                c[i * NJ + j] += ALPHA * a[i * NK + k] * b[k * NJ + j]
