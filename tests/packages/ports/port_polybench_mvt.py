"""MVT: x1 += A y1 and x2 += A^T y2, one thread per row in each kernel.

Ported from PolyBench-GPU 1.0, CUDA/MVT/mvt.cu (`mvt_kernel1`, `mvt_kernel2`), the way its author
writes it: N as a #define (module constant), the sums accumulated in the outputs."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

N = 4096


@ox.kernel
def mvt_kernel1(a: Slice[f32], x1: MutSlice[f32], y_1: Slice[f32]) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < N:
        for j in range(N):
            with ox.unsafe():
                x1[i] += a[i * N + j] * y_1[j]


@ox.kernel
def mvt_kernel2(a: Slice[f32], x2: MutSlice[f32], y_2: Slice[f32]) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < N:
        for j in range(N):
            with ox.unsafe():
                x2[i] += a[j * N + i] * y_2[j]
