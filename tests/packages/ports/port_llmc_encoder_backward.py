"""Token and position embedding backward: a thread per (b, t, c) adds dout into dwte and dwpe with
atomics.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/encoder_backward.cu
(`encoder_backward_kernel2`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread


@ox.kernel
def encoder_backward_kernel2(dwte: MutSlice[f32], dwpe: MutSlice[f32], dout: Slice[f32], inp: Slice[i32], b: i32,
                             t: i32, c: i32) -> None:
    idx = thread.index_1d()
    n = b * t * c
    if idx < n:
        bt = idx // c
        tt = bt % t
        cc = idx % c
        ix = inp[bt]
        dout_btc = dout[bt * c + cc]
        ox.atomic.add(dwte, ix * c + cc, dout_btc)
        ox.atomic.add(dwpe, tt * c + cc, dout_btc)
