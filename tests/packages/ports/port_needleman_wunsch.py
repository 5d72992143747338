"""Needleman-Wunsch alignment scores, one 16x16 block of the matrix per thread block.

Ported from Rodinia 3.1, cuda/nw/needle_kernel.cu (`needle_cuda_shared_1`,
`needle_cuda_shared_2`, `maximum`), the way its author writes it: the host launches one
kernel per anti-diagonal of blocks, each block copies its reference scores and the
neighbouring row and column into shared tiles, sweeps its own anti-diagonals with
`__syncthreads()` between them, and writes the tile back; int everywhere, indices computed
from `cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + ...`."""
import oxide as ox
from oxide import MutSlice, Slice, block, i32, thread

BLOCK_SIZE = 16


def maximum(a: i32, b: i32, c: i32) -> i32:
    if a <= b:
        k = b
    else:
        k = a
    if k <= c:
        return c
    else:
        return k


def needle_block(referrence: Slice[i32], matrix_cuda: MutSlice[i32], cols: i32, penalty: i32,
                 b_index_x: i32, b_index_y: i32) -> None:
    tx = thread.idx.x
    index = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + (cols + 1)
    index_n = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + tx + 1
    index_w = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x + cols
    index_nw = cols * BLOCK_SIZE * b_index_y + BLOCK_SIZE * b_index_x

    temp = ox.shared.array((BLOCK_SIZE + 1, BLOCK_SIZE + 1), i32)
    ref = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), i32)

    if tx == 0:
        temp[tx, 0] = matrix_cuda[index_nw]
    for ty in range(BLOCK_SIZE):
        ref[ty, tx] = referrence[index + cols * ty]
    block.sync()
    temp[tx + 1, 0] = matrix_cuda[index_w + cols * tx]
    block.sync()
    temp[0, tx + 1] = matrix_cuda[index_n]
    block.sync()

    for m in range(BLOCK_SIZE):
        if tx <= m:
            t_index_x = tx + 1
            t_index_y = m - tx + 1
            temp[t_index_y, t_index_x] = maximum(temp[t_index_y - 1, t_index_x - 1] + ref[t_index_y - 1, t_index_x - 1],
                                                 temp[t_index_y, t_index_x - 1] - penalty,
                                                 temp[t_index_y - 1, t_index_x] - penalty)
        block.sync()

    for m in range(BLOCK_SIZE - 2, -1, -1):
        if tx <= m:
            t_index_x = tx + BLOCK_SIZE - m
            t_index_y = BLOCK_SIZE - tx
            temp[t_index_y, t_index_x] = maximum(temp[t_index_y - 1, t_index_x - 1] + ref[t_index_y - 1, t_index_x - 1],
                                                 temp[t_index_y, t_index_x - 1] - penalty,
                                                 temp[t_index_y - 1, t_index_x] - penalty)
        block.sync()

    for ty in range(BLOCK_SIZE):
        with ox.unsafe():
            matrix_cuda[index + ty * cols] = temp[ty + 1, tx + 1]


@ox.kernel
def needle_cuda_shared_1(referrence: Slice[i32], matrix_cuda: MutSlice[i32], cols: i32, penalty: i32,
                         i: i32, block_width: i32) -> None:
    bx = block.idx.x
    needle_block(referrence, matrix_cuda, cols, penalty, bx, i - 1 - bx)


@ox.kernel
def needle_cuda_shared_2(referrence: Slice[i32], matrix_cuda: MutSlice[i32], cols: i32, penalty: i32,
                         i: i32, block_width: i32) -> None:
    bx = block.idx.x
    needle_block(referrence, matrix_cuda, cols, penalty, bx + block_width - i, block_width - bx - 1)
