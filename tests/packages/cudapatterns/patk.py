"""Kernels for tests/test_cuda_patterns_gpu.py: CUDA written as people write it (issue 29): a
conversion in a generic function's condition, conditionals of literals, and the threadfence
reduction (a __device__ counter, the last block's flag in shared memory, a block vote on it)."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, f64, grid, i32, thread, u32

T = ox.TypeVar("T", f32, f64)
BLOCK = 128

retirement_count = ox.global_memory.array(1, u32)  # CUDA: __device__ unsigned int retirement_count = 0;


def escapes(xx: T, yy: T) -> bool:
    return xx + yy > T(4.0)  # a conversion, not a type test


@ox.kernel
def literal_choices(x: Slice[T], ix: i32, out: DisjointSlice[T], weights: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(weights):
        v = i32(x[i])
        indicator: f32 = 1.0 if v == ix else 0.0   # the annotation types the literals
        w = 0.25 if v > ix else 0.5                # typed where it meets f32
        weights[i] = indicator + w * f32(x[i])
        out[i] = 2.0 if escapes(x[i] * x[i], x[i]) else -1.0


@ox.kernel
def threadfence_sum(x: Slice[f32], partial: MutSlice[f32], total: MutSlice[f32]) -> None:
    """cuda-samples' threadfenceReduction: each block sums its part; the last block to finish
    (a ticket from the device counter) sums the blocks' partial sums."""
    assert block.dim.x == BLOCK
    sdata = ox.shared.array(BLOCK, f32)
    am_last = ox.shared.array(1, ox.boolean)
    tid = thread.idx.x
    acc: f32 = 0.0
    k = i32(block.idx.x) * BLOCK + tid
    while k < len(x):
        acc += x[k]
        k += BLOCK * grid.dim.x
    sdata[tid] = acc
    block.sync()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        block.sync()
        s //= 2
    if tid == 0:
        with ox.unsafe():
            partial[block.idx.x] = sdata[0]
        ox.fence.device()
        ticket = ox.atomic.inc(retirement_count, 0, u32(grid.dim.x - 1))  # wraps to 0 after the last: ready again
        am_last[0] = ticket == u32(grid.dim.x - 1)
    block.sync()
    if block.sync_or(am_last[0]):                  # every thread gets the block's one answer
        part: f32 = 0.0
        j = tid
        while j < grid.dim.x:
            part += ox.volatile.load(partial, j)
            j += BLOCK
        sdata[tid] = part
        block.sync()
        s = BLOCK // 2
        while s > 0:
            if tid < s:
                sdata[tid] += sdata[tid + s]
            block.sync()
            s //= 2
        if tid == 0:
            with ox.unsafe():
                total[0] = sdata[0]


@ox.kernel
def half2_atomic_add(x: Slice[ox.f16], acc: MutSlice[ox.f16], slots: i32) -> None:
    """atomicAdd(reinterpret_cast<__half2*>(acc) + i % slots, __halves2half2(x[2i], x[2i+1]))."""
    i = thread.index_1d()
    if 2 * i + 1 < len(x):
        ox.atomic.add(acc, i % slots, ox.f16x2(x[2 * i], x[2 * i + 1]))

