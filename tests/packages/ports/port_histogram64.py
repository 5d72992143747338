"""64-bin histogram with per-thread 8-bit sub-histograms in shared memory.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/histogram/histogram64.cu
(`histogram64Kernel`, `addByte`, `addWord`), the way its author writes it: the thread's
position shuffled across shared-memory banks, a byte counter per thread and bin
(`s_Hist[bin * THREADBLOCK_SIZE + threadPos]++`), the data read as uint4 and its bytes' top
six bits taken with shifts and masks, the per-bin sum over the threads' bytes in a rotated
order, unsigned int throughout (UMUL/UMAD as plain multiplies, as the sample defines them).
The sample zeroes the byte array through a `(uint *)` cast; oxide has no reinterpreting view
of an array, so it is zeroed byte by byte. The per-bin sum adds four bytes at a time, which
C computes in int: written as in C (`s_HistBase[pos] + s_HistBase[pos + 1] + ...` into a
`uint`), oxide refuses it ("this u8 arithmetic can wrap around in u8 before the result
becomes u32"), so the first byte is converted, as the message says."""
import oxide as ox
from oxide import MutSlice, Slice, block, grid, thread, u8, u32

HISTOGRAM64_BIN_COUNT = 64
HISTOGRAM64_THREADBLOCK_SIZE = 4 * 32
SHARED_MEMORY_BANKS = 32


def add_byte(s_hist: MutSlice[u8], thread_pos: u32, data: u32) -> None:
    s_hist[data * HISTOGRAM64_THREADBLOCK_SIZE + thread_pos] += 1


def add_word(s_hist: MutSlice[u8], thread_pos: u32, data: u32) -> None:
    add_byte(s_hist, thread_pos, (data >> 2) & 0x3F)
    add_byte(s_hist, thread_pos, (data >> 10) & 0x3F)
    add_byte(s_hist, thread_pos, (data >> 18) & 0x3F)
    add_byte(s_hist, thread_pos, (data >> 26) & 0x3F)


@ox.kernel(launch_bounds=HISTOGRAM64_THREADBLOCK_SIZE)
def histogram64_kernel(d_partial_histograms: MutSlice[u32], d_data: Slice[u32], data_count: u32) -> None:
    tid = u32(thread.idx.x)
    thread_pos = (((tid & ~u32(SHARED_MEMORY_BANKS * 4 - 1)) << 0)
                  | ((tid & (SHARED_MEMORY_BANKS - 1)) << 2)
                  | ((tid & (SHARED_MEMORY_BANKS * 3)) >> 5))

    s_hist = ox.shared.array(HISTOGRAM64_THREADBLOCK_SIZE * HISTOGRAM64_BIN_COUNT, u8)
    for i in range(HISTOGRAM64_BIN_COUNT):
        s_hist[tid + i * HISTOGRAM64_THREADBLOCK_SIZE] = 0
    block.sync()

    pos = u32(block.idx.x) * u32(block.dim.x) + tid
    while pos < data_count:
        data = d_data.load4(pos)
        add_word(s_hist, thread_pos, data.x)
        add_word(s_hist, thread_pos, data.y)
        add_word(s_hist, thread_pos, data.z)
        add_word(s_hist, thread_pos, data.w)
        pos += u32(block.dim.x) * u32(grid.dim.x)
    block.sync()

    if tid < HISTOGRAM64_BIN_COUNT:
        s_hist_base = s_hist[tid * HISTOGRAM64_THREADBLOCK_SIZE:]
        sum = 0
        p = 4 * (tid & (SHARED_MEMORY_BANKS - 1))
        for i in range(HISTOGRAM64_THREADBLOCK_SIZE // 4):
            sum += u32(s_hist_base[p + 0]) + s_hist_base[p + 1] + s_hist_base[p + 2] + s_hist_base[p + 3]
            p = (p + 4) & (HISTOGRAM64_THREADBLOCK_SIZE - 1)
        with ox.unsafe():
            d_partial_histograms[u32(block.idx.x) * HISTOGRAM64_BIN_COUNT + tid] = sum
