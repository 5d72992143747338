"""Python kernels calling CUB's BlockReduce / WarpReduce through C wrappers (csrc/cub_reduce.cu).
Launch with 256 threads per block: every thread reaches the reduction."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i64, kernel, thread


@ox.extern("ox_block_sum_256", sources=["csrc/cub_reduce.cu"])
def block_sum_256(x: f32) -> f32: ...


@ox.extern("ox_block_max_256", sources=["csrc/cub_reduce.cu"])
def block_max_256(x: f32) -> f32: ...


@ox.extern("ox_warp_sum", sources=["csrc/cub_reduce.cu"])
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
