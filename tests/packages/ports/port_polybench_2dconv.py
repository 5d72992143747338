"""3x3 2-D convolution with fixed coefficients, one thread per output pixel.

Ported from PolyBench-GPU 1.0, CUDA/2DCONV/2DConvolution.cu (`Convolution2D_kernel`), the way its
author writes it: NI/NJ as #defines (module constants), the nine coefficients as locals, the
border skipped by one guard."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

NI = 4096
NJ = 4096


@ox.kernel
def convolution2d_kernel(A: Slice[f32], B: MutSlice[f32]) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    c11 = f32(0.2)
    c21 = f32(0.5)
    c31 = f32(-0.8)
    c12 = f32(-0.3)
    c22 = f32(0.6)
    c32 = f32(-0.9)
    c13 = f32(0.4)
    c23 = f32(0.7)
    c33 = f32(0.10)
    if i < NI - 1 and j < NJ - 1 and i > 0 and j > 0:
        with ox.unsafe():
            B[i * NJ + j] = (c11 * A[(i - 1) * NJ + (j - 1)] + c21 * A[(i - 1) * NJ + (j + 0)] + c31 * A[(i - 1) * NJ + (j + 1)]
                             + c12 * A[(i + 0) * NJ + (j - 1)] + c22 * A[(i + 0) * NJ + (j + 0)] + c32 * A[(i + 0) * NJ + (j + 1)]
                             + c13 * A[(i + 1) * NJ + (j - 1)] + c23 * A[(i + 1) * NJ + (j + 0)] + c33 * A[(i + 1) * NJ + (j + 1)])
