"""2-D Jacobi stencil: a sweep into B, then B copied back into A.

Ported from PolyBench-GPU 1.0, CUDA/JACOBI2D/jacobi2D.cu (`runJacobiCUDA_kernel1`,
`runJacobiCUDA_kernel2`), the way its author writes it: N as a #define (module constant), the
unused `n` parameter kept, the interior guard on both kernels."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

N = 4096


@ox.kernel
def run_jacobi_kernel1(n: i32, A: Slice[f32], B: MutSlice[f32]) -> None:
    i = block.idx.y * block.dim.y + thread.idx.y
    j = block.idx.x * block.dim.x + thread.idx.x
    if i >= 1 and i < N - 1 and j >= 1 and j < N - 1:
        with ox.unsafe():
            B[i * N + j] = 0.2 * (A[i * N + j] + A[i * N + (j - 1)] + A[i * N + (1 + j)] + A[(1 + i) * N + j]
                                  + A[(i - 1) * N + j])


@ox.kernel
def run_jacobi_kernel2(n: i32, A: MutSlice[f32], B: Slice[f32]) -> None:
    i = block.idx.y * block.dim.y + thread.idx.y
    j = block.idx.x * block.dim.x + thread.idx.x
    if i >= 1 and i < N - 1 and j >= 1 and j < N - 1:
        with ox.unsafe():
            A[i * N + j] = B[i * N + j]
