"""Rows filled one after another by the whole grid, with a grid-wide barrier between rows.

Ported from numba-cuda's documentation, "Cooperative Groups" (`sequential_rows`), the way a
numba author writes it: `col = cuda.grid(1)`, the grid group's `sync()` after each row, the
shape read from the array, each element one more than the mirrored element of the row above
(written by another thread, often of another block)."""
import oxide as ox
from oxide import MutTensor, grid, i32, thread


@ox.kernel
def sequential_rows(M: MutTensor[i32, 2]) -> None:
    col = thread.index_1d()
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        with ox.unsafe():
            M[row, col] = M[row - 1, opposite] + 1
        grid.sync()
