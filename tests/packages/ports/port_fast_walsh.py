"""Fast Walsh-Hadamard transform of a batch of vectors, one vector per block in shared memory.

Ported from NVIDIA cuda-samples, Samples/5_Domain_Specific/fastWalshTransform/
fastWalshTransform_kernel.cuh (`fwtBatch1Kernel`), the way its author writes it: the vector
length as log2N, N and the block's base from shifts, dynamic shared memory
(`extern __shared__ float s_data[]`, sized N floats at launch), the source and destination
pointers moved to the block's vector, radix-4 butterflies with `stride >>= 2`, one radix-2
stage when log2N is odd, `pos` both a loop variable and the thread's index."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def fwt_batch1_kernel(d_output: MutSlice[f32], d_input: Slice[f32], log2N: i32) -> None:
    N = 1 << log2N
    base = block.idx.x << log2N

    s_data = ox.shared.dynamic(f32)
    d_src = d_input + base
    d_dst = d_output + base

    for pos in range(thread.idx.x, N, block.dim.x):
        s_data[pos] = d_src[pos]

    # main radix-4 stages
    pos = thread.idx.x
    stride = N >> 2
    while stride > 0:
        lo = pos & (stride - 1)
        i0 = ((pos - lo) << 2) + lo
        i1 = i0 + stride
        i2 = i1 + stride
        i3 = i2 + stride

        block.sync()
        D0 = s_data[i0]
        D1 = s_data[i1]
        D2 = s_data[i2]
        D3 = s_data[i3]

        T = D0
        D0 = D0 + D2
        D2 = T - D2
        T = D1
        D1 = D1 + D3
        D3 = T - D3
        T = D0
        s_data[i0] = D0 + D1
        s_data[i1] = T - D1
        T = D2
        s_data[i2] = D2 + D3
        s_data[i3] = T - D3
        stride >>= 2

    # a single radix-2 stage for an odd power of two
    if log2N & 1:
        block.sync()
        for pos in range(thread.idx.x, N // 2, block.dim.x):
            i0 = pos << 1
            i1 = i0 + 1
            D0 = s_data[i0]
            D1 = s_data[i1]
            s_data[i0] = D0 + D1
            s_data[i1] = D0 - D1

    block.sync()
    for pos in range(thread.idx.x, N, block.dim.x):
        with ox.unsafe():
            d_dst[pos] = s_data[pos]
