"""The fast paths of the causal depthwise conv1d: forward and backward, channel-first and
channel-last, for fp32, fp16 and bf16 tensors whose rows start on 16 bytes.

The tensors reach these kernels as ``Slice[i32]``: the 32-bit words of the memory a tensor spans
(``cpp_functions._words``). ``DT`` says what the words hold (``F32``, ``F16`` or ``BF16``); the
halves are unpacked into f32 with bit operations (a bf16 is the high half of an f32) and packed
back with round-to-nearest-even conversions, as upstream's ``input_t(float)``. ``W`` is the
filter width (2, 3 or 4).

Channel-first (stride 1 along the positions): a thread has 8 consecutive positions of a row,
read with one 16-byte ``load4`` (8 halves; two for fp32) as upstream's ``vec_t``, and the
forward up to CF_VECS such vectors, all loaded before any is converted (the kernel is bound by
the bytes in flight). The W - 1 positions before a vector come from the lane below by a
shuffle (lane 0 loads them: 8 bytes, an L1 hit) and, in the backward, the gradient after them
from the lane above (upstream exchanges both through shared memory), so each position's
gradient is computed once.

Channel-last (stride 1 along the channels): a thread has one word column (two channels of
halves, one fp32 channel) and a run of positions, so a warp reads and writes whole 128-byte
rows with 4-byte accesses, and the convolution runs down the column with the last W rows in
registers: the transposition upstream makes through a 64 x 64 shared tile is the thread
mapping itself here. The forward walks its run CL_STEP rows at a time, loading the next
CL_STEP while it computes these; the backward loads its CL_SEG_BWD rows (and their halo) at
once.

The host (``cpp_functions``) checks every shape, stride and alignment these kernels rely on
before it launches them, and sends anything else to the general kernels (``kernels.py``), so
the accesses here are unchecked (``bounds_check=False``): an index is
``batch * stride + channel * stride + position`` over strides the bounds prover cannot relate to
the span's length. Their tensors are the (dim, width) weight and its gradient, small tables: no
index32 instance (``index32=False``), which would double the compile time for nothing.
"""
from __future__ import annotations

import oxide as ox
from oxide import MutSlice, MutTensor, Slice, Tensor, bf16x2, block, f16, f16x2, f32, f32x2, grid, i16, i32, i64, thread, u32, warp

__all__ = ["fwd_channel_first", "fwd_channel_last", "bwd_channel_first", "bwd_channel_last",
           "reduce_partials", "F32", "F16", "BF16", "CL_STEP",
           "CL_SEG_BWD", "CL_ROWS", "CF_VECS", "CF_BWD_REGISTERS"]

F32 = 0
F16 = 1
BF16 = 2
CL_STEP = 8           # positions the channel-last forward loads at a time, a thread
CL_SEG_BWD = 16       # and backward
CL_ROWS = 4           # channel-last blocks: 32 word columns x CL_ROWS position segments
CF_VECS = 4           # 8-position vectors a thread of the channel-first forward takes, at most
CF_BWD_REGISTERS = 40  # the channel-first backward's register cap (the host sizes its blocks by it)


def lane(w: i32, HI: ox.Constexpr[int], DT: ox.Constexpr[int]) -> f32:
    """The low (HI=0) or high (HI=1) half of a word as f32 (DT: F16 or BF16)."""
    if DT == BF16:
        if HI == 1:
            return ox.bits.bitcast(w & -65536, f32)
        return ox.bits.bitcast(w << 16, f32)
    if HI == 1:
        return f32(ox.bits.bitcast(i16(w >> 16), f16))
    return f32(ox.bits.bitcast(i16(w), f16))


def word_value(w: i32, E: ox.Constexpr[int], DT: ox.Constexpr[int]) -> f32:
    """Channel E of a word: the word itself for F32 (E = 0), else its low or high half."""
    if DT == F32:
        return ox.bits.bitcast(w, f32)
    return lane(w, E, DT)


def pack(lo: f32, hi: f32, DT: ox.Constexpr[int]) -> i32:
    """Two f32 values rounded to halves (DT: F16 or BF16), in one word, ``lo`` in the low half:
    one ``cvt.rn.f16x2.f32`` / ``cvt.rn.bf16x2.f32`` (``__floats2half2_rn``)."""
    if DT == BF16:
        return ox.bits.bitcast(bf16x2(f32x2(lo, hi)), i32)
    return ox.bits.bitcast(f16x2(f32x2(lo, hi)), i32)


