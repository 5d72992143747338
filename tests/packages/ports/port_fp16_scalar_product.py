"""Half-precision dot products with half2 arithmetic, reduced in shared memory by a device function.

Ported from NVIDIA cuda-samples (BSD-3-Clause), Samples/0_Introduction/fp16ScalarProduct/
fp16ScalarProduct.cu (`scalarProductKernel_intrinsics`, `reduceInShared_intrinsics`), as first
written in issue 29's second probe: the helper takes the shared array of half2 as a
`MutSlice[f16x2]`, a view of vector elements (refused at the first try, supported since)."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block, grid

NUM_OF_THREADS = 128


def reduce_in_shared_intrinsics(v: MutSlice[ox.f16x2]) -> None:
    lid = thread.idx.x
    stride = NUM_OF_THREADS // 2
    while stride > 0:
        block.sync()
        if lid < stride:
            v[lid] = v[lid] + v[lid + stride]
        stride >>= 1


@ox.kernel
def scalar_product_kernel_intrinsics(a: Slice[ox.f16], b: Slice[ox.f16], results: MutSlice[f32], size: i32) -> None:
    stride = grid.dim.x * block.dim.x
    shm = ox.shared.array(NUM_OF_THREADS, ox.f16x2)
    value = ox.f16x2(ox.f16(0.0))
    for i in range(thread.idx.x + block.dim.x * block.idx.x, size, stride):
        value = a.load2(i) * b.load2(i) + value
    shm[thread.idx.x] = value
    reduce_in_shared_intrinsics(shm)
    if thread.idx.x == 0:
        result = shm[0]
        f_result = f32(result.y) + f32(result.x)
        with ox.unsafe():
            results[block.idx.x] = f_result
