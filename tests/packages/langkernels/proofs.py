"""Kernels whose bounds checks the compiler proves away (tests/test_bounds_gpu.py)."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, i32, i64, thread

WIDTH = 8192  # columns per block: i32 `block.idx.x * WIDTH + …` is exact only for grid.x <= 2^18


@ox.kernel
def scale_wide(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
    assert len(x) == n and len(out) == n
    for k in ox.static_range(0, WIDTH, 1024):
        col = block.idx.x * WIDTH + k + thread.idx.x
        if col < n:
            with ox.unsafe():
                out[col] = 2.0 * x[col]


@ox.kernel
def strided_sum(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
    """out[t] = the sum of x[c] for c = t, t + block.dim.x, … below n (one block)."""
    acc = f32(0.0)
    for c in range(thread.idx.x, n, block.dim.x):
        if c < len(x):
            acc += x[c]
    i = thread.index_1d()
    if i < len(out):
        out[i] = acc


@ox.kernel
def gather_stencil(x: Slice[f32], idx: Slice[i32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
    """out[r, c] = x[r, c] + the mean of its 4 neighbours (inside) + x[idx[r, c]] (when in range)."""
    assert len(x) == i64(rows) * cols and len(out) == len(x) and len(idx) == len(x)
    c = block.idx.x * block.dim.x + thread.idx.x
    r = block.idx.y * block.dim.y + thread.idx.y
    if r < rows and c < cols:
        i = i64(r) * cols + c
        v = x[i]
        if r > 0 and r < rows - 1 and c > 0 and c < cols - 1:
            v += 0.25 * (x[i - cols] + x[i + cols] + x[i - 1] + x[i + 1])
        j = idx[i]
        v += x[j] if j >= 0 and j < len(x) else f32(0.0)
        with ox.unsafe():
            out[i] = v
