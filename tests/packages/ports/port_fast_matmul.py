"""Tiled matrix product with shared memory.

Ported from the numba-cuda documentation, "Matrix multiplication" (`fast_matmul`, examples
in docs/source/cuda/examples.rst), the way its author writes it: `TPB` a module constant,
`cuda.shared.array(shape=(TPB, TPB), dtype=float32)` with keywords, a square 2-D grid."""
import oxide as ox
from oxide import DisjointTensor, Tensor, block, f32, grid, thread

TPB = 16


@ox.kernel
def fast_matmul(A: Tensor[f32, 2], B: Tensor[f32, 2], C: DisjointTensor[f32, 2]) -> None:
    sA = ox.shared.array(shape=(TPB, TPB), dtype=f32)
    sB = ox.shared.array(shape=(TPB, TPB), dtype=f32)
    row, col = thread.index_2d()
    tx = thread.idx.x
    ty = thread.idx.y
    bpg = grid.dim.x
    tmp = f32(0.0)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if row < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[row, tx + i * TPB]
        if col < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, col]
        block.sync()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        block.sync()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = tmp
