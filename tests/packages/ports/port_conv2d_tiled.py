"""Tiled 2-D convolution with the mask in constant memory and a haloed input tile.

Ported from Kirk and Hwu, "Programming Massively Parallel Processors" (3rd ed.), chapter 7
(`convolution_2D_tiled_kernel`, the input-tile strategy), the way its authors write it:
`__constant__ float M[MASK_WIDTH][MASK_WIDTH]` copied from the host, O_TILE_WIDTH and
BLOCK_WIDTH = O_TILE_WIDTH + MASK_WIDTH - 1 as #defines, every thread loading one input
element (0.0f outside the image), the threads of the output tile summing the mask products
with two nested loops, ghost output elements skipped."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

MASK_WIDTH = 5
O_TILE_WIDTH = 12
BLOCK_WIDTH = O_TILE_WIDTH + MASK_WIDTH - 1

M = ox.constant.array((MASK_WIDTH, MASK_WIDTH), f32)


@ox.kernel
def convolution_2d_tiled(P: MutSlice[f32], N: Slice[f32], height: i32, width: i32, pitch: i32) -> None:
    tx = thread.idx.x
    ty = thread.idx.y
    row_o = block.idx.y * O_TILE_WIDTH + ty
    col_o = block.idx.x * O_TILE_WIDTH + tx
    row_i = row_o - MASK_WIDTH // 2
    col_i = col_o - MASK_WIDTH // 2

    N_ds = ox.shared.array((BLOCK_WIDTH, BLOCK_WIDTH), f32)
    if row_i >= 0 and row_i < height and col_i >= 0 and col_i < width:
        N_ds[ty, tx] = N[row_i * pitch + col_i]
    else:
        N_ds[ty, tx] = 0.0
    block.sync()

    output = 0.0
    if ty < O_TILE_WIDTH and tx < O_TILE_WIDTH:
        for i in range(MASK_WIDTH):
            for j in range(MASK_WIDTH):
                output += M[i, j] * N_ds[i + ty, j + tx]
        if row_o < height and col_o < width:
            with ox.unsafe():
                P[row_o * width + col_o] = output
