"""A kernel whose checks hold under launch-invariant facts: launch-versioned (tests/test_bounds_gpu.py)."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def guarded_axpy(a: f32, x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
    """``i < n`` with ``n`` an argument nothing ties to the lengths: launch-versioned on
    len(x), len(y), len(out) >= n (the copy without checks), else the checks report."""
    i = thread.index_1d()
    if i < n:
        out[i] = a * x[i] + y[i]


TILE = 16


@ox.kernel
def tile_transpose(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
    """An n x n transpose through a 16 x 16 shared tile indexed by ``thread.idx``: its checks hold
    when block.dim <= 16 along x and y, so the kernel is launch-versioned on that (one tile, which
    both copies address); a larger block takes the checked copy, whose ``tile[...]`` check reports."""
    tile = ox.shared.array((TILE, TILE), f32)
    tx = thread.idx.x
    ty = thread.idx.y
    in_row = block.idx.y * TILE + ty
    in_col = block.idx.x * TILE + tx
    if in_row < n and in_col < n:
        tile[ty, tx] = x[in_row * n + in_col]
    block.sync()
    out_row = block.idx.x * TILE + ty
    out_col = block.idx.y * TILE + tx
    if out_row < n and out_col < n:
        with ox.unsafe():
            out[out_row * n + out_col] = tile[tx, ty]


@ox.kernel
def column_taps(src: Slice[f32], out: MutSlice[f32], pitch: i32, rows: i32) -> None:
    """Four rows of a column read in one straight-line run (the third only where ``rows > 2``):
    run-versioned, one test of the five accesses before them, the copy without their checks when
    it holds; else the run as written, whose first failing access reports."""
    col = block.idx.x * block.dim.x + thread.idx.x
    a = src[col]
    b = src[col + pitch]
    c = src[col + 2 * pitch] if rows > 2 else 0.0
    d = src[col + 3 * pitch]
    with ox.unsafe():
        out[col] = a + b + c + d


FDTD_N = 64


@ox.kernel
def fdtd_source_row(src: Slice[f32], e: MutSlice[f32], h: Slice[f32], t: i32) -> None:
    """PolyBench FDTD's first step: row 0 takes src[t] (t an argument: the fast instance's test
    `0 <= t < len(src)` is the launcher's), the other rows a difference with the row above."""
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < FDTD_N and j < FDTD_N:
        with ox.unsafe():
            if i == 0:
                e[i * FDTD_N + j] = src[t]
            else:
                e[i * FDTD_N + j] = e[i * FDTD_N + j] - 0.5 * (h[i * FDTD_N + j] - h[(i - 1) * FDTD_N + j])
