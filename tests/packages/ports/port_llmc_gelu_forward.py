"""GELU forward, the tanh approximation, one thread per element.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/gelu_forward.cu (`gelu_forward_kernel1`), the
way its author writes it: `GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)` as a module constant, the cube
term, `tanhf`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

GELU_SCALING_FACTOR = 0.7978845608028654  # sqrtf(2.0f / M_PI): a kernel takes number literals only


@ox.kernel
def gelu_forward_kernel1(out: MutSlice[f32], inp: Slice[f32], N: i32) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < N:
        xi = inp[i]
        cube = 0.044715 * xi * xi * xi
        with ox.unsafe():
            out[i] = 0.5 * xi * (1.0 + ox.math.tanh(GELU_SCALING_FACTOR * (xi + cube)))
