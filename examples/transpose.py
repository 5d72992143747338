"""Matrix transpose through a 32×33 shared-memory tile (the padding avoids bank conflicts);
blocks of 32×8 threads, each moving four elements."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, i64, thread

TILE = 32
ROWS = 8


@ox.kernel
def transpose(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
    # preconditions, checked once per thread; they prove every index below in bounds
    assert block.dim.x == TILE and block.dim.y == ROWS
    assert len(x) == i64(rows) * cols and len(out) == len(x)
    tile = ox.shared.array((TILE, TILE + 1), f32)
    tx = thread.idx.x
    ty = thread.idx.y
    col = block.idx.x * TILE + tx
    for k in ox.static_range(0, TILE, ROWS):
        row = block.idx.y * TILE + ty + k
        if row < rows and col < cols:
            tile[ty + k, tx] = x[i64(row) * cols + col]
    block.sync()
    out_col = block.idx.y * TILE + tx
    for k in ox.static_range(0, TILE, ROWS):
        out_row = block.idx.x * TILE + ty + k
        if out_row < cols and out_col < rows:
            with ox.unsafe():
                out[i64(out_row) * rows + out_col] = tile[tx, ty + k]
