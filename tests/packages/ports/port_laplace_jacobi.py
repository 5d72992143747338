"""One Jacobi sweep of the 2-D Laplace equation through a shared tile, with the error.

Ported from numba-cuda's documentation-style stencil examples (the Jacobi relaxation of
"CUDA Python" courses: `cuda.grid(2)`, a `cuda.shared.array` tile with a one-cell halo,
`cuda.syncthreads()`, the max error folded with `cuda.atomic.max`), the way a numba author
writes it: the grid position from `cuda.grid(2)` (here `thread.index_2d()`), the halo loaded
by the edge threads, boundary cells copied through, the largest change in a one-element array."""
import oxide as ox
from oxide import DisjointTensor, MutSlice, Tensor, block, f32, thread

TPB = 16


@ox.kernel
def jacobi_sweep(a: Tensor[f32, 2], a_new: DisjointTensor[f32, 2], error: MutSlice[f32]) -> None:
    tile = ox.shared.array((TPB + 2, TPB + 2), f32)
    i, j = thread.index_2d()
    tx = thread.idx.x + 1
    ty = thread.idx.y + 1
    n = a.shape[0]
    m = a.shape[1]

    inside = i < n and j < m
    if inside:
        tile[ty, tx] = a[i, j]
        if thread.idx.x == 0 and j > 0:
            tile[ty, 0] = a[i, j - 1]
        if thread.idx.x == TPB - 1 and j < m - 1:
            tile[ty, TPB + 1] = a[i, j + 1]
        if thread.idx.y == 0 and i > 0:
            tile[0, tx] = a[i - 1, j]
        if thread.idx.y == TPB - 1 and i < n - 1:
            tile[TPB + 1, tx] = a[i + 1, j]
    block.sync()

    if inside:
        if i > 0 and j > 0 and i < n - 1 and j < m - 1:
            value = 0.25 * (tile[ty, tx - 1] + tile[ty, tx + 1] + tile[ty - 1, tx] + tile[ty + 1, tx])
            a_new[i, j] = value
            ox.atomic.max(error, 0, abs(value - tile[ty, tx]))
        else:
            a_new[i, j] = tile[ty, tx]