def word_of(v: Slice[f32], AT: ox.Constexpr[int], DT: ox.Constexpr[int]) -> i32:
    """The word of channels v[AT] (and v[AT + 1] for halves)."""
    if DT == F32:
        return ox.bits.bitcast(v[AT], i32)
    return pack(v[AT], v[AT + 1], DT)


LOG2E = 1.4426950408889634


def silu(v: f32) -> f32:
    # upstream builds with --use_fast_math: expf is ex2.approx.ftz of v * log2(e) and the
    # division __fdividef, as here (a few ulp; without them the exp and the IEEE division make
    # the forward compute-bound)
    return ox.math.fast_div(v, 1.0 + ox.math.fast_exp2(v * -LOG2E))


def silu_grad(pre: f32) -> f32:
    """d silu / d pre = s (1 + pre (1 - s)) = s + pre (s - s²), s the sigmoid: two FMAs after it."""
    s = ox.math.fast_div(1.0, 1.0 + ox.math.fast_exp2(pre * -LOG2E))
    return ox.math.fma(pre, ox.math.fma(-s, s, s), s)


def store_row8(out: MutSlice[i32], e: i64, v: Slice[f32], DT: ox.Constexpr[int]) -> None:
    """v[0 … 7] rounded to the element type, at elements e … e + 7 (16-byte aligned)."""
    with ox.unsafe():
        if DT == F32:
            out.store4(e // 4, ox.bits.bitcast(v[0], i32), ox.bits.bitcast(v[1], i32),
                       ox.bits.bitcast(v[2], i32), ox.bits.bitcast(v[3], i32))
            out.store4(e // 4 + 1, ox.bits.bitcast(v[4], i32), ox.bits.bitcast(v[5], i32),
                       ox.bits.bitcast(v[6], i32), ox.bits.bitcast(v[7], i32))
        else:
            out.store4(e // 8, pack(v[0], v[1], DT), pack(v[2], v[3], DT), pack(v[4], v[5], DT),
                       pack(v[6], v[7], DT))


