"""Naive matrix transpose: coalesced reads, strided writes.

Ported from NVIDIA cuda-samples, Samples/6_Performance/transpose/transpose.cu (`transposeNaive`),
the way its author writes it: TILE_DIM and BLOCK_ROWS constants, int index arithmetic, a loop of
TILE_DIM / BLOCK_ROWS rows per thread."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

TILE_DIM = 32
BLOCK_ROWS = 8


@ox.kernel
def transpose_naive(odata: MutSlice[f32], idata: Slice[f32], width: i32, height: i32) -> None:
    x_index = block.idx.x * TILE_DIM + thread.idx.x
    y_index = block.idx.y * TILE_DIM + thread.idx.y
    index_in = x_index + width * y_index
    index_out = y_index + height * x_index
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        with ox.unsafe():
            odata[index_out + i] = idata[index_in + i * width]
