"""Tiled single-precision matrix multiply C = A * B.

Ported from NVIDIA cuda-samples, Samples/0_Introduction/matrixMul/matrixMul.cu
(`MatrixMulCUDA<int BLOCK_SIZE>`), the way its author writes it: BLOCK_SIZE a template
parameter, the sub-matrices of A and B walked pointer-style with aBegin/aEnd/aStep and
bStep, two shared tiles, an unrolled inner product, dimensions as int. Like the original it
needs wA and wB to be multiples of BLOCK_SIZE and a grid that covers C exactly."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel(constexprs={"BLOCK_SIZE": [16, 32]})
def matrix_mul_cuda(C: MutSlice[f32], A: Slice[f32], B: Slice[f32], wA: i32, wB: i32,
                    BLOCK_SIZE: ox.Constexpr[int]) -> None:
    bx = block.idx.x
    by = block.idx.y
    tx = thread.idx.x
    ty = thread.idx.y

    a_begin = wA * BLOCK_SIZE * by
    a_end = a_begin + wA - 1
    a_step = BLOCK_SIZE
    b_begin = BLOCK_SIZE * bx
    b_step = BLOCK_SIZE * wB

    c_sub: f32 = 0.0

    a = a_begin
    b = b_begin
    while a <= a_end:
        As = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
        Bs = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
        As[ty, tx] = A[a + wA * ty + tx]
        Bs[ty, tx] = B[b + wB * ty + tx]
        block.sync()
        for k in ox.static_range(BLOCK_SIZE):
            c_sub += As[ty, k] * Bs[k, tx]
        block.sync()
        a += a_step
        b += b_step

    c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx
    with ox.unsafe():
        C[c + wB * ty + tx] = c_sub
