"""Digit histogram of one radix-sort pass, for 32- and 64-bit keys.

Ported from the upsweep of CUB's DeviceRadixSort (cub/agent/agent_radix_sort_histogram.cuh,
the shape every hand-written radix sort starts with), the way a CUDA author writes it: a
`template <typename KeyT>` kernel, RADIX_BITS and RADIX_DIGITS as constants, a shared count per
digit zeroed by a block-stride loop, a grid-stride loop over the keys extracting
`(key >> shift) & (RADIX_DIGITS - 1)` with block-scope shared atomics, the block's counts
added to the global histogram."""
import oxide as ox
from oxide import MutSlice, Slice, block, grid, thread, u32, u64

KeyT = ox.TypeVar("KeyT", u32, u64)
RADIX_BITS = 8
RADIX_DIGITS = 1 << RADIX_BITS


@ox.kernel
def radix_histogram(keys: Slice[KeyT], counts: MutSlice[u32], shift: u32) -> None:
    s_counts = ox.shared.array(RADIX_DIGITS, u32)
    for d in range(thread.idx.x, RADIX_DIGITS, block.dim.x):
        s_counts[d] = 0
    block.sync()
    for i in range(thread.index_1d(), len(keys), grid.dim.x * block.dim.x):
        digit = (keys[i] >> shift) & (RADIX_DIGITS - 1)
        ox.atomic.add(s_counts, digit, u32(1), scope="block")
    block.sync()
    for d in range(thread.idx.x, RADIX_DIGITS, block.dim.x):
        ox.atomic.add(counts, d, s_counts[d])
