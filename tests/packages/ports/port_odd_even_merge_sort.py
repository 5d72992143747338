"""Batcher's odd-even merge sort of key/value pairs in shared memory, a block per 1024 elements.

Ported from NVIDIA cuda-samples (BSD-3-Clause), Samples/2_Concepts_and_Techniques/sortingNetworks/
oddEvenMergeSort.cu (`oddEvenMergeSortShared`, `Comparator`), as first written in issue 29's
second probe."""
import oxide as ox
from oxide import Slice, MutSlice, u32, thread, block

SHARED_SIZE_LIMIT = 1024


def comparator(key_a: u32, val_a: u32, key_b: u32, val_b: u32, dir: u32) -> tuple[u32, u32, u32, u32]:
    if (key_a > key_b) == dir:
        key_a, key_b = key_b, key_a
        val_a, val_b = val_b, val_a
    return key_a, val_a, key_b, val_b


@ox.kernel
def odd_even_merge_sort_shared(d_dst_key: MutSlice[u32], d_dst_val: MutSlice[u32], d_src_key: Slice[u32],
                               d_src_val: Slice[u32], array_length: u32, dir: u32) -> None:
    s_key = ox.shared.array(SHARED_SIZE_LIMIT, u32)
    s_val = ox.shared.array(SHARED_SIZE_LIMIT, u32)
    base = block.idx.x * SHARED_SIZE_LIMIT + thread.idx.x
    s_key[thread.idx.x + 0] = d_src_key[base + 0]
    s_val[thread.idx.x + 0] = d_src_val[base + 0]
    s_key[thread.idx.x + (SHARED_SIZE_LIMIT // 2)] = d_src_key[base + (SHARED_SIZE_LIMIT // 2)]
    s_val[thread.idx.x + (SHARED_SIZE_LIMIT // 2)] = d_src_val[base + (SHARED_SIZE_LIMIT // 2)]
    size = u32(2)
    while size <= array_length:
        stride = size // 2
        offset = thread.idx.x & (stride - 1)
        block.sync()
        pos = 2 * thread.idx.x - (thread.idx.x & (stride - 1))
        s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride] = comparator(
            s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], dir)
        stride >>= 1
        while stride > 0:
            block.sync()
            pos = 2 * thread.idx.x - (thread.idx.x & (stride - 1))
            if offset >= stride:
                s_key[pos - stride], s_val[pos - stride], s_key[pos], s_val[pos] = comparator(
                    s_key[pos - stride], s_val[pos - stride], s_key[pos], s_val[pos], dir)
            stride >>= 1
        size <<= 1
    block.sync()
    with ox.unsafe():
        d_dst_key[base + 0] = s_key[thread.idx.x + 0]
        d_dst_val[base + 0] = s_val[thread.idx.x + 0]
        d_dst_key[base + (SHARED_SIZE_LIMIT // 2)] = s_key[thread.idx.x + (SHARED_SIZE_LIMIT // 2)]
        d_dst_val[base + (SHARED_SIZE_LIMIT // 2)] = s_val[thread.idx.x + (SHARED_SIZE_LIMIT // 2)]
