"""256-bin histogram of bytes: a private histogram per block in shared memory (shared
atomics), merged into the global one with one atomic per bin and block."""
import oxide as ox
from oxide import MutSlice, Slice, block, grid, i32, thread, u8, u32

BINS = 256


@ox.kernel
def histogram(data: Slice[u8], hist: MutSlice[u32]) -> None:
    local_hist = ox.shared.array(BINS, u32)
    for b in range(thread.idx.x, BINS, block.dim.x):
        local_hist[b] = 0
    block.sync()
    i = thread.index_1d()
    stride = grid.dim.x * block.dim.x
    for j in range(i, len(data), stride):
        ox.atomic.add(local_hist, i32(data[j]), 1)
    block.sync()
    for b in range(thread.idx.x, BINS, block.dim.x):
        ox.atomic.add(hist, b, local_hist[b])
