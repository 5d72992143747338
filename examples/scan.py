"""Inclusive prefix sum, two ways. Two passes: scan each block (warp shuffles + one shared slot per warp), scan the
block totals, add each block's offset (scan_blocks, add_block_offsets, inclusive_scan). One pass:
decoupled look-back (scan_lookback, LookbackState, inclusive_scan_lookback), below."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, f32x4, grid, i32, i64, thread, u32, warp

BLOCK = 1024


@ox.kernel
def scan_blocks(x: Slice[f32], out: MutSlice[f32], block_sums: MutSlice[f32]) -> None:
    assert len(block_sums) >= grid.dim.x
    warp_sums = ox.shared.array(32, f32)
    i = thread.index_1d()
    v = x[i] if i < len(x) else f32(0.0)
    lane = warp.lane()
    wid = warp.id()
    for k in ox.static_range(5):
        d = i32(1 << k)
        n = warp.shfl_up(v, d)
        if lane >= d:
            v += n
    if lane == 31:
        warp_sums[wid] = v
    block.sync()
    if wid == 0:
        s = warp_sums[lane] if lane < block.dim.x // 32 else f32(0.0)
        for k in ox.static_range(5):
            d = i32(1 << k)
            n = warp.shfl_up(s, d)
            if lane >= d:
                s += n
        warp_sums[lane] = s
    block.sync()
    if wid > 0:
        v += warp_sums[wid - 1]
    with ox.unsafe():
        if i < len(out):
            out[i] = v
        if thread.idx.x == block.dim.x - 1:
            block_sums[block.idx.x] = v


@ox.kernel
def add_block_offsets(scanned_sums: Slice[f32], out: DisjointSlice[f32]) -> None:
    assert len(scanned_sums) >= grid.dim.x - 1
    i = thread.index_1d()
    if i < len(out) and block.idx.x > 0:
        out[i] = out[i] + scanned_sums[block.idx.x - 1]


def inclusive_scan(x, out, empty_like):  # type: ignore[no-untyped-def]
    """Host driver: ``x`` and ``out`` are device arrays of f32; ``empty_like(n)`` makes a
    device f32 array of n elements. Recurses on the block totals."""
    n = len(x)
    blocks = (n + BLOCK - 1) // BLOCK
    sums = empty_like(blocks)
    scan_blocks[blocks, BLOCK](x, out, sums)
    if blocks > 1:
        scanned = empty_like(blocks)
        inclusive_scan(sums, scanned, empty_like)
        add_block_offsets[blocks, BLOCK](scanned, out)


# ---- single pass: decoupled look-back (Merrill & Garland 2016, CUB's DeviceScan) ------------
# Each block scans one tile of 4 * TILE_VECS floats: TILE_VECS / VECS threads x VECS f32x4 each,
# loaded striped (vector j of thread t is vector j * threads + t of the tile, so every load and
# store of a warp is 512 contiguous bytes). The tile's order is j-major, so its partial sums
# (j, warp) are in order at j * warps + warp: one warp scans them (TILE_VECS / 1024 a lane). That
# warp then publishes the tile's aggregate, looks back over its predecessors' words 32 at a time,
# and publishes the tile's inclusive prefix. Each status word packs (tag << 32) | bits(value) in
# one i64, tag = epoch * 4 + flag, so one single-copy atomic access reads a flag with its value:
# relaxed order is enough, as nothing else is published through the flag (CUB's packed status
# words, read the same way). The epoch is the call's number (LookbackState counts the calls): a
# word another call left has another epoch, and reads as not yet published, so the words need no
# zeroing between calls (CUB zeroes them with an init kernel each call). Word 0 is the tile
# counter: it is zero at every launch, as the block that takes the last ticket resets it.
LB_TILE = 8192  # the default: tiles of 8192 floats (32 KiB); 4096 is built too
LB_VECS = 16  # the default: f32x4 a thread (128 threads x 64 floats); 4 and 8 are built too
# (ptxas, sm_90: 46, 81 and 135 registers; at 135, 3 blocks an SM keep 96 KiB of loads in flight,
# against 64 KiB for 256 x 32 or 512 x 16)
EPOCH_LIMIT = 1 << 29  # epochs are 1 .. EPOCH_LIMIT - 1 (the tag stays below 2^31: the word is positive)
FLAG_AGGREGATE = 1  # the word holds the tile's own sum
FLAG_PREFIX = 2  # the word holds the sum of every element up to the tile's end


def lookback_threads(tile: int, vecs: int) -> int:
    """Threads a block of the build with ``tile`` floats a tile and ``vecs`` f32x4 a thread."""
    return tile // (4 * vecs)


def pack_status(tag: i64, value: f32) -> i64:
    return (tag << 32) | i64(ox.bits.bitcast(value, u32))


def status_value(word: i64) -> f32:
    return ox.bits.bitcast(u32(word & 0xFFFFFFFF), f32)


def status_flag(word: i64, epoch_tag: i64) -> i64:
    """The word's flag if this call (``epoch_tag`` = epoch * 4) wrote it, else 0 (not yet)."""
    f = (word >> 32) - epoch_tag
    return f if f == FLAG_AGGREGATE or f == FLAG_PREFIX else i64(0)


