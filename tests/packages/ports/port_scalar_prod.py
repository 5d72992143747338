"""Scalar products of vector pairs: per-thread strided accumulators in shared memory, a tree reduction.

Ported from NVIDIA cuda-samples (BSD-3-Clause), Samples/2_Concepts_and_Techniques/scalarProd/
scalarProd_kernel.cuh (`scalarProdGPU`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block, grid

ACCUM_N = 1024


@ox.kernel
def scalar_prod(d_c: MutSlice[f32], d_a: Slice[f32], d_b: Slice[f32], vector_n: i32, element_n: i32) -> None:
    accum_result = ox.shared.array(ACCUM_N, f32)
    for vec in range(block.idx.x, vector_n, grid.dim.x):
        vector_base = element_n * vec
        vector_end = vector_base + element_n
        for i_accum in range(thread.idx.x, ACCUM_N, block.dim.x):
            sum = 0.0
            for pos in range(vector_base + i_accum, vector_end, ACCUM_N):
                sum += d_a[pos] * d_b[pos]
            accum_result[i_accum] = sum
        stride = ACCUM_N // 2
        while stride > 0:
            block.sync()
            for i_accum in range(thread.idx.x, stride, block.dim.x):
                accum_result[i_accum] += accum_result[stride + i_accum]
            stride >>= 1
        block.sync()
        if thread.idx.x == 0:
            with ox.unsafe():
                d_c[vec] = accum_result[0]