@ox.kernel(bounds_check=False, index32=False, launch_bounds=128, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def fwd_channel_first(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], out: MutSlice[i32],
                      nvec: i32, x_sb: i64, x_sc: i64, o_sb: i64, o_sc: i64,
                      has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """Each thread has up to CF_VECS vectors of 8 positions of one (batch, channel) row, rows
    with stride 1 along the positions and a length that is a multiple of 8: ``nvec``
    8-position vectors a row. Grid (vector blocks, dim, batch): the block gives the channel
    and the batch, no division; a thread's vectors are ``grid.dim.x * block.dim.x`` apart, so
    each load of a warp is 512 contiguous bytes, and the host picks how many a thread takes by
    the grid's x (``cpp_functions._cf_fwd_vectors``). A thread issues the 16-byte loads of all
    its vectors before it converts or computes anything: the kernel is bound by the bytes in
    flight (one vector a thread at 40 registers, 12 blocks an SM, was 0.78x upstream where 2
    were 0.96x). The W - 1 positions before a vector come from the lane below by a shuffle,
    lane 0 loading them (8 bytes, an L1 hit)."""
    v0 = block.idx.x * block.dim.x + thread.idx.x
    span = grid.dim.x * block.dim.x
    c = block.idx.y
    b = block.idx.z
    lane_id = warp.lane()
    xr = i64(b) * x_sb + i64(c) * x_sc
    raw = ox.local.array(8 * CF_VECS, i32)  # raw[8 * r + q]: word q of vector r (4 for halves, 8 for fp32)
    halo = ox.local.array(4 * CF_VECS, i32)  # lane 0: the words of the 4 positions before its vector r
    for r in ox.static_range(CF_VECS):
        v = v0 + r * span
        for q in ox.static_range(8):
            raw[8 * r + q] = 0
        for q2 in ox.static_range(4):
            halo[4 * r + q2] = 0
        if v < nvec:
            load_raw8(x, xr + i64(v) * 8, DT, raw, 8 * r)
            if lane_id == 0 and v > 0:
                load_raw4(x, xr + i64(v) * 8 - 4, DT, halo, 4 * r)
    wv = ox.local.array(4, f32)
    for k in ox.static_range(W):
        wv[k] = weight[c, k]
    bv: f32 = 0.0
    if has_bias:
        bv = bias[c]
    orow = i64(b) * o_sb + i64(c) * o_sc
    for r2 in ox.static_range(CF_VECS):
        v2 = v0 + r2 * span
        xv = ox.local.array(16, f32)  # xv[8 + j] holds position 8 * v2 + j
        for j in ox.static_range(8):
            xv[j] = 0.0
        unpack_row8(raw, DT, xv, 8, 8 * r2)
        # the 4 before: the last words of the lane below's vector (lane 0: its own loads)
        for j4 in ox.static_range(4):
            if DT == F32 or j4 % 2 == 0:
                wi = (4 + j4) if DT == F32 else (2 + j4 // 2)
                up = warp.shfl_up(raw[8 * r2 + wi], 1)
                hw = halo[4 * r2 + (j4 if DT == F32 else j4 // 2)]
                word = hw if lane_id == 0 else up
                if DT == F32:
                    xv[4 + j4] = ox.bits.bitcast(word, f32)
                else:
                    xv[4 + j4] = lane(word, 0, DT)
                    xv[5 + j4] = lane(word, 1, DT)
        if v2 < nvec:
            ov = ox.local.array(8, f32)
            for j2 in ox.static_range(8):
                acc = bv
                for k2 in ox.static_range(W):
                    acc += wv[k2] * xv[8 + j2 - (W - 1) + k2]
                ov[j2] = acc
            if act:  # one branch around the 8 (upstream's): their exp and division chains interleave
                for j3 in ox.static_range(8):
                    ov[j3] = silu(ov[j3])
            store_row8(out, orow + i64(v2) * 8, ov, DT)


@ox.kernel(bounds_check=False, index32=False, launch_bounds=128, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def fwd_channel_last(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], out: MutSlice[i32],
                     words: i32, seqlen: i32, groups: i32, steps: i32, x_sb: i64, x_sl: i64, o_sb: i64,
                     o_sl: i64, has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """Blocks of 32 x CL_ROWS threads; thread (x, y) has word column ``block.idx.x * 32 + x``
    (``words`` a row: channels with stride 1, strides here in words) and ``steps`` x CL_STEP
    positions from ``((block.idx.y % groups) * CL_ROWS + y) * steps * CL_STEP`` of batch
    ``block.idx.y // groups``: it walks them CL_STEP at a time with the last W - 1 rows in
    registers, loading the next CL_STEP rows while it computes these."""
    wd = block.idx.x * 32 + thread.idx.x
    b = block.idx.y // groups
    l0 = ((block.idx.y - b * groups) * CL_ROWS + thread.idx.y) * steps * CL_STEP
    if wd < words and l0 < seqlen:
        # word offsets of row l0, advanced a row at a time (an add, not a 64-bit product a row)
        xo = i64(b) * x_sb + wd + i64(l0) * x_sl
        oo = i64(b) * o_sb + wd + i64(l0) * o_sl
        win = ox.local.array(8, f32)  # win[4 * e + s]: channel e at position l - (W - 1) + s
        for s in ox.static_range(W - 1):
            h: i32 = 0
            if l0 - (W - 1) + s >= 0:
                h = x[xo - (W - 1 - s) * x_sl]
            for e in ox.static_range(2):
                win[4 * e + s] = 0.0
                if DT != F32 or e == 0:
                    win[4 * e + s] = word_value(h, e, DT)
        nx = ox.local.array(CL_STEP, i32)  # the next CL_STEP rows' words
        load_column(x, xo, x_sl, seqlen - l0, nx)
        xo += CL_STEP * x_sl
        wv = ox.local.array(8, f32)  # wv[4 * e + k]: channel e of the word
        bv = ox.local.array(2, f32)
        for e2 in ox.static_range(2):
            bv[e2] = 0.0
            for k in ox.static_range(4):
                wv[4 * e2 + k] = 0.0
            if DT != F32 or e2 == 0:
                ch = wd * (1 if DT == F32 else 2) + e2
                for k2 in ox.static_range(W):
                    wv[4 * e2 + k2] = weight[ch, k2]
                if has_bias:
                    bv[e2] = bias[ch]
        cur = ox.local.array(CL_STEP, i32)
        ov = ox.local.array(2 * CL_STEP, f32)  # ov[2 * j + e]: channel e at position p0 + j
        wo = ox.local.array(CL_STEP, i32)
        for st in range(steps):
            rem = seqlen - (l0 + st * CL_STEP)  # rows left from this step's first
            if rem > 0:
                for i in ox.static_range(CL_STEP):
                    cur[i] = nx[i]
                if st + 1 < steps:
                    load_column(x, xo, x_sl, rem - CL_STEP, nx)
                    xo += CL_STEP * x_sl
                for j in ox.static_range(CL_STEP):
                    for e3 in ox.static_range(2):
                        ov[2 * j + e3] = 0.0
                        if DT != F32 or e3 == 0:
                            win[4 * e3 + W - 1] = word_value(cur[j], e3, DT)
                            acc = bv[e3]
                            for k3 in ox.static_range(W):
                                acc += wv[4 * e3 + k3] * win[4 * e3 + k3]
                            ov[2 * j + e3] = acc
                            for s2 in ox.static_range(W - 1):
                                win[4 * e3 + s2] = win[4 * e3 + s2 + 1]
                if act:  # one branch around the step's outputs: their exp and division chains interleave
                    for j2 in ox.static_range(2 * CL_STEP):
                        ov[j2] = silu(ov[j2])
                for j4 in ox.static_range(CL_STEP):
                    wo[j4] = word_of(ov, 2 * j4, DT)
                for j3 in ox.static_range(CL_STEP):
                    if j3 < rem:
                        with ox.unsafe():
                            out[oo] = wo[j3]
                    oo += o_sl


def load_column(x: Slice[i32], at: i64, sl: i64, rem: i32, dst: MutSlice[i32]) -> None:
    """dst[i] = the word at ``at + i * sl`` (row stride ``sl`` words) for i < ``rem``, zero
    after; CL_STEP of them, all issued before any is used."""
    o = at
    for i in ox.static_range(CL_STEP):
        dst[i] = 0
        if i < rem:
            dst[i] = x[o]
        o += sl


def load_raw8(x: Slice[i32], e: i64, DT: ox.Constexpr[int], dst: MutSlice[i32], AT: ox.Constexpr[int]) -> None:
    """The words of elements e … e + 7 (16-byte aligned) into dst[AT …]: 4 for halves, 8 for fp32."""
    a = x.load4(e // (4 if DT == F32 else 8))
    dst[AT] = a.x
    dst[AT + 1] = a.y
    dst[AT + 2] = a.z
    dst[AT + 3] = a.w
    if DT == F32:
        q = x.load4(e // 4 + 1)
        dst[AT + 4] = q.x
        dst[AT + 5] = q.y
        dst[AT + 6] = q.z
        dst[AT + 7] = q.w


def load_raw4(x: Slice[i32], e: i64, DT: ox.Constexpr[int], dst: MutSlice[i32], AT: ox.Constexpr[int]) -> None:
    """The words of elements e … e + 3 (e a multiple of 4) into dst[AT …]: 2 for halves, 4 for fp32."""
    if DT == F32:
        a = x.load4(e // 4)
        dst[AT] = a.x
        dst[AT + 1] = a.y
        dst[AT + 2] = a.z
        dst[AT + 3] = a.w
    else:
        h = x.load2(e // 4)
        dst[AT] = h.x
        dst[AT + 1] = h.y


def unpack_row8(w: Slice[i32], DT: ox.Constexpr[int], dst: MutSlice[f32], AT: ox.Constexpr[int],
                FROM: ox.Constexpr[int]) -> None:
    """The 8 elements of ``load_raw8``'s words at w[FROM …] as f32, into dst[AT …]."""
    for j in ox.static_range(8):
        if DT == F32:
            dst[AT + j] = ox.bits.bitcast(w[FROM + j], f32)
        else:
            dst[AT + j] = lane(w[FROM + j // 2], j % 2, DT)


def load_vec8(x: Slice[i32], vi: i64, DT: ox.Constexpr[int], dst: MutSlice[f32], AT: ox.Constexpr[int]) -> None:
    """The 8 elements of 16-byte vector ``vi`` of halves (32-byte pair ``vi`` of fp32) into dst[AT …]."""
    if DT == F32:
        a = x.load4(vi * 2)
        q = x.load4(vi * 2 + 1)
        dst[AT] = ox.bits.bitcast(a.x, f32)
        dst[AT + 1] = ox.bits.bitcast(a.y, f32)
        dst[AT + 2] = ox.bits.bitcast(a.z, f32)
        dst[AT + 3] = ox.bits.bitcast(a.w, f32)
        dst[AT + 4] = ox.bits.bitcast(q.x, f32)
        dst[AT + 5] = ox.bits.bitcast(q.y, f32)
        dst[AT + 6] = ox.bits.bitcast(q.z, f32)
        dst[AT + 7] = ox.bits.bitcast(q.w, f32)
    else:
        a = x.load4(vi)
        dst[AT] = lane(a.x, 0, DT)
        dst[AT + 1] = lane(a.x, 1, DT)
        dst[AT + 2] = lane(a.y, 0, DT)
        dst[AT + 3] = lane(a.y, 1, DT)
        dst[AT + 4] = lane(a.z, 0, DT)
        dst[AT + 5] = lane(a.z, 1, DT)
        dst[AT + 6] = lane(a.w, 0, DT)
        dst[AT + 7] = lane(a.w, 1, DT)


def load_half_before(x: Slice[i32], vi: i64, DT: ox.Constexpr[int], dst: MutSlice[f32], AT: ox.Constexpr[int]) -> None:
    """The 4 elements before vector ``vi`` (8- or 16-byte aligned) into dst[AT …]."""
    if DT == F32:
        a = x.load4(vi * 2 - 1)
        dst[AT] = ox.bits.bitcast(a.x, f32)
        dst[AT + 1] = ox.bits.bitcast(a.y, f32)
        dst[AT + 2] = ox.bits.bitcast(a.z, f32)
        dst[AT + 3] = ox.bits.bitcast(a.w, f32)
    else:
        h = x.load2(vi * 2 - 1)
        dst[AT] = lane(h.x, 0, DT)
        dst[AT + 1] = lane(h.x, 1, DT)
        dst[AT + 2] = lane(h.y, 0, DT)
        dst[AT + 3] = lane(h.y, 1, DT)


def store_vec8(out: MutSlice[i32], vi: i64, v: Slice[f32], DT: ox.Constexpr[int]) -> None:
    """v[0 … 7] rounded to the element type, as vector ``vi`` (``load_vec8``'s units)."""
    with ox.unsafe():
        if DT == F32:
            out.store4(vi * 2, ox.bits.bitcast(v[0], i32), ox.bits.bitcast(v[1], i32),
                       ox.bits.bitcast(v[2], i32), ox.bits.bitcast(v[3], i32))
            out.store4(vi * 2 + 1, ox.bits.bitcast(v[4], i32), ox.bits.bitcast(v[5], i32),
                       ox.bits.bitcast(v[6], i32), ox.bits.bitcast(v[7], i32))
        else:
            out.store4(vi, pack(v[0], v[1], DT), pack(v[2], v[3], DT), pack(v[4], v[5], DT),
                       pack(v[6], v[7], DT))


@ox.kernel(bounds_check=False, index32=False, launch_bounds=256, max_registers=CF_BWD_REGISTERS,
           constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def bwd_channel_first(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], dout: Slice[i32], dx: MutSlice[i32],
                      dweight: MutTensor[f32, 2], dbias: MutTensor[f32, 1], partials: MutSlice[f32],
                      arrived: MutSlice[u32], batch: i32, dim: i32, nvec: i32, bpb: i32,
                      x_sb: i64, x_sc: i64, g_sb: i64, g_sc: i64, d_sb: i64, d_sc: i64,
                      has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """Block ``bg * dim + c`` takes the rows (b, c) of channel c for the ``bpb`` batches b of
    group bg (blocks in memory order), 8 positions a thread, each row's chunks of
    ``block.dim.x`` vectors last to first (as upstream's). The gradient g of the pre-activation
    is computed once a position: the W - 1 values after a thread's vector come from the lane
    above by a shuffle, from the next warp's first lane through shared memory, and for the
    block's last thread from the chunk after, done before (``ex[nwarps]``). Rows as
    ``fwd_channel_first``'s.

    dweight and dbias, deterministic with no float atomics: a block's sums go to
    ``partials[(c * (W + 1) + k) * ngroups + bg]`` (k = W: dbias); the last of a channel's
    ngroups blocks to arrive (``ox.atomic.inc`` on ``arrived[c]``, which wraps back to 0 for
    the next launch) adds them in group order and writes dweight[c] and dbias[c]. With one group
    the block writes them itself (``partials`` and ``arrived`` untouched)."""
    c = block.idx.x % dim
    bg = block.idx.x // dim
    ngroups = (batch + bpb - 1) // bpb
    b0 = bg * bpb
    b1 = min(b0 + bpb, batch)
    tid = thread.idx.x
    lane_id = warp.lane()
    wid = warp.id()
    nthreads = block.dim.x
    nwarps = (nthreads + 31) // 32
    nchunks = (nvec + nthreads - 1) // nthreads
    # ex[36 * parity + 4 * w + j]: g at position j of warp w's first vector (w = nwarps: the carry
    # from the chunk after), two buffers taken in turn, so one barrier a chunk orders their use
    ex = ox.shared.array(72, f32)
    if tid == 0:
        for j0 in ox.static_range(3):
            ex[4 * nwarps + j0] = 0.0
    wv = ox.local.array(4, f32)
    for k in ox.static_range(W):
        wv[k] = weight[c, k]
    bv: f32 = 0.0
    if has_bias:
        bv = bias[c]
    dw = ox.local.array(4, f32)
    for k in ox.static_range(4):
        dw[k] = 0.0
    db: f32 = 0.0
    for b in range(b0, b1):
        # the rows' first vectors (their starts are multiples of 8 elements: the host checks)
        xr = (i64(b) * x_sb + i64(c) * x_sc) // 8
        gr = (i64(b) * g_sb + i64(c) * g_sc) // 8
        dr = (i64(b) * d_sb + i64(c) * d_sc) // 8
        for cc in range(nchunks):
            chunk = nchunks - 1 - cc
            v = chunk * nthreads + tid
            buf = (((b - b0) * nchunks + cc) & 1) * 36
            xv = ox.local.array(16, f32)   # xv[8 + j]: x at 8 * v + j, j in -8 … 7
            gv = ox.local.array(12, f32)   # gv[j]: dout, then g, at 8 * v + j, j in 0 … 11
            for j in ox.static_range(16):
                xv[j] = 0.0
            for j in ox.static_range(12):
                gv[j] = 0.0
            if v < nvec:
                load_vec8(x, xr + v, DT, xv, 8)
                load_vec8(dout, gr + v, DT, gv, 0)
                if lane_id == 0 and v > 0:
                    load_half_before(x, xr + v, DT, xv, 4)
            for j in ox.static_range(W - 1):
                up = warp.shfl_up(xv[16 - (W - 1) + j], 1)
                if lane_id > 0:
                    xv[8 - (W - 1) + j] = up
            if act:
                for j in ox.static_range(8):
                    pre = bv
                    for k in ox.static_range(W):
                        pre += wv[k] * xv[8 + j - (W - 1) + k]
                    gv[j] = gv[j] * silu_grad(pre)
            # g after the vector: the lane above's first W - 1
            for j in ox.static_range(W - 1):
                down = warp.shfl_down(gv[j], 1)
                gv[8 + j] = down
            if lane_id == 0:
                for j in ox.static_range(W - 1):
                    ex[buf + 4 * wid + j] = gv[j]
            block.sync()
            if lane_id == 31 or tid == nthreads - 1:
                for j in ox.static_range(W - 1):
                    gv[8 + j] = ex[buf + 4 * (wid + 1) + j]
            if tid == 0:
                for j in ox.static_range(W - 1):
                    ex[36 - buf + 4 * nwarps + j] = gv[j] if chunk > 0 else 0.0
            if v < nvec:
                ov = ox.local.array(8, f32)
                for j in ox.static_range(8):
                    db += gv[j]
                    acc: f32 = 0.0
                    for k in ox.static_range(W):
                        acc += wv[k] * gv[j + (W - 1) - k]
                        dw[k] += xv[8 + j - (W - 1) + k] * gv[j]
                    ov[j] = acc
                store_vec8(dx, dr + v, ov, DT)
    # the block's sums: each warp's by shuffles, then the warps' in order by threads 0 … W
    red = ox.shared.array(160, f32)  # [warp][W + 1], up to 32 warps
    for k in ox.static_range(W):
        s = warp.reduce_sum(dw[k])
        if lane_id == 0:
            red[wid * 5 + k] = s
    sb = warp.reduce_sum(db)
    if lane_id == 0:
        red[wid * 5 + 4] = sb
    block.sync()
    total: f32 = 0.0
    if tid <= W:
        at = tid if tid < W else 4
        for w_ in range(nwarps):
            total += red[w_ * 5 + at]
    if ngroups == 1:
        if tid <= W:
            write_sum(dweight, dbias, c, tid, total, has_bias, W)
    else:
        slot = (i64(c) * (W + 1) + tid) * ngroups
        if tid <= W:
            with ox.unsafe():
                partials[slot + bg] = total
            ox.fence.device()  # the partial is seen before this block's arrival is
        last = ox.shared.array(1, i32)
        block.sync()
        if tid == 0:
            last[0] = 1 if ox.atomic.inc(arrived, c, u32(ngroups - 1)) == u32(ngroups - 1) else 0
        block.sync()
        if last[0] == 1 and tid <= W:
            ox.fence.device()  # every other group's partial, seen before its arrival, is seen here
            sum_: f32 = 0.0
            for g in range(ngroups):
                sum_ += partials[slot + g]
            write_sum(dweight, dbias, c, tid, sum_, has_bias, W)


def write_sum(dweight: MutTensor[f32, 2], dbias: MutTensor[f32, 1], c: i32, k: i32, total: f32, has_bias: bool,
              W: ox.Constexpr[int]) -> None:
    """dweight[c, k] = total for k < W; dbias[c] = total for k = W (with a bias)."""
    with ox.unsafe():
        if k < W:
            dweight[c, k] = total
        elif has_bias:
            dbias[c] = total


@ox.kernel(bounds_check=False, index32=False, launch_bounds=128, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def bwd_channel_last(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], dout: Slice[i32], dx: MutSlice[i32],
                     partials: MutSlice[f32], dim: i32, words: i32, seqlen: i32, groups: i32, segs_per: i32,
                     rows: i32, x_sb: i64, x_sl: i64, g_sb: i64, g_sl: i64, d_sb: i64, d_sl: i64,
                     has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """Blocks of 32 x CL_ROWS threads; thread (x, y) has word column ``block.idx.x * 32 + x``
    (strides in words) and, in turn, ``segs_per`` segments of CL_SEG_BWD positions: segment
    ``((block.idx.y % groups) * segs_per + i) * CL_ROWS + y`` of batch ``block.idx.y // groups``.
    dx is written directly; dweight and dbias are summed over the thread's positions, then over
    the block's CL_ROWS threads of a column in order, into ``partials[(channel * (W + 1) + k) *
    rows + block.idx.y]`` (k = W: the bias), which ``reduce_partials`` sums in a fixed order."""
    wd = block.idx.x * 32 + thread.idx.x
    ty = thread.idx.y
    b = block.idx.y // groups
    grp = block.idx.y - b * groups
    live = wd < words
    wv = ox.local.array(8, f32)  # wv[4 * e + k]: channel e of the word
    bv = ox.local.array(2, f32)
    dw = ox.local.array(8, f32)
    db = ox.local.array(2, f32)
    for e in ox.static_range(2):
        bv[e] = 0.0
        db[e] = 0.0
        for k in ox.static_range(4):
            wv[4 * e + k] = 0.0
            dw[4 * e + k] = 0.0
        if live and (DT != F32 or e == 0):
            ch = wd * (1 if DT == F32 else 2) + e
            for k2 in ox.static_range(W):
                wv[4 * e + k2] = weight[ch, k2]
            if has_bias:
                bv[e] = bias[ch]
    xb = i64(b) * x_sb + wd
    gb = i64(b) * g_sb + wd
    dxb = i64(b) * d_sb + wd
    for it in range(segs_per):
        l0 = ((grp * segs_per + it) * CL_ROWS + ty) * CL_SEG_BWD
        if live and l0 < seqlen:
            rem = seqlen - l0  # positions left from l0
            rx = ox.local.array(CL_SEG_BWD + 6, i32)  # rx[i]: x at l0 - 3 + i
            rg = ox.local.array(CL_SEG_BWD + 3, i32)  # rg[i]: dout at l0 + i
            # word offsets advanced a row at a time (an add, not a 64-bit product a row); the
            # rows checked against the sequence's ends only in its first and last segments
            xo = xb + i64(l0 - (W - 1)) * x_sl
            go = gb + i64(l0) * g_sl
            if l0 >= W - 1 and rem >= CL_SEG_BWD + W - 1:
                for i in ox.static_range(CL_SEG_BWD + 6):
                    rx[i] = 0
                    if i >= 4 - W and i < CL_SEG_BWD + 2 + W:
                        rx[i] = x[xo]
                        xo += x_sl
                for i2 in ox.static_range(CL_SEG_BWD + 3):
                    rg[i2] = 0
                    if i2 < CL_SEG_BWD + W - 1:
                        rg[i2] = dout[go]
                        go += g_sl
            else:
                for i3 in ox.static_range(CL_SEG_BWD + 6):
                    rx[i3] = 0
                    if i3 >= 4 - W and i3 < CL_SEG_BWD + 2 + W:
                        if i3 - 3 >= -l0 and i3 - 3 < rem:
                            rx[i3] = x[xo]
                        xo += x_sl
                for i4 in ox.static_range(CL_SEG_BWD + 3):
                    rg[i4] = 0
                    if i4 < CL_SEG_BWD + W - 1:
                        if i4 < rem:
                            rg[i4] = dout[go]
                        go += g_sl
            do = dxb + i64(l0) * d_sl
            wdx = ox.local.array(CL_SEG_BWD, i32)  # dx's words at l0 + j
            xw = ox.local.array(8, f32)  # xw[4 * e + s]: x of channel e at m - (W - 1) + s
            gw = ox.local.array(8, f32)  # gw[4 * e + s]: g of channel e at m - (W - 1) + s
            for s in ox.static_range(W - 1):
                for e2 in ox.static_range(2):
                    gw[4 * e2 + s] = 0.0
                    xw[4 * e2 + s] = 0.0
                    if DT != F32 or e2 == 0:
                        xw[4 * e2 + s] = word_value(rx[3 - (W - 1) + s], e2, DT)
            ov = ox.local.array(2, f32)
            for q in ox.static_range(CL_SEG_BWD + W - 1):
                # position m = l0 + q: its g, its dweight/dbias terms (q < CL_SEG_BWD), and dx at m - (W - 1)
                for e3 in ox.static_range(2):
                    ov[e3] = 0.0
                    if DT != F32 or e3 == 0:
                        xw[4 * e3 + W - 1] = word_value(rx[3 + q], e3, DT)
                        g = word_value(rg[q], e3, DT)
                        if act:
                            pre = bv[e3]
                            for k3 in ox.static_range(W):
                                pre += wv[4 * e3 + k3] * xw[4 * e3 + k3]
                            g = g * silu_grad(pre)
                        gw[4 * e3 + W - 1] = g
                        if q < CL_SEG_BWD:
                            db[e3] += g
                            for k4 in ox.static_range(W):
                                dw[4 * e3 + k4] += xw[4 * e3 + k4] * g
                        acc: f32 = 0.0
                        for k5 in ox.static_range(W):
                            acc += wv[4 * e3 + k5] * gw[4 * e3 + W - 1 - k5]
                        ov[e3] = acc
                        for s2 in ox.static_range(W - 1):
                            xw[4 * e3 + s2] = xw[4 * e3 + s2 + 1]
                            gw[4 * e3 + s2] = gw[4 * e3 + s2 + 1]
                if q >= W - 1:
                    wdx[q - (W - 1)] = word_of(ov, 0, DT)
            if rem >= CL_SEG_BWD:
                for j5 in ox.static_range(CL_SEG_BWD):
                    with ox.unsafe():
                        dx[do] = wdx[j5]
                    do += d_sl
            else:
                for j6 in ox.static_range(CL_SEG_BWD):
                    if j6 < rem:
                        with ox.unsafe():
                            dx[do] = wdx[j6]
                    do += d_sl
    # the block's sums over its CL_ROWS segments of a column, in order
    red = ox.shared.array((CL_ROWS, 32 * 10), f32)
    for e4 in ox.static_range(2):
        for k6 in ox.static_range(4):
            red[ty, thread.idx.x * 10 + 4 * e4 + k6] = dw[4 * e4 + k6]
        red[ty, thread.idx.x * 10 + 8 + e4] = db[e4]
    block.sync()
    if ty == 0 and live:
        for e5 in ox.static_range(2):
            if DT != F32 or e5 == 0:
                ch2 = wd * (1 if DT == F32 else 2) + e5
                if ch2 < dim:
                    for k7 in ox.static_range(W + 1):
                        slot = 4 * e5 + k7 if k7 < W else 8 + e5
                        total: f32 = 0.0
                        for y in ox.static_range(CL_ROWS):
                            total += red[y, thread.idx.x * 10 + slot]
                        with ox.unsafe():
                            partials[(i64(ch2) * (W + 1) + k7) * rows + block.idx.y] = total


@ox.kernel(bounds_check=False, index32=False, launch_bounds=256, constexprs={"W": [2, 3, 4]})
def reduce_partials(partials: Slice[f32], rows: i32, dim: i32, dweight: MutTensor[f32, 2], dbias: MutTensor[f32, 1],
                    has_bias: bool, W: ox.Constexpr[int]) -> None:
    """dweight[c, k] and dbias[c] (k = W): the sum of ``partials[(c * (W + 1) + k) * rows + r]``
    over the rows r, one warp per (c, k): lane l sums rows l, l + 32, … in order, then the warp's
    fixed shuffle tree, so the same bits every run."""
    i = thread.index_1d() // 32
    lane_id = warp.lane()
    if i < i64(dim) * (W + 1):
        total: f32 = 0.0
        for r in range(lane_id, rows, 32):
            total += partials[i * rows + r]
        total = warp.reduce_sum(total)
        c = i // (W + 1)
        k = i - c * (W + 1)
        if lane_id == 0:
            with ox.unsafe():
                if k < W:
                    dweight[c, k] = total
                elif has_bias:
                    dbias[c] = total