@ox.kernel(constexprs={"TILE_VECS": [1024, 2048], "VECS": [4, 8, 16]})
def scan_lookback(x: Slice[f32], out: MutSlice[f32], status: MutSlice[i64], epoch: i32,
                  TILE_VECS: ox.Constexpr[int], VECS: ox.Constexpr[int]) -> None:
    """``out[:len(x)]`` = the inclusive prefix sums of ``x``, in one pass. ``status[0]`` is the
    tile counter, zero at the launch; ``status[1 + k]`` is tile k's word, holding anything but a
    word of this ``epoch`` (1 <= epoch < EPOCH_LIMIT, a different one each call: LookbackState);
    launch one block of ``TILE_VECS // VECS`` threads per tile of ``4 * TILE_VECS`` floats.
    Tiles are numbered by the counter in the order blocks start, so a block only waits on tiles
    of blocks that started before it (block indices carry no such promise: a block of a higher
    index may start first, and wait on one that cannot start until it ends). ``x`` and ``out``
    start 16-byte aligned (vector loads and stores)."""
    THREADS = TILE_VECS // VECS
    WARPS = THREADS // 32
    PER_LANE = TILE_VECS // 1024  # WARPS * VECS == 32 * PER_LANE partial sums, scanned by one warp
    TILE_N = 4 * TILE_VECS
    n = len(x)
    tiles = (n + TILE_N - 1) // TILE_N
    assert len(status) > tiles and grid.dim.x == tiles and block.dim.x == THREADS
    assert 0 < epoch and epoch < EPOCH_LIMIT, "the epoch is 1 .. EPOCH_LIMIT - 1"
    assert len(out) >= n
    tile_id = ox.shared.array(1, i64)
    # the tile's partial sums at j * WARPS + warp; sized so that the prover sees any warp's
    # index (warp.id() < 32) in bounds
    partials = ox.shared.array(32 * PER_LANE + 32, f32)
    t = thread.idx.x
    lane = warp.lane()
    wid = warp.id()
    if t == 0:
        ticket = ox.atomic.add(status, 0, i64(1))
        if ticket == tiles - 1:  # the last ticket: every other block has its own, the counter is free
            ox.atomic.store(status, 0, i64(0), order="relaxed")
        tile_id[0] = ticket
    block.sync()
    tile = tile_id[0]
    assert 0 <= tile and tile < tiles, "the tile counter (status[0]) was not zero at the launch"
    vals = ox.local.array(VECS, f32x4)
    excl = ox.local.array(VECS, f32)
    first = tile * TILE_VECS + t  # this thread's first vector: it has first + j * THREADS
    for j in ox.static_range(VECS):
        if 4 * (first + j * THREADS) + 3 < n:
            v = x.load4(first + j * THREADS)
        else:
            v = f32x4(0.0)
            for q in ox.static_range(4):
                if 4 * (first + j * THREADS) + q < n:
                    v[q] = x[4 * (first + j * THREADS) + q]
        vals[j] = v
    sums = ox.local.array(VECS, f32)
    for j in ox.static_range(VECS):  # every load above is issued before the first is used
        v = vals[j]
        v.y += v.x
        v.z += v.y
        v.w += v.z
        vals[j] = v
        sums[j] = v.w
    for d in ox.static_range(5):  # the VECS warp scans side by side
        step = i32(1 << d)
        for j in ox.static_range(VECS):
            nb = warp.shfl_up(sums[j], step)
            if lane >= step:
                sums[j] += nb
    for j in ox.static_range(VECS):
        e = warp.shfl_up(sums[j], 1)
        excl[j] = e if lane > 0 else f32(0.0)
        if lane == 31:
            partials[j * WARPS + wid] = sums[j]
    block.sync()
    if wid == 0:
        p = f32(0.0)  # lane l scans the partial sums l * PER_LANE .. l * PER_LANE + PER_LANE - 1
        for i in ox.static_range(PER_LANE):
            p += partials[lane * PER_LANE + i]
        for d in ox.static_range(5):
            step = i32(1 << d)
            nb = warp.shfl_up(p, step)
            if lane >= step:
                p += nb
        aggregate = warp.shfl_idx(p, 31)
        before = warp.shfl_up(p, 1)
        within = before if lane > 0 else f32(0.0)
        prefix = f32(0.0)
        epoch_tag = i64(epoch) << 2
        if tile == 0:
            if lane == 0:
                ox.atomic.store(status, 1, pack_status(epoch_tag + FLAG_PREFIX, aggregate), order="relaxed")
        else:
            if lane == 0:
                ox.atomic.store(status, 1 + tile, pack_status(epoch_tag + FLAG_AGGREGATE, aggregate), order="relaxed")
            for back in range(1, tile + 1, 32):  # lane l reads tile - back - l: 32 predecessors at a time
                word = pack_status(epoch_tag + FLAG_PREFIX, f32(0.0))  # before tile 0: nothing to add
                if tile - back - lane >= 0:
                    word = ox.atomic.load(status, 1 + tile - back - lane, order="relaxed")
                while warp.any(status_flag(word, epoch_tag) == 0):  # a predecessor has not published yet
                    if tile - back - lane >= 0 and status_flag(word, epoch_tag) == 0:
                        word = ox.atomic.load(status, 1 + tile - back - lane, order="relaxed")
                found = warp.ballot(status_flag(word, epoch_tag) == FLAG_PREFIX)
                value = status_value(word)
                if found != 0:  # the newest tile with its prefix ends the look-back
                    if lane > ox.bits.ffs(found) - 1:
                        value = f32(0.0)
                prefix += warp.reduce_sum(value)
                if found != 0:
                    break
            if lane == 0:
                ox.atomic.store(status, 1 + tile, pack_status(epoch_tag + FLAG_PREFIX, prefix + aggregate),
                                order="relaxed")
        acc = prefix + within  # each partial sum becomes the sum of everything before it
        for i in ox.static_range(PER_LANE):
            own = partials[lane * PER_LANE + i]
            partials[lane * PER_LANE + i] = acc
            acc += own
    block.sync()
    for j in ox.static_range(VECS):
        v = vals[j] + (partials[j * WARPS + wid] + excl[j])
        with ox.unsafe():
            if 4 * (first + j * THREADS) + 3 < n:
                out.store4(first + j * THREADS, v)
            else:
                for q in ox.static_range(4):
                    if 4 * (first + j * THREADS) + q < n:
                        out[4 * (first + j * THREADS) + q] = v[q]


