"""Vector addition, one element per thread.

Ported from NVIDIA cuda-samples, Samples/0_Introduction/vectorAdd/vectorAdd.cu (`vectorAdd`), the
way its author writes it: `blockDim.x * blockIdx.x + threadIdx.x`, `if (i < numElements)`, the
`+ 0.0f`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def vector_add(A: Slice[f32], B: Slice[f32], C: MutSlice[f32], numElements: i32) -> None:
    i = block.dim.x * block.idx.x + thread.idx.x
    if i < numElements:
        with ox.unsafe():
            C[i] = A[i] + B[i] + 0.0
