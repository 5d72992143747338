"""A templated kernel over dynamic shared memory of its element type.

Ported from NVIDIA cuda-samples, Samples/0_Introduction/simpleTemplates/simpleTemplates.cu
(`testKernel<T>` with the `SharedMemory<T>` helper of sharedmem.cuh), the way its author
writes it: `template <class T>`, the dynamic shared array of T (`extern __shared__` behind
`smem.getPointer()`), `const unsigned int tid = threadIdx.x`, `(T)num_threads * sdata[tid]`,
one block, instantiated for float, double and int."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, f64, i32, thread, u32

T = ox.TypeVar("T", f32, f64, i32)


@ox.kernel
def test_kernel(g_idata: Slice[T], g_odata: MutSlice[T]) -> None:
    sdata = ox.shared.dynamic(T)
    tid = u32(thread.idx.x)
    num_threads = u32(block.dim.x)
    sdata[tid] = g_idata[tid]
    block.sync()
    sdata[tid] = T(num_threads) * sdata[tid]
    block.sync()
    with ox.unsafe():
        g_odata[tid] = sdata[tid]
