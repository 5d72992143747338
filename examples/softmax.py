"""Row softmax: one block per row; block-wide max and sum through warp shuffles and shared
memory; exp via libdevice."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i32, i64, thread, warp

NEG_INF = -3.4028234663852886e38


@ox.kernel
def softmax_rows(x: Slice[f32], ncols: i32, out: MutSlice[f32]) -> None:
    # one block per row; this proves every x[base + c] and out[base + c] below in bounds
    assert len(x) == i64(grid.dim.x) * ncols and len(out) == len(x)
    red = ox.shared.array(32, f32)
    base = i64(block.idx.x) * ncols
    lane = warp.lane()
    wid = warp.id()
    nwarps = block.dim.x // 32
    m = f32(NEG_INF)
    for c in range(thread.idx.x, ncols, block.dim.x):
        m = max(m, x[base + c])
    m = warp.reduce_max(m)
    if lane == 0:
        red[wid] = m
    block.sync()
    m = red[lane] if lane < nwarps else f32(NEG_INF)
    m = warp.reduce_max(m)
    block.sync()
    s = f32(0.0)
    for c in range(thread.idx.x, ncols, block.dim.x):
        s += ox.math.exp(x[base + c] - m)
    s = warp.reduce_sum(s)
    if lane == 0:
        red[wid] = s
    block.sync()
    s = red[lane] if lane < nwarps else f32(0.0)
    s = warp.reduce_sum(s)
    inv = f32(1.0) / s
    for c in range(thread.idx.x, ncols, block.dim.x):
        with ox.unsafe():
            out[base + c] = ox.math.exp(x[base + c] - m) * inv
