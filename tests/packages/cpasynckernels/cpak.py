"""cp.async kernels for tests/test_cp_async_gpu.py: copies of 4, 8 and 16 bytes, a zero-filled
tail (``src_bytes``), and a two-stage pipeline whose copies of the next tile are in flight
while this one is summed."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

TILE = 128  # floats a pipeline stage: 32 threads x 4


@ox.kernel(bounds_check=False)
def copy_sizes(src: Slice[i32], n_bytes: i32, out: MutSlice[i32]) -> None:
    """Thread t copies words 4t … 4t+3 of src to shared memory by one 16-byte copy (t % 3 == 0),
    two of 8 bytes (t % 3 == 1) or four of 4 (t % 3 == 2), the last ``n_bytes`` of them zero-filled
    past src_bytes when t is the last thread, then writes them out."""
    sh = ox.shared.array(4 * 64, i32)
    t = thread.idx.x
    last = t == block.dim.x - 1
    if last:
        ox.cp_async.copy(sh, 4 * t, src, 4 * t, 16, src_bytes=n_bytes)
    elif t % 3 == 0:
        ox.cp_async.copy(sh, 4 * t, src, 4 * t, 16, cache="cg")
    elif t % 3 == 1:
        ox.cp_async.copy(sh, 4 * t, src, 4 * t, 8)
        ox.cp_async.copy(sh, 4 * t + 2, src, 4 * t + 2, 8)
    else:
        for q in ox.static_range(4):
            ox.cp_async.copy(sh, 4 * t + q, src, 4 * t + q, 4)
    ox.cp_async.commit_group()
    ox.cp_async.wait_group(0)
    block.sync()
    with ox.unsafe():
        for q in ox.static_range(4):
            out[4 * t + q] = sh[4 * (block.dim.x - 1 - t) + q]  # another thread's copies: after the barrier


@ox.kernel(bounds_check=False)
def pipelined_sums(x: Slice[f32], tiles: i32, out: MutSlice[f32]) -> None:
    """out[t] = the sum over the tiles of x[tile * TILE + 4t … +3], one warp, the copies of tile
    k + 1 issued before tile k is read (two stages, wait_group(1))."""
    ring = ox.shared.array(2 * TILE, f32)
    t = thread.idx.x
    ox.cp_async.copy(ring, 4 * t, x, 4 * t, 16)
    ox.cp_async.commit_group()
    acc: f32 = 0.0
    for k in range(tiles):
        if k + 1 < tiles:
            ox.cp_async.copy(ring, ((k + 1) % 2) * TILE + 4 * t, x, (k + 1) * TILE + 4 * t, 16)
        ox.cp_async.commit_group()
        ox.cp_async.wait_group(1)  # this thread's copies of tile k landed
        for q in ox.static_range(4):
            acc += ring[(k % 2) * TILE + 4 * t + q]
    ox.cp_async.wait_group(0)
    with ox.unsafe():
        out[t] = acc
