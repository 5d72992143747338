"""Kernels for tests/test_disjoint_tensors_gpu.py: N-d DisjointTensor writes."""
import oxide as ox
from oxide import DisjointTensor, Tensor, f32, f64, i64, thread, block, grid

BLOCK = 64
THREADS = 2 * BLOCK


@ox.kernel(launch_bounds=THREADS)
def scale3(x: Tensor[f64, 3], out: DisjointTensor[f64, 3]) -> None:
    d, r, c = thread.index_3d()
    if d < out.shape[0] and r < out.shape[1] and c < out.shape[2]:
        out[d, r, c] = x[d, r, c] * 2.0 + f64(d * 10000 + r * 100 + c)


@ox.kernel
def add_rows(x: Tensor[f32, 2], bias: Tensor[f32, 1], out: DisjointTensor[f32, 2]) -> None:
    # the LLTM original's indexing: one grid row per batch row, columns over x
    assert grid.dim.y == out.shape[0] and grid.dim.y == x.shape[0]
    col = thread.index_1d()
    if col < out.shape[1] and col < x.shape[1] and col < bias.shape[0]:
        out[block.idx.y, col] = x[block.idx.y, col] + bias[col]
