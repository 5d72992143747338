"""C = A @ B for row-major f32 matrices, with 32×32 tiles of A and B staged in shared memory
(blocks of 32×32 threads, one output element per thread)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, i64, thread

TILE = 32


@ox.kernel
def sgemm(a: Slice[f32], b: Slice[f32], m: i32, n: i32, k: i32, c: MutSlice[f32]) -> None:
    # preconditions, checked once per thread; they prove every index below in bounds
    assert block.dim.x == TILE and block.dim.y == TILE
    assert len(a) == i64(m) * k and len(b) == i64(k) * n and len(c) == i64(m) * n
    a_tile = ox.shared.array((TILE, TILE), f32)
    b_tile = ox.shared.array((TILE, TILE), f32)
    tx = thread.idx.x
    ty = thread.idx.y
    row = block.idx.y * TILE + ty
    col = block.idx.x * TILE + tx
    acc = f32(0.0)
    for t in range(0, k, TILE):
        a_tile[ty, tx] = a[i64(row) * k + t + tx] if row < m and t + tx < k else f32(0.0)
        b_tile[ty, tx] = b[i64(t + ty) * n + col] if t + ty < k and col < n else f32(0.0)
        block.sync()
        for kk in ox.static_range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        block.sync()
    if row < m and col < n:
        with ox.unsafe():
            c[i64(row) * n + col] = acc
