"""The bias gradient: a block per output channel sums dout's column (a shared-memory tree in
dynamic shared memory) and adds it to dbias.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/matmul_backward_bias.cu
(`matmul_backward_bias_kernel1`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block


@ox.kernel
def matmul_backward_bias_kernel1(dbias: MutSlice[f32], dout: Slice[f32], b: i32, t: i32, oc: i32) -> None:
    shared = ox.shared.dynamic(f32)
    o = block.idx.x
    tid = thread.idx.x
    block_size = block.dim.x
    x = dout[o:]
    sum = 0.0
    for i in range(tid, b * t, block_size):
        sum += x[i * oc]
    shared[tid] = sum
    block.sync()
    stride = block_size // 2
    while stride >= 1:
        block.sync()
        if tid < stride:
            shared[tid] += shared[tid + stride]
        stride //= 2
    if tid == 0:
        with ox.unsafe():
            dbias[o] += shared[0]
