"""Residual connection forward: the elementwise sum of two activations.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/residual_forward.cu (`residual_forward_kernel1`),
the way its author writes it: one thread per element, an `if (idx < N)` guard."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def residual_forward_kernel1(out: MutSlice[f32], inp1: Slice[f32], inp2: Slice[f32], N: i32) -> None:
    idx = block.idx.x * block.dim.x + thread.idx.x
    if idx < N:
        with ox.unsafe():
            out[idx] = inp1[idx] + inp2[idx]
