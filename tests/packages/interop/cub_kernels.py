"""Python kernels calling CUB's BlockReduce / WarpReduce through C wrappers (csrc/cub_reduce.cu).
Launch with 256 threads per block: every thread reaches the reduction.

CUB is GPU code the host's C++ compiler cannot compile: on the CPU device each declaration runs the
Python implementation its cpu= names (docs/interop.md, "On the CPU device")."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i64, kernel, thread, warp

BLOCK = 256


def block_sum_256_on_cpu(x: f32) -> f32:
    """CUB's BlockReduce::Sum over 256 threads: a tree over shared memory (valid in every thread)."""
    values = ox.shared.array(BLOCK, f32)
    t = thread.idx.x
    values[t] = x
    block.sync()
    half = BLOCK // 2
    while half > 0:
        if t < half:
            values[t] = values[t] + values[t + half]
        block.sync()
        half //= 2
    result = values[0]
    block.sync()  # every thread has read it before the next reduction writes
    return result


def block_max_256_on_cpu(x: f32) -> f32:
    """CUB's BlockReduce::Reduce(x, maximum) over 256 threads."""
    values = ox.shared.array(BLOCK, f32)
    t = thread.idx.x
    values[t] = x
    block.sync()
    half = BLOCK // 2
    while half > 0:
        if t < half:
            values[t] = max(values[t], values[t + half])
        block.sync()
        half //= 2
    result = values[0]
    block.sync()
    return result


def warp_sum_on_cpu(x: f32) -> f32:
    """CUB's WarpReduce::Sum: a butterfly of shuffles (valid in every lane)."""
    v = x
    offset = 16
    while offset > 0:
        v = v + warp.shfl_xor(v, offset)
        offset //= 2
    return v


@ox.extern("ox_block_sum_256", sources=["csrc/cub_reduce.cu"], cpu=block_sum_256_on_cpu)
def block_sum_256(x: f32) -> f32: ...


@ox.extern("ox_block_max_256", sources=["csrc/cub_reduce.cu"], cpu=block_max_256_on_cpu)
def block_max_256(x: f32) -> f32: ...


@ox.extern("ox_warp_sum", sources=["csrc/cub_reduce.cu"], cpu=warp_sum_on_cpu)
def warp_sum(x: f32) -> f32: ...


@kernel
def block_sums(x: Slice[f32], sums: MutSlice[f32], maxes: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = f32(0.0)
    m = f32(-3.0e38)
    if i < len(x):
        v = x[i]
        m = x[i]
    s = block_sum_256(v)
    mx = block_max_256(m)
    if thread.idx.x == 0:
        with ox.unsafe():
            sums[block.idx.x] = s
            maxes[block.idx.x] = mx


@kernel
def warp_sums(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = f32(0.0)
    if i < len(x):
        v = x[i]
    s = warp_sum(v)
    if thread.idx.x % 32 == 0:
        with ox.unsafe():
            out[i64(i) // 32] = s
