"""256-bin byte histogram with per-block shared sub-histograms.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/histogram/
histogram256.cu (simplified: one shared histogram per block instead of per warp), the way
its author writes it: the data read as u32 words, four bytes taken out with shifts and masks,
shared atomics, a u32 count against the grid-stride loop."""
import oxide as ox
from oxide import MutSlice, Slice, block, grid, thread, u32

HISTOGRAM256_BIN_COUNT = 256


def add_byte(s_hist: ox.MutSlice[u32], data: u32) -> None:
    ox.atomic.add(s_hist, data, u32(1), scope="block")


def add_word(s_hist: ox.MutSlice[u32], data: u32) -> None:
    add_byte(s_hist, (data >> 0) & 0xFF)
    add_byte(s_hist, (data >> 8) & 0xFF)
    add_byte(s_hist, (data >> 16) & 0xFF)
    add_byte(s_hist, (data >> 24) & 0xFF)


@ox.kernel
def histogram256(d_partial: MutSlice[u32], d_data: Slice[u32], data_count: u32) -> None:
    s_hist = ox.shared.array(HISTOGRAM256_BIN_COUNT, u32)
    for i in range(thread.idx.x, HISTOGRAM256_BIN_COUNT, block.dim.x):
        s_hist[i] = 0
    block.sync()
    pos = block.idx.x * block.dim.x + thread.idx.x
    while pos < data_count:
        add_word(s_hist, d_data[pos])
        pos += block.dim.x * grid.dim.x
    block.sync()
    for bin in range(thread.idx.x, HISTOGRAM256_BIN_COUNT, block.dim.x):
        with ox.unsafe():
            d_partial[block.idx.x * HISTOGRAM256_BIN_COUNT + bin] = s_hist[bin]
