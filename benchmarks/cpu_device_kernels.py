"""The oxide kernels of ``benchmarks/cpu_device.py`` (the CPU device against numba-cuda's
simulator) that the examples do not already hold: a shared-memory tree reduction with a barrier
per step, and a warp-shuffle inclusive scan (Kogge-Stone within each warp). saxpy and sgemm are
examples/saxpy.py and examples/sgemm.py."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, thread, warp

BLOCK = 256


@ox.kernel
def block_reduce(x: Slice[f32], out: MutSlice[f32]) -> None:
    """out[b] = the sum of block b's elements: a tree in shared memory, block.sync() each step."""
    tile = ox.shared.array(BLOCK, f32)
    t = thread.idx.x
    i = thread.index_1d()
    tile[t] = x[i] if i < len(x) else f32(0.0)
    block.sync()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            tile[t] = tile[t] + tile[t + s]
        block.sync()
        s = s // 2
    if t == 0:
        with ox.unsafe():
            out[block.idx.x] = tile[0]


@ox.kernel
def warp_scan(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """out[i] = the inclusive prefix sum of x over i's warp (warp.shfl_up, five steps)."""
    i = thread.index_1d()
    v = x[i] if i < len(x) else f32(0.0)
    lane = warp.lane()
    d = 1
    while d < 32:
        n = warp.shfl_up(v, d)
        if lane >= d:
            v += n
        d *= 2
    if i < len(out):
        out[i] = v
