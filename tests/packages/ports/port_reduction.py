"""Block sum with a templated block size and a warp-unrolled tail.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/reduction/
reduction_kernel.cu (`reduce4`, with `warpReduce` taking the shared array), the way its
author writes it: the block size a compile-time parameter, each thread summing two elements,
the last warp unrolled."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


def warp_reduce(sdata: ox.MutSlice[f32], tid: i32, block_size: ox.Constexpr[int]) -> None:
    if block_size >= 64:
        sdata[tid] += sdata[tid + 32]
    ox.warp.sync()
    if block_size >= 32:
        sdata[tid] += sdata[tid + 16]
    ox.warp.sync()
    if block_size >= 16:
        sdata[tid] += sdata[tid + 8]
    ox.warp.sync()
    if block_size >= 8:
        sdata[tid] += sdata[tid + 4]
    ox.warp.sync()
    if block_size >= 4:
        sdata[tid] += sdata[tid + 2]
    ox.warp.sync()
    if block_size >= 2:
        sdata[tid] += sdata[tid + 1]
    ox.warp.sync()


@ox.kernel(constexprs={"BLOCK_SIZE": [128, 256]})
def reduce4(g_idata: Slice[f32], g_odata: MutSlice[f32], n: i32, BLOCK_SIZE: ox.Constexpr[int]) -> None:
    sdata = ox.shared.array(BLOCK_SIZE, f32)
    tid = thread.idx.x
    i = block.idx.x * (BLOCK_SIZE * 2) + thread.idx.x
    my_sum = g_idata[i] if i < n else 0.0
    if i + BLOCK_SIZE < n:
        my_sum += g_idata[i + BLOCK_SIZE]
    sdata[tid] = my_sum
    block.sync()
    s = block.dim.x // 2
    while s > 32:
        if tid < s:
            sdata[tid] = my_sum = my_sum + sdata[tid + s]
        block.sync()
        s >>= 1
    if tid < 32:
        warp_reduce(sdata, tid, BLOCK_SIZE)
    if tid == 0:
        with ox.unsafe():
            g_odata[block.idx.x] = sdata[0]
