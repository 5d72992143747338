"""Softmax of each row, a thread per row, the sum in double.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/softmax_forward.cu
(`softmax_forward_kernel1`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, f64, i32, thread


@ox.kernel
def softmax_forward_kernel1(out: MutSlice[f32], inp: Slice[f32], n: i32, c: i32) -> None:
    i = thread.index_1d()
    if i < n:
        inp_row = inp[i * c:]
        out_row = out[i * c:]
        maxval = float("-inf")
        for j in range(c):
            if inp_row[j] > maxval:
                maxval = inp_row[j]
        sum: f64 = 0.0
        for j in range(c):
            with ox.unsafe():
                out_row[j] = ox.math.exp(inp_row[j] - maxval)
            sum += out_row[j]
        for j in range(c):
            with ox.unsafe():
                out_row[j] /= f32(sum)
