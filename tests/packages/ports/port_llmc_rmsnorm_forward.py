"""RMSNorm forward: a block per row computes 1/rms (warp shuffles, then the warps' sums), then a
thread per element normalizes, scales and shifts.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/rmsnorm_forward.cu (`rms_val_kernel`,
`block_all_reduce_sum`, `rmsnorm_forward_kernel2`), as first written in issue 29's second probe.
Two changes from the C, which has bugs there: its reduction helpers return `int` (here `f32`),
and no `__syncthreads()` separates the warps' writes of `shared` from the reads (here a
`block.sync()`: a race otherwise)."""
import oxide as ox
from oxide import Slice, MutSlice, DisjointSlice, f32, i32, thread, block, warp

WARP_SIZE = 32


def warp_all_reduce_sum(val: f32) -> f32:
    stride = WARP_SIZE >> 1
    while stride > 0:
        val += warp.shfl_xor(val, stride)
        stride >>= 1
    return val


def block_all_reduce_sum(val: f32, block_size: i32) -> f32:
    shared = ox.shared.array(WARP_SIZE, f32)
    tid = thread.idx.x
    lane_id = tid % WARP_SIZE
    warp_id = tid // WARP_SIZE
    val = warp_all_reduce_sum(val)
    if lane_id == 0:
        shared[warp_id] = val
    block.sync()
    val = shared[lane_id] if lane_id < block_size // WARP_SIZE else 0.0
    if warp_id == 0:
        val = warp_all_reduce_sum(val)
    return val


@ox.kernel
def rms_val_kernel(rms: MutSlice[f32], inp: Slice[f32], n: i32, c: i32, block_size: i32) -> None:
    tid = thread.idx.x
    idx = block.idx.x
    x = inp[idx * c:]
    sum_of_squares = 0.0
    for i in range(tid, c, block.dim.x):
        sum_of_squares += x[i] * x[i]
    sum_of_squares = block_all_reduce_sum(sum_of_squares, block_size)
    if tid == 0:
        with ox.unsafe():
            rms[idx] = ox.math.rsqrt(sum_of_squares / c)


@ox.kernel
def rmsnorm_forward_kernel2(out: DisjointSlice[f32], rms: Slice[f32], inp: Slice[f32], weight: Slice[f32],
                            bias: Slice[f32], b: i32, t: i32, c: i32) -> None:
    idx = thread.index_1d()
    bt = idx // c
    cc = idx % c
    rms_val = rms[bt]
    xi = inp[idx]
    nn = xi * rms_val
    o = nn * weight[cc] + bias[cc]
    out[idx] = o
