"""GELU backward (tanh approximation), one thread per element.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/gelu_backward.cu (`gelu_backward1`), the way
its author writes it: tanh and cosh of the same argument, the squared sech, the local gradient
times the incoming one. oxide has no `cosh`: written from `exp`, as a user does."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

GELU_SCALING_FACTOR = 0.7978845608028654  # sqrtf(2.0f / M_PI): a kernel takes number literals only


@ox.kernel
def gelu_backward1(dinp: MutSlice[f32], inp: Slice[f32], dout: Slice[f32], N: i32) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i < N:
        x = inp[i]
        cube = 0.044715 * x * x * x
        tanh_arg = GELU_SCALING_FACTOR * (x + cube)
        tanh_out = ox.math.tanh(tanh_arg)
        coshf_out = 0.5 * (ox.math.exp(tanh_arg) + ox.math.exp(-tanh_arg))
        sech_out = 1.0 / (coshf_out * coshf_out)
        local_grad = 0.5 * (1.0 + tanh_out) + x * 0.5 * sech_out * GELU_SCALING_FACTOR * (1.0 + 3.0 * 0.044715 * x * x)
        with ox.unsafe():
            dinp[i] = local_grad * dout[i]
