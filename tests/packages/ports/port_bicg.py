"""BiCG sub-kernels: q = A p and s = A^T r.

Ported from PolyBench-GPU 1.0, CUDA/BICG/bicg.cu (`bicg_kernel1`, `bicg_kernel2`), the way its
author writes it: one thread per output element from blockIdx/blockDim/threadIdx as int, the
sums accumulated in the output array itself, A row-major `A[i * NY + j]`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def bicg_kernel1(A: Slice[f32], r: Slice[f32], s: MutSlice[f32], NX: i32, NY: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    if j < NY:
        with ox.unsafe():
            s[j] = 0.0
            for i in range(NX):
                s[j] += A[i * NY + j] * r[i]


@ox.kernel
def bicg_kernel2(A: Slice[f32], p: Slice[f32], q: MutSlice[f32], NX: i32, NY: i32) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < NX:
        with ox.unsafe():
            q[i] = 0.0
            for j in range(NY):
                q[i] += A[i * NY + j] * p[j]
