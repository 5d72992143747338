"""Exact (erf) GELU over a tensor of any floating type, grid-stride.

Ported from PyTorch, aten/src/ATen/native/cuda/ActivationGeluKernel.cu (`GeluCUDAKernelImpl`,
GeluType::None) written as the plain templated kernel a CUDA author writes for it: `template
<typename scalar_t>`, `using opmath_t = at::opmath_type<scalar_t>` (f32 for half and bfloat16),
`kAlpha = M_SQRT1_2` as a constant, `static_cast<opmath_t>(x)` in and `static_cast<scalar_t>`
out, an int64 grid-stride loop."""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, f32, f64, grid, i64, thread

scalar_t = ox.TypeVar("scalar_t", f16, bf16, f32, f64)
M_SQRT1_2 = 0.70710678118654752440


@ox.kernel
def gelu_kernel(x: Slice[scalar_t], y: MutSlice[scalar_t], n: i64) -> None:
    K_ALPHA = M_SQRT1_2
    i = i64(block.idx.x) * block.dim.x + thread.idx.x
    while i < n:
        v = ox.acc_type(scalar_t)(x[i])
        with ox.unsafe():
            y[i] = scalar_t(v * 0.5 * (1 + ox.math.erf(v * K_ALPHA)))
        i += i64(block.dim.x) * grid.dim.x
