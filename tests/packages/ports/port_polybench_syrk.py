"""SYRK, C = alpha A A^T + beta C, one thread per element of C.

Ported from PolyBench-GPU 1.0, CUDA/SYRK/syrk.cu (`syrk_kernel`), the way its author writes it:
N and M as #defines (module constants), alpha and beta parameters, the sum accumulated in C."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

N = 1024
M = 1024


@ox.kernel
def syrk_kernel(ALPHA: f32, BETA: f32, a: Slice[f32], c: MutSlice[f32]) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < N and j < N:
        with ox.unsafe():
            c[i * N + j] *= BETA
            for k in range(M):
                c[i * N + j] += ALPHA * a[i * M + k] * a[j * M + k]
