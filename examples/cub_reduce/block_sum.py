"""Sum of an array with CUB: each block reduces 256 elements with cub::BlockReduce (called
through the C wrapper in cub_reduce.cu) and adds its partial sum to the total atomically.

    oxide compile examples/cub_reduce/block_sum.py -o out      # NVRTC + libNVVM + nvJitLink -lto

    import torch
    from examples.cub_reduce.block_sum import total
    x = torch.randn(1 << 20, device="cuda")
    out = torch.zeros(1, device="cuda")
    total[total.grid_for(len(x)), 256](x, out)     # 256 threads per block, as cub_reduce.cu assumes

On the CPU device (OXIDE_DEVICE=cpu), which cannot compile CUB, each declaration runs the Python
implementation its cpu= names (docs/interop.md, "On the CPU device").
"""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, kernel, thread, warp


def block_sum_on_cpu(x: f32) -> f32:
    """cub::BlockReduce<float, 256>::Sum: a tree over shared memory (valid in every thread)."""
    values = ox.shared.array(256, f32)
    t = thread.idx.x
    values[t] = x
    block.sync()
    half = 128
    while half > 0:
        if t < half:
            values[t] = values[t] + values[t + half]
        block.sync()
        half //= 2
    result = values[0]
    block.sync()  # every thread has read it before the next reduction writes
    return result


def warp_sum_on_cpu(x: f32) -> f32:
    """cub::WarpReduce<float>::Sum: a butterfly of shuffles (valid in every lane)."""
    v = x
    offset = 16
    while offset > 0:
        v = v + warp.shfl_xor(v, offset)
        offset //= 2
    return v


@ox.extern("cub_block_sum", sources=["cub_reduce.cu"], cpu=block_sum_on_cpu)
def block_sum(x: f32) -> f32: ...


@ox.extern("cub_warp_sum", sources=["cub_reduce.cu"], cpu=warp_sum_on_cpu)
def warp_sum(x: f32) -> f32: ...


@kernel
def total(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = f32(0.0)
    if i < len(x):
        v = x[i]
    s = block_sum(v)  # every thread takes part, also those past the end
    if thread.idx.x == 0:
        ox.atomic.add(out, 0, s)


@kernel
def total_by_warps(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = f32(0.0)
    if i < len(x):
        v = x[i]
    s = warp_sum(v)
    if thread.idx.x % 32 == 0:
        ox.atomic.add(out, 0, s)
