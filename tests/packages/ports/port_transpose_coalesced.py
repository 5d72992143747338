"""Matrix transpose through a padded shared tile.

Ported from NVIDIA cuda-samples, Samples/6_Performance/transpose/transpose.cu
(`transposeNoBankConflicts`), the way its author writes it: index arithmetic in int, the
tile loop with a run-time `for`, the tile width and rows module constants."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

TILE_DIM = 32
BLOCK_ROWS = 8


@ox.kernel
def transpose_no_bank_conflicts(odata: MutSlice[f32], idata: Slice[f32], width: i32, height: i32) -> None:
    tile = ox.shared.array((TILE_DIM, TILE_DIM + 1), f32)
    x_index = block.idx.x * TILE_DIM + thread.idx.x
    y_index = block.idx.y * TILE_DIM + thread.idx.y
    index_in = x_index + y_index * width
    x_index = block.idx.y * TILE_DIM + thread.idx.x
    y_index = block.idx.x * TILE_DIM + thread.idx.y
    index_out = x_index + y_index * height
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        tile[thread.idx.y + i, thread.idx.x] = idata[index_in + i * width]
    block.sync()
    for i in range(0, TILE_DIM, BLOCK_ROWS):
        with ox.unsafe():
            odata[index_out + i * height] = tile[thread.idx.x, thread.idx.y + i]
