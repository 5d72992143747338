"""3-D convolution, one launch per plane, one thread per (j, k) of it.

Ported from PolyBench-GPU 1.0, CUDA/3DCONV/3DConvolution.cu (`convolution3D_kernel`), the way its
author writes it: NI/NJ/NK as #defines (module constants), the plane index a parameter, the
coefficients as locals, the upstream sum with its repeated terms as written."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

NI = 256
NJ = 256
NK = 256


@ox.kernel
def convolution3d_kernel(A: Slice[f32], B: MutSlice[f32], i: i32) -> None:
    k = block.idx.x * block.dim.x + thread.idx.x
    j = block.idx.y * block.dim.y + thread.idx.y
    c11 = f32(2)
    c21 = f32(5)
    c31 = f32(-8)
    c12 = f32(-3)
    c22 = f32(6)
    c32 = f32(-9)
    c13 = f32(4)
    c23 = f32(7)
    c33 = f32(10)
    if i < NI - 1 and j < NJ - 1 and k < NK - 1 and i > 0 and j > 0 and k > 0:
        with ox.unsafe():
            B[i * (NK * NJ) + j * NK + k] = (
                c11 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k - 1)] + c13 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + (k - 1)]
                + c21 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k - 1)] + c23 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + (k - 1)]
                + c31 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k - 1)] + c33 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + (k - 1)]
                + c12 * A[(i + 0) * (NK * NJ) + (j - 1) * NK + (k + 0)] + c22 * A[(i + 0) * (NK * NJ) + (j + 0) * NK + (k + 0)]
                + c32 * A[(i + 0) * (NK * NJ) + (j + 1) * NK + (k + 0)] + c11 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k + 1)]
                + c13 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + (k + 1)] + c21 * A[(i - 1) * (NK * NJ) + (j + 0) * NK + (k + 1)]
                + c23 * A[(i + 1) * (NK * NJ) + (j + 0) * NK + (k + 1)] + c31 * A[(i - 1) * (NK * NJ) + (j + 1) * NK + (k + 1)]
                + c33 * A[(i + 1) * (NK * NJ) + (j + 1) * NK + (k + 1)])
