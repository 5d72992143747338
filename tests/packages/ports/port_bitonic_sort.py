"""Bitonic sort of one block's keys in shared memory.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/sortingNetworks/
bitonicSort.cu (`bitonicSortShared`), the way its author writes it: u32 sizes, the direction
flipped with `dir ^ (...)`, the comparator as a device function."""
import oxide as ox
from oxide import MutSlice, Slice, block, u32, thread

SHARED_SIZE_LIMIT = 1024


def comparator(keys: ox.MutSlice[u32], a: u32, b: u32, dir: u32) -> None:
    if (keys[a] > keys[b]) == (dir != 0):
        keys[a], keys[b] = keys[b], keys[a]


@ox.kernel
def bitonic_sort_shared(dst: MutSlice[u32], src: Slice[u32], array_length: u32, dir: u32) -> None:
    s_key = ox.shared.array(SHARED_SIZE_LIMIT, u32)
    base = block.idx.x * SHARED_SIZE_LIMIT
    s_key[thread.idx.x] = src[base + thread.idx.x]
    s_key[thread.idx.x + SHARED_SIZE_LIMIT // 2] = src[base + thread.idx.x + SHARED_SIZE_LIMIT // 2]

    size = u32(2)
    while size < array_length:
        ddd = dir ^ ((thread.idx.x & (size // 2)) != 0)
        stride = size // 2
        while stride > 0:
            block.sync()
            pos = 2 * thread.idx.x - (thread.idx.x & (stride - 1))
            comparator(s_key, pos, pos + stride, ddd)
            stride >>= 1
        size <<= 1

    stride = array_length // 2
    while stride > 0:
        block.sync()
        pos = 2 * thread.idx.x - (thread.idx.x & (stride - 1))
        comparator(s_key, pos, pos + stride, dir)
        stride >>= 1

    block.sync()
    with ox.unsafe():
        dst[base + thread.idx.x] = s_key[thread.idx.x]
        dst[base + thread.idx.x + SHARED_SIZE_LIMIT // 2] = s_key[thread.idx.x + SHARED_SIZE_LIMIT // 2]
