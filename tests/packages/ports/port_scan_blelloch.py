"""Work-efficient exclusive scan of one block (Blelloch), with bank-conflict padding.

Ported from GPU Gems 3, chapter 39 "Parallel Prefix Sum (Scan) with CUDA" (`prescan`,
Example 39-2 with CONFLICT_FREE_OFFSET), the way its author writes it: `n` a compile-time
size, `offset` doubling in a loop, the padding macro a device function."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

N = 1024
LOG_NUM_BANKS = 5


def conflict_free_offset(n: i32) -> i32:
    return n >> LOG_NUM_BANKS


@ox.kernel
def prescan(g_odata: MutSlice[f32], g_idata: Slice[f32]) -> None:
    temp = ox.shared.array(N + N // 32, f32)
    thid = thread.idx.x
    base = block.idx.x * N
    ai = thid
    bi = thid + N // 2
    bank_offset_a = conflict_free_offset(ai)
    bank_offset_b = conflict_free_offset(bi)
    temp[ai + bank_offset_a] = g_idata[base + ai]
    temp[bi + bank_offset_b] = g_idata[base + bi]
    offset = 1
    d = N >> 1
    while d > 0:
        block.sync()
        if thid < d:
            ai = offset * (2 * thid + 1) - 1
            bi = offset * (2 * thid + 2) - 1
            ai += conflict_free_offset(ai)
            bi += conflict_free_offset(bi)
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    if thid == 0:
        temp[N - 1 + conflict_free_offset(N - 1)] = 0
    d = 1
    while d < N:
        offset >>= 1
        block.sync()
        if thid < d:
            ai = offset * (2 * thid + 1) - 1
            bi = offset * (2 * thid + 2) - 1
            ai += conflict_free_offset(ai)
            bi += conflict_free_offset(bi)
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    block.sync()
    ai = thid
    bi = thid + N // 2
    with ox.unsafe():
        g_odata[base + ai] = temp[ai + bank_offset_a]
        g_odata[base + bi] = temp[bi + bank_offset_b]
