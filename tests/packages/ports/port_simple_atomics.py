"""Every global atomic on one array, from every thread.

Ported from NVIDIA cuda-samples, Samples/0_Introduction/simpleAtomicIntrinsics/
simpleAtomicIntrinsics_kernel.cuh (`testKernel`), the way its author writes it: the thread id
from blockIdx/blockDim/threadIdx as unsigned int, atomicAdd/Sub/Exch/Max/Min/Inc/Dec/CAS/And/
Or/Xor on the elements 0..10 of an int array (Inc and Dec on the unsigned view of it)."""
import oxide as ox
from oxide import MutSlice, block, i32, thread, u32


@ox.kernel
def test_kernel(g_odata: MutSlice[i32], g_udata: MutSlice[u32]) -> None:
    tid = block.dim.x * block.idx.x + thread.idx.x

    ox.atomic.add(g_odata, 0, 10)
    ox.atomic.sub(g_odata, 1, 10)
    ox.atomic.exch(g_odata, 2, tid)
    ox.atomic.max(g_odata, 3, tid)
    ox.atomic.min(g_odata, 4, tid)
    ox.atomic.inc(g_udata, 5, 17)
    ox.atomic.dec(g_udata, 6, 137)
    ox.atomic.cas(g_odata, 7, tid - 1, tid)
    ox.atomic.and_(g_odata, 8, 2 * tid + 7)
    ox.atomic.or_(g_odata, 9, 1 << tid)
    ox.atomic.xor(g_odata, 10, tid)