def lookback_tiles(n: int, tile: int = LB_TILE) -> int:
    return (n + tile - 1) // tile


def _address(a):  # type: ignore[no-untyped-def]
    """The first element's address of a torch tensor, a CUDA-array-interface or NumPy array."""
    if hasattr(a, "data_ptr"):
        return a.data_ptr()
    for name in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(a, name, None)
        if iface is not None:
            return iface["data"][0]
    return None


class LookbackState:
    """What ``inclusive_scan_lookback`` keeps between calls: the status words (the tile counter,
    then a word per tile) and the epoch of the last call. ``zeros_i64(m)`` makes a zeroed device
    int64 array of m elements; it is called once, and again only when a call needs more tiles, or
    after EPOCH_LIMIT - 1 calls (the epochs start again from 1 on fresh words). Use one state per
    stream: calls that share one must run one after another."""

    def __init__(self, zeros_i64) -> None:  # type: ignore[no-untyped-def]
        self.zeros_i64 = zeros_i64
        self.status = None
        self.epoch = 0
        self.allocations = 0

    def next_call(self, tiles: int):  # type: ignore[no-untyped-def]
        """The status words for a call of ``tiles`` tiles and the call's epoch."""
        if self.epoch + 1 >= EPOCH_LIMIT:  # the epochs start again, on words no epoch wrote
            self.status, self.epoch = None, 0
        if self.status is None or len(self.status) < tiles + 1:
            self.status = self.zeros_i64(tiles + 1)
            self.allocations += 1
        self.epoch += 1
        return self.status, self.epoch

    def forget(self) -> None:
        """Drops the words (a failed call may have left the counter set): the next call starts on fresh ones."""
        self.status = None


def inclusive_scan_lookback(x, out, state, tile=LB_TILE, vecs=LB_VECS):  # type: ignore[no-untyped-def]
    """Host driver of the single-pass scan: ``x`` and ``out`` device arrays of f32 (16-byte
    aligned); ``state`` a LookbackState (the status words and the epoch, kept between calls: no
    init launch); ``tile`` floats a tile (4096 or 8192) and ``vecs`` f32x4 a thread (4, 8, 16):
    blocks of ``tile // (4 * vecs)`` threads."""
    if tile not in (4096, 8192) or vecs not in (4, 8, 16):
        raise ValueError(f"inclusive_scan_lookback: tile={tile}, vecs={vecs}: the builds are tile 4096 or 8192 "
                         "floats and vecs 4, 8 or 16 f32x4 a thread")
    tiles = lookback_tiles(len(x), tile)
    if tiles == 0:
        return
    for name, a in (("x", x), ("out", out)):
        address = _address(a)
        if address is not None and address % 16:
            raise ValueError(f"inclusive_scan_lookback: {name} starts at {address:#x}, not 16-byte aligned "
                             "(the scan reads and writes f32x4 vectors); pass an array that starts a whole number "
                             "of 4 floats after an allocation's start, or use inclusive_scan")
    status, epoch = state.next_call(tiles)
    try:
        scan_lookback[tiles, lookback_threads(tile, vecs)](x, out, status, epoch, tile // 4, vecs)
    except ox.KernelError:
        state.forget()
        raise
