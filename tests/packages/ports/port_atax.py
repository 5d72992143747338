"""ATAX: y = A^T (A x), in two kernels.

Ported from PolyBench-GPU 1.0, CUDA/ATAX/atax.cu (`atax_kernel1`, `atax_kernel2`), the way
its author writes it: DATA_TYPE a float typedef, NX/NY as run-time ints here (compile-time
#defines in the original), row-major A indexed `A[i * NY + j]`, one thread per output element
accumulating straight into the output array."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def atax_kernel1(A: Slice[f32], x: Slice[f32], tmp: DisjointSlice[f32], NX: i32, NY: i32) -> None:
    i = thread.index_1d()
    if i < NX:
        tmp[i] = 0.0
        for j in range(NY):
            tmp[i] += A[i * NY + j] * x[j]


@ox.kernel
def atax_kernel2(A: Slice[f32], y: DisjointSlice[f32], tmp: Slice[f32], NX: i32, NY: i32) -> None:
    j = thread.index_1d()
    if j < NY:
        y[j] = 0.0
        for i in range(NX):
            y[j] += A[i * NY + j] * tmp[i]
