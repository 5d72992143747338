"""Kernels exercising atomic scopes on the GPU (tests/test_atomics_gpu.py)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, f64, i32, i64, thread, u32, u64

BINS = 64
SYSTEM = "system"


@ox.kernel
def block_histograms(keys: Slice[i32], hists: MutSlice[u32]) -> None:
    """hists[b * BINS + k]: how many keys of block b equal k (keys in [0, BINS)). A histogram in
    shared memory with scope="block", added into the block's own row of ``hists`` with
    scope="block" too: no other block touches that row."""
    counts = ox.shared.array(BINS, u32)
    for k in range(thread.idx.x, BINS, block.dim.x):
        counts[k] = 0
    block.sync()
    i = thread.index_1d()
    if i < len(keys):
        ox.atomic.add(counts, keys[i], u32(1), scope="block")
    block.sync()
    for k in range(thread.idx.x, BINS, block.dim.x):
        ox.atomic.add(hists, block.idx.x * BINS + k, counts[k], scope="block")


@ox.kernel
def block_extremes(x: Slice[f32], keys: Slice[i32], maxes: MutSlice[f32], mins: MutSlice[i64],
                   xors: MutSlice[u64], sums: MutSlice[f64]) -> None:
    """Per block, in shared memory with block scope: the max of x (an f32 compare-and-swap
    loop), the min and the xor of the keys (i64, u64), the sum of x (f64, as subtractions of
    the negation); thread 0 exchanges each into the block's slot."""
    top = ox.shared.array(1, f32)
    low = ox.shared.array(1, i64)
    bits = ox.shared.array(1, u64)
    total = ox.shared.array(1, f64)
    if thread.idx.x == 0:
        top[0] = -3.0e38
        low[0] = 1 << 40
        bits[0] = 0
        total[0] = 0.0
    block.sync()
    i = thread.index_1d()
    if i < len(x) and i < len(keys):
        ox.atomic.max(top, 0, x[i], scope="block")
        ox.atomic.min(low, 0, i64(keys[i]), scope="cta")
        ox.atomic.xor(bits, 0, u64(keys[i]), scope="block")
        ox.atomic.sub(total, 0, -f64(x[i]), scope="block")
    block.sync()
    if thread.idx.x == 0:
        b = block.idx.x
        ox.atomic.exch(maxes, b, top[0], scope="block")
        ox.atomic.exch(mins, b, low[0], scope="block")
        ox.atomic.exch(xors, b, bits[0], scope="block")
        ox.atomic.exch(sums, b, total[0], scope="block")


@ox.kernel
def system_totals(x: Slice[i64], f: Slice[f64], totals: MutSlice[i64], ftotals: MutSlice[f64],
                  counters: MutSlice[u32]) -> None:
    """Grid-wide results with system scope: i64 add, sub and max, f64 add and max, a u32 inc
    counter, and a compare-and-swap that exactly one thread wins."""
    i = thread.index_1d()
    if i < len(x) and i < len(f):
        ox.atomic.add(totals, 0, x[i], scope="system")
        ox.atomic.sub(totals, 1, x[i], scope=SYSTEM)
        ox.atomic.max(totals, 2, x[i], scope="sys")
        ox.atomic.add(ftotals, 0, f[i], scope="system")
        ox.atomic.max(ftotals, 1, f[i], scope="system")
        ox.atomic.inc(counters, 0, u32(4294967295), scope="system")
        if ox.atomic.cas(counters, 1, u32(0), u32(1), scope="system") == 0:
            ox.atomic.add(counters, 2, u32(1), scope="system")


@ox.kernel
def relay(values: MutSlice[f64], flags: MutSlice[u32], counter: MutSlice[u32]) -> None:
    """Blocks hand a running sum on, in the order they take tickets (``counter[0]``, zeroed):
    ticket k waits for ``flags[k - 1]`` (an acquire load), reads ``values[k - 1]`` plainly and
    stores ``values[k]`` plainly before setting ``flags[k]`` (a release store), so the plain
    read sees the plain write. ``values[k]`` ends as 0 + 1 + ... + k."""
    if thread.idx.x == 0:
        k = i64(ox.atomic.add(counter, 0, u32(1)))
        prev = f64(0.0)
        if k > 0:
            while ox.atomic.load(flags, k - 1, order="acquire") == u32(0):
                pass
            prev = values[k - 1]
        with ox.unsafe():
            values[k] = prev + f64(k)
        ox.atomic.store(flags, k, u32(1), order="release")


@ox.kernel
def ordered_copy(src: MutSlice[f32], dst: MutSlice[f32], words: MutSlice[i64]) -> None:
    """Relaxed and release stores at every scope of what a relaxed load read: dst[i] = src[i],
    words[i] = (i << 32) | bits(src[i]) (a flag-and-value pair in one word)."""
    i = thread.index_1d()
    if i < len(src) and i < len(dst) and i < len(words):
        v = ox.atomic.load(src, i, order="relaxed")
        ox.atomic.store(dst, i, v, order="release", scope=SYSTEM)
        ox.atomic.store(words, i, (i << 32) | i64(ox.bits.bitcast(v, u32)), order="relaxed", scope="block")
