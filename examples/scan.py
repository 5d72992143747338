"""Inclusive prefix sum, two ways. Two passes: scan each block (warp shuffles + one shared slot per warp), scan the
block totals, add each block's offset (scan_blocks, add_block_offsets, inclusive_scan). One pass:
decoupled look-back (lookback_init, scan_lookback, inclusive_scan_lookback), below."""
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
# Each block scans one tile of TILE floats: 1024 / VECS threads x VECS f32x4 each, loaded
# striped (vector j of thread t is vector j * threads + t of the tile, so every load and store
# of a warp is 512 contiguous bytes). The tile's order is j-major, so the 32 partial sums
# (j, warp) are in order at j * warps + warp: one warp scans them. That warp then publishes the
# tile's aggregate, looks back over its predecessors' words 32 at a time, and publishes the
# tile's inclusive prefix. Each status word packs (flag << 32) | bits(value) in one i64, so one
# single-copy atomic access reads a flag with its value: relaxed order is enough, as nothing else
# is published through the flag (CUB's packed status words, read the same way).
TILE_VECTORS = 1024  # f32x4 a tile: threads x VECS
TILE = 4 * TILE_VECTORS  # 4096 floats, 16 KiB
LB_VECS = 4  # the default: 256 threads of 16 floats; 2 (512 x 8) and 8 (128 x 32) are built too
FLAG_AGGREGATE = 1  # the word holds the tile's own sum
FLAG_PREFIX = 2  # the word holds the sum of every element up to the tile's end


def lookback_threads(vecs: int) -> int:
    return TILE_VECTORS // vecs


def pack_status(flag: i64, value: f32) -> i64:
    return (flag << 32) | i64(ox.bits.bitcast(value, u32))


def status_value(word: i64) -> f32:
    return ox.bits.bitcast(u32(word & 0xFFFFFFFF), f32)


@ox.kernel
def lookback_init(status: MutSlice[i64]) -> None:
    """Zeroes the tile words and the tile counter (the last word) before each scan."""
    i = thread.index_1d()
    if i < len(status):
        with ox.unsafe():
            status[i] = i64(0)


@ox.kernel(constexprs={"VECS": [2, 4, 8]})
def scan_lookback(x: Slice[f32], out: MutSlice[f32], status: MutSlice[i64], VECS: ox.Constexpr[int]) -> None:
    """``out[:len(x)]`` = the inclusive prefix sums of ``x``, in one pass. ``status`` holds a
    word per tile then the tile counter, all zero (``lookback_init``); launch one block of
    ``lookback_threads(VECS)`` per tile. Tiles are numbered by an atomic counter in the order
    blocks start, so a block only waits on tiles of blocks that started before it (block indices
    carry no such promise: a block of a higher index may start first, and wait on one that
    cannot start until it ends). ``x`` and ``out`` start 16-byte aligned (vector loads and stores)."""
    THREADS = TILE_VECTORS // VECS
    WARPS = THREADS // 32  # WARPS * VECS == 32: one warp scans the tile's partial sums
    n = len(x)
    tiles = (n + TILE - 1) // TILE
    assert len(status) == tiles + 1 and grid.dim.x == tiles and block.dim.x == THREADS
    assert len(out) >= n
    tile_id = ox.shared.array(1, i32)
    # the 32 partial sums of the tile at j * WARPS + warp; sized so that the prover sees any
    # warp's index (warp.id() < 32) in bounds
    partials = ox.shared.array(64, f32)
    t = thread.idx.x
    lane = warp.lane()
    wid = warp.id()
    if t == 0:
        tile_id[0] = i32(ox.atomic.add(status, tiles, i64(1)))
    block.sync()
    tile = i64(tile_id[0])
    assert 0 <= tile and tile < len(status) - 1, "the tile counter (the last status word) was not zeroed"
    vals = ox.local.array(VECS, f32x4)
    excl = ox.local.array(VECS, f32)
    first = tile * (TILE // 4) + t  # this thread's first vector: it has first + j * THREADS
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
        p = partials[lane]
        for d in ox.static_range(5):
            step = i32(1 << d)
            nb = warp.shfl_up(p, step)
            if lane >= step:
                p += nb
        aggregate = warp.shfl_idx(p, 31)
        before = warp.shfl_up(p, 1)
        within = before if lane > 0 else f32(0.0)
        prefix = f32(0.0)
        if tile == 0:
            if lane == 0:
                ox.atomic.store(status, 0, pack_status(i64(FLAG_PREFIX), aggregate), order="relaxed")
        else:
            if lane == 0:
                ox.atomic.store(status, tile, pack_status(i64(FLAG_AGGREGATE), aggregate), order="relaxed")
            for back in range(1, tile + 1, 32):  # lane l reads tile - back - l: 32 predecessors at a time
                word = pack_status(i64(FLAG_PREFIX), f32(0.0))  # before tile 0: nothing to add
                if tile - back - lane >= 0:
                    word = ox.atomic.load(status, tile - back - lane, order="relaxed")
                while warp.any((word >> 32) == 0):  # a predecessor has not published yet
                    if tile - back - lane >= 0 and (word >> 32) == 0:
                        word = ox.atomic.load(status, tile - back - lane, order="relaxed")
                found = warp.ballot((word >> 32) == FLAG_PREFIX)
                value = status_value(word)
                if found != 0:  # the newest tile with its prefix ends the look-back
                    if lane > ox.bits.ffs(found) - 1:
                        value = f32(0.0)
                prefix += warp.reduce_sum(value)
                if found != 0:
                    break
            if lane == 0:
                ox.atomic.store(status, tile, pack_status(i64(FLAG_PREFIX), prefix + aggregate), order="relaxed")
        partials[lane] = prefix + within
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


def lookback_tiles(n: int) -> int:
    return (n + TILE - 1) // TILE


def _address(a):  # type: ignore[no-untyped-def]
    """The first element's address of a torch tensor, a CUDA-array-interface or NumPy array."""
    if hasattr(a, "data_ptr"):
        return a.data_ptr()
    for name in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(a, name, None)
        if iface is not None:
            return iface["data"][0]
    return None


def inclusive_scan_lookback(x, out, empty_i64, vecs=LB_VECS):  # type: ignore[no-untyped-def]
    """Host driver of the single-pass scan: ``x`` and ``out`` device arrays of f32 (16-byte
    aligned), ``empty_i64(m)`` makes a device int64 array of m elements (the tile words and the
    counter, zeroed here by ``lookback_init`` before the scan); ``vecs``: f32x4 a thread (2, 4, 8)."""
    tiles = lookback_tiles(len(x))
    if tiles == 0:
        return
    for name, a in (("x", x), ("out", out)):
        address = _address(a)
        if address is not None and address % 16:
            raise ValueError(f"inclusive_scan_lookback: {name} starts at {address:#x}, not 16-byte aligned "
                             "(the scan reads and writes f32x4 vectors); pass an array that starts a whole number "
                             "of 4 floats after an allocation's start, or use inclusive_scan")
    status = empty_i64(tiles + 1)
    lookback_init[(tiles + 1 + 255) // 256, 256](status)
    scan_lookback[tiles, lookback_threads(vecs)](x, out, status, vecs)
