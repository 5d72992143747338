"""Kernels for tests/test_lang_intrinsics_gpu.py: the CUDA intrinsics of docs/language.md
("Coming from CUDA C++"), one element per thread, each result written to its own output."""
import oxide as ox
from oxide import (DisjointSlice, MutSlice, Slice, bf16, bf16x2, block, f16, f16x2, f32, f32x2, f64, i16, i32, i64,
                   thread, u16, u32, u64, warp)


@ox.kernel
def bit_ops(x: Slice[u32], y: Slice[u32], s: Slice[u32], x64: Slice[u64], ffs32: DisjointSlice[i32],
            ffs64: DisjointSlice[i32], perm: DisjointSlice[u32], shl: DisjointSlice[u32], shlc: DisjointSlice[u32],
            shr: DisjointSlice[u32], shrc: DisjointSlice[u32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(y) and i < len(s) and i < len(x64):
        ffs32[i] = ox.bits.ffs(x[i])
        ffs64[i] = ox.bits.ffs(x64[i])
        perm[i] = ox.bits.byte_perm(x[i], y[i], s[i])
        shl[i] = ox.bits.funnelshift_l(x[i], y[i], s[i])
        shlc[i] = ox.bits.funnelshift_lc(x[i], y[i], s[i])
        shr[i] = ox.bits.funnelshift_r(x[i], y[i], s[i])
        shrc[i] = ox.bits.funnelshift_rc(x[i], y[i], s[i])


@ox.kernel
def bit_casts(f: Slice[f32], d: Slice[f64], h: Slice[f16], f_bits: DisjointSlice[i32], f_back: DisjointSlice[f32],
              d_bits: DisjointSlice[i64], d_back: DisjointSlice[f64], h_bits: DisjointSlice[i16],
              h_back: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(f) and i < len(d) and i < len(h):
        f_bits[i] = ox.bits.bitcast(f[i], i32)
        f_back[i] = ox.bits.bitcast(ox.bits.bitcast(f[i], u32) ^ u32(0x80000000), f32)  # -f
        d_bits[i] = ox.bits.bitcast(d[i], i64)
        d_back[i] = ox.bits.bitcast(ox.bits.bitcast(d[i], u64) ^ (u64(1) << u64(63)), f64)
        h_bits[i] = ox.bits.bitcast(h[i], i16)
        h_back[i] = ox.bits.bitcast(ox.bits.bitcast(h[i], u16) ^ u16(0x8000), f16)


@ox.kernel
def pair_casts(x: Slice[f32], w: Slice[i32], h_word: DisjointSlice[i32], b_word: DisjointSlice[u32],
               h_back: DisjointSlice[f32], b_back: DisjointSlice[f32]) -> None:
    """Element i of the outputs from x[2i], x[2i + 1] and word w[i]: the pair rounded to halves
    (f16x2, bf16x2) as one word, and the word's two halves widened and summed."""
    i = thread.index_1d()
    if 2 * i + 1 < len(x) and i < len(w):
        v = f32x2(x[2 * i], x[2 * i + 1])
        h_word[i] = ox.bits.bitcast(f16x2(v), i32)
        b_word[i] = ox.bits.bitcast(bf16x2(v), u32)
        hv = f32x2(ox.bits.bitcast(w[i], f16x2))
        bv = f32x2(ox.bits.bitcast(ox.bits.bitcast(w[i], f32), bf16x2))
        h_back[i] = hv.x * 2.0 + hv.y
        b_back[i] = bv.x * 2.0 + bv.y


@ox.kernel
def fast_math(x: Slice[f32], y: Slice[f32], ang: Slice[f32], exp_: DisjointSlice[f32], log_: DisjointSlice[f32],
              sin_: DisjointSlice[f32], cos_: DisjointSlice[f32], div_: DisjointSlice[f32], pow_: DisjointSlice[f32],
              rcp_: DisjointSlice[f32], sat_: DisjointSlice[f32], log2_: DisjointSlice[f32],
              exp10_: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(y) and i < len(ang):
        exp_[i] = ox.math.fast_exp(y[i])
        log_[i] = ox.math.fast_log(x[i])
        sin_[i] = ox.math.fast_sin(ang[i])
        cos_[i] = ox.math.fast_cos(ang[i])
        div_[i] = ox.math.fast_div(y[i], x[i])
        pow_[i] = ox.math.fast_pow(x[i], y[i] * 0.25)
        rcp_[i] = ox.math.rcp(x[i])
        sat_[i] = ox.math.saturate(y[i])
        log2_[i] = ox.math.fast_log2(x[i])
        exp10_[i] = ox.math.fast_exp10(y[i] * 0.25)


@ox.kernel
def rcp64(x: Slice[f64], out: DisjointSlice[f64]) -> None:
    i = thread.index_1d()
    if i < len(x):
        out[i] = ox.math.rcp(x[i])


@ox.kernel
def timers(sleep_ns: u32, cycles: DisjointSlice[i64], elapsed_ns: DisjointSlice[i64], clock32: DisjointSlice[i64],
           stamps: DisjointSlice[u64]) -> None:
    i = thread.index_1d()
    if i < len(cycles) and i < len(elapsed_ns) and i < len(clock32) and i < len(stamps):
        t0 = ox.timer.globaltimer()
        c0 = ox.timer.clock64()
        k0 = ox.timer.clock()
        ox.timer.nanosleep(sleep_ns)
        c1 = ox.timer.clock64()
        k1 = ox.timer.clock()
        t1 = ox.timer.globaltimer()
        cycles[i] = c1 - c0
        elapsed_ns[i] = i64(t1 - t0)
        clock32[i] = i64(k1 - k0)  # u32 wrap-around difference
        stamps[i] = t0


@ox.kernel
def volatile_handoff(x: Slice[i32], out: DisjointSlice[i32], seen: MutSlice[i32]) -> None:
    """Warp 0's lane 0 of each block publishes a value through shared memory with volatile
    stores; lane 0 of the block's last warp spins on the flag with volatile loads."""
    value = ox.shared.array(1, i32)
    flag = ox.shared.array(1, i32)
    if thread.idx.x == 0:
        ox.volatile.store(flag, 0, 0)
    block.sync()
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        out[i] = ox.volatile.load(x, i) * 3
    last_warp = (block.dim.x - 1) // 32
    if thread.idx.x == 0:
        ox.volatile.store(value, 0, x[i64(block.idx.x)] + 7)
        ox.fence.block()
        ox.volatile.store(flag, 0, 1)
    elif warp.id() == last_warp and warp.lane() == 0:
        while ox.volatile.load(flag, 0) == 0:
            ox.timer.nanosleep(32)
        ox.fence.block()
        with ox.unsafe():
            ox.volatile.store(seen, i64(block.idx.x), ox.volatile.load(value, 0))


@ox.kernel
def half_atomics(x: Slice[f16], slot: Slice[i32], sums: MutSlice[f16], lows: MutSlice[f16], highs: MutSlice[f16],
                 swapped: MutSlice[f16], old_exch: DisjointSlice[f16], old_cas: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(slot) and i < len(old_exch) and i < len(old_cas):
        j = slot[i]
        ox.atomic.add(sums, j, x[i])
        ox.atomic.sub(sums, j + 8, x[i], scope="system")
        ox.atomic.min(lows, j, x[i])
        ox.atomic.max(highs, j, x[i], scope="system")
        old_exch[i] = ox.atomic.exch(swapped, j, x[i])
        old_cas[i] = ox.atomic.cas(swapped, j + 8, f16(-3.0), x[i])  # -3.0: no input has that value


@ox.kernel
def bf16_atomics(x: Slice[bf16], slot: Slice[i32], sums: MutSlice[bf16], lows: MutSlice[bf16], highs: MutSlice[bf16],
                 old_cas: DisjointSlice[bf16]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(slot) and i < len(old_cas):
        j = slot[i]
        ox.atomic.add(sums, j, x[i])
        ox.atomic.min(lows, j, x[i], scope="system")
        ox.atomic.max(highs, j, x[i])
        old_cas[i] = ox.atomic.cas(sums, j + 8, bf16(-1.0), x[i])


@ox.kernel
def masked_warp(x: Slice[i32], sel: Slice[u32], active: DisjointSlice[u32], total: DisjointSlice[i32],
                low: DisjointSlice[i32], high: DisjointSlice[i32], votes: DisjointSlice[u32], first: DisjointSlice[i32],
                same: DisjointSlice[u32], umax: DisjointSlice[u32]) -> None:
    """``sel`` is the same for the 32 lanes of a warp: the lanes that take part."""
    i = thread.index_1d()
    if i < len(x) and i < len(sel):
        mask = sel[i]
        if (mask >> u32(warp.lane())) & 1 == 1:
            active[i] = warp.active_mask()
            total[i] = warp.reduce_sum(x[i], mask=mask)
            low[i] = warp.reduce_min(x[i], mask=mask)
            high[i] = warp.reduce_max(x[i], mask=mask)
            votes[i] = warp.ballot(x[i] > 0, mask=mask)
            first[i] = warp.shfl_idx(x[i], ox.bits.ffs(mask) - 1, mask=mask)
            same[i] = warp.match_any(x[i] & 3, mask=mask)
            umax[i] = warp.reduce_max(ox.bits.bitcast(x[i], u32), mask=mask)
            warp.sync(mask=mask)


def next_round(i: i64, n: i64, r: i32, a: MutSlice[i32], b: MutSlice[i32]) -> None:
    """One round: every element takes its neighbour 37 places on, plus one, from the other
    buffer (written by other blocks in the previous round)."""
    if i < n:
        src = (i + 37) % n
        with ox.unsafe():
            if r % 2 == 0:
                b[i] = a[src] + 1
            else:
                a[i] = b[src] + 1
    ox.grid.sync()


@ox.kernel
def rotate_rounds(x: Slice[i32], a: MutSlice[i32], b: MutSlice[i32], rounds: i32, out: DisjointSlice[i32]) -> None:
    assert len(a) == len(x) and len(b) == len(x) and len(out) == len(x)
    i = thread.index_1d()
    n = len(x)
    if i < n:
        with ox.unsafe():
            a[i] = x[i]
    ox.grid.sync()
    for r in range(rounds):
        next_round(i64(i), n, r, a, b)
    if i < n:
        out[i] = a[i] if rounds % 2 == 0 else b[i]
