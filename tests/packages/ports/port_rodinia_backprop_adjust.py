"""Backpropagation: the weight update with momentum of one layer, 16x16 threads per block.

Ported from Rodinia 3.1 (University of Virginia, BSD-style), cuda/backprop/backprop_cuda_kernel.cu
(`bpnn_adjust_weights_cuda`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block

ETA = 0.3
MOMENTUM = 0.3
WIDTH = 16
HEIGHT = 16


@ox.kernel
def bpnn_adjust_weights_cuda(delta: Slice[f32], hid: i32, ly: Slice[f32], inp: i32, w: MutSlice[f32],
                             oldw: MutSlice[f32]) -> None:
    by = block.idx.y
    tx = thread.idx.x
    ty = thread.idx.y
    index = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1)
    index_y = HEIGHT * by + ty + 1
    index_x = tx + 1
    with ox.unsafe():
        w[index] += ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]))
        oldw[index] = ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]))
    block.sync()
    if ty == 0 and by == 0:
        with ox.unsafe():
            w[index_x] += ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]))
            oldw[index_x] = ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]))
