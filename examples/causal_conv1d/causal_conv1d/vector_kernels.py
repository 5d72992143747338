"""The fast paths of the causal depthwise conv1d: forward and backward, channel-first and
channel-last, for fp32, fp16 and bf16 tensors whose rows start on 16 bytes.

The tensors reach these kernels as ``Slice[i32]``: the 32-bit words of the memory a tensor spans
(``cpp_functions._words``), so one ``load4`` reads 16 bytes: 8 halves or 4 floats, as
upstream's ``vec_t`` loads. ``DT`` says what the words hold (``F32``, ``F16`` or ``BF16``); the
halves are unpacked into f32 with bit operations (a bf16 is the high half of an f32) and packed
back with round-to-nearest-even conversions, as upstream's ``input_t(float)``. ``W`` is the
filter width (2, 3 or 4).

The host (``cpp_functions``) checks every shape, stride and alignment these kernels rely on
before it launches them, and sends anything else to the general kernels (``kernels.py``), so
the accesses here are unchecked (``bounds_check=False``): an index is
``batch * stride + channel * stride + position`` over strides the bounds prover cannot relate to
the span's length. Their tensors are the (dim, width) weight and its gradient, small tables: no
index32 instance (``index32=False``), which would double the compile time for nothing.
"""
from __future__ import annotations

import oxide as ox
from oxide import MutSlice, MutTensor, Slice, Tensor, block, bf16, f16, f32, i16, i32, i64, thread, u16, warp

__all__ = ["fwd_channel_first", "fwd_channel_last", "bwd_channel_first", "bwd_channel_last",
           "reduce_partials", "F32", "F16", "BF16", "POSITIONS_FWD", "POSITIONS_BWD", "CL_BWD_ROWS",
           "CL_BWD_VECS"]

F32 = 0
F16 = 1
BF16 = 2
POSITIONS_FWD = 16  # positions per thread of the channel-last forward
POSITIONS_BWD = 16  # and backward
CL_BWD_VECS = 32    # channel-last backward block: 32 threads along the channels (4 each) ...
CL_BWD_ROWS = 4     # ... by 4 along the positions (one POSITIONS_BWD chunk each)


def lane(w: i32, HI: ox.Constexpr[int], DT: ox.Constexpr[int]) -> f32:
    """The low (HI=0) or high (HI=1) half of a word as f32 (DT: F16 or BF16)."""
    if DT == BF16:
        if HI == 1:
            return ox.bits.bitcast(w & -65536, f32)
        return ox.bits.bitcast(w << 16, f32)
    if HI == 1:
        return f32(ox.bits.bitcast(i16(w >> 16), f16))
    return f32(ox.bits.bitcast(i16(w), f16))


def pack(lo: f32, hi: f32, DT: ox.Constexpr[int]) -> i32:
    """Two f32 values rounded to halves (DT: F16 or BF16), in one word, ``lo`` in the low half."""
    if DT == BF16:
        a = i32(ox.bits.bitcast(bf16(lo), u16))
        b = i32(ox.bits.bitcast(bf16(hi), u16))
        return a | (b << 16)
    c = i32(ox.bits.bitcast(f16(lo), u16))
    d = i32(ox.bits.bitcast(f16(hi), u16))
    return c | (d << 16)


def silu(v: f32) -> f32:
    # upstream builds with --use_fast_math: __expf and __fdividef, as here (a few ulp; without
    # them the exp and the IEEE division make the forward compute-bound)
    return ox.math.fast_div(v, 1.0 + ox.math.fast_exp(-v))


def silu_grad(pre: f32) -> f32:
    s = ox.math.fast_div(1.0, 1.0 + ox.math.fast_exp(-pre))
    return s * (1.0 + pre * (1.0 - s))


@ox.kernel(bounds_check=False, index32=False, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def fwd_channel_first(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], out: MutSlice[i32],
                      nvec: i32, x_sb: i64, x_sc: i64, o_sb: i64, o_sc: i64,
                      has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """One thread per 8 positions of one (batch, channel) row, rows with stride 1 along the
    positions and a length that is a multiple of 8: ``nvec`` 8-position vectors a row. Grid
    (vector blocks, dim, batch): the block gives the channel and the batch, no division."""
    v = block.idx.x * block.dim.x + thread.idx.x
    c = block.idx.y
    b = block.idx.z
    if v < nvec:
        l0 = i64(v) * 8
        xe = i64(b) * x_sb + i64(c) * x_sc + l0
        oe = i64(b) * o_sb + i64(c) * o_sc + l0
        xv = ox.local.array(16, f32)  # xv[8 + j] holds position l0 + j
        for j in ox.static_range(4):
            xv[4 + j] = 0.0
        if DT == F32:
            a = x.load4(xe // 4)
            q = x.load4(xe // 4 + 1)
            xv[8] = ox.bits.bitcast(a.x, f32)
            xv[9] = ox.bits.bitcast(a.y, f32)
            xv[10] = ox.bits.bitcast(a.z, f32)
            xv[11] = ox.bits.bitcast(a.w, f32)
            xv[12] = ox.bits.bitcast(q.x, f32)
            xv[13] = ox.bits.bitcast(q.y, f32)
            xv[14] = ox.bits.bitcast(q.z, f32)
            xv[15] = ox.bits.bitcast(q.w, f32)
            if v > 0:
                h4 = x.load4(xe // 4 - 1)
                xv[4] = ox.bits.bitcast(h4.x, f32)
                xv[5] = ox.bits.bitcast(h4.y, f32)
                xv[6] = ox.bits.bitcast(h4.z, f32)
                xv[7] = ox.bits.bitcast(h4.w, f32)
        else:
            a8 = x.load4(xe // 8)
            xv[8] = lane(a8.x, 0, DT)
            xv[9] = lane(a8.x, 1, DT)
            xv[10] = lane(a8.y, 0, DT)
            xv[11] = lane(a8.y, 1, DT)
            xv[12] = lane(a8.z, 0, DT)
            xv[13] = lane(a8.z, 1, DT)
            xv[14] = lane(a8.w, 0, DT)
            xv[15] = lane(a8.w, 1, DT)
            if v > 0:
                h = x.load2(xe // 4 - 1)
                xv[4] = lane(h.x, 0, DT)
                xv[5] = lane(h.x, 1, DT)
                xv[6] = lane(h.y, 0, DT)
                xv[7] = lane(h.y, 1, DT)
        wv = ox.local.array(4, f32)
        for k in ox.static_range(W):
            wv[k] = weight[c, k]
        bv: f32 = 0.0
        if has_bias:
            bv = bias[c]
        ov = ox.local.array(8, f32)
        for j in ox.static_range(8):
            acc = bv
            for k in ox.static_range(W):
                acc += wv[k] * xv[8 + j - (W - 1) + k]
            if act:
                acc = silu(acc)
            ov[j] = acc
        with ox.unsafe():
            if DT == F32:
                out.store4(oe // 4, ox.bits.bitcast(ov[0], i32), ox.bits.bitcast(ov[1], i32),
                           ox.bits.bitcast(ov[2], i32), ox.bits.bitcast(ov[3], i32))
                out.store4(oe // 4 + 1, ox.bits.bitcast(ov[4], i32), ox.bits.bitcast(ov[5], i32),
                           ox.bits.bitcast(ov[6], i32), ox.bits.bitcast(ov[7], i32))
            else:
                out.store4(oe // 8, pack(ov[0], ov[1], DT), pack(ov[2], ov[3], DT), pack(ov[4], ov[5], DT),
                           pack(ov[6], ov[7], DT))


def load_row8(x: Slice[i32], e: i64, DT: ox.Constexpr[int], dst: MutSlice[f32], AT: ox.Constexpr[int]) -> None:
    """Elements e … e + 7 (e a multiple of 8 words' worth: 16-byte aligned) into dst[AT …]."""
    if DT == F32:
        a = x.load4(e // 4)
        q = x.load4(e // 4 + 1)
        dst[AT] = ox.bits.bitcast(a.x, f32)
        dst[AT + 1] = ox.bits.bitcast(a.y, f32)
        dst[AT + 2] = ox.bits.bitcast(a.z, f32)
        dst[AT + 3] = ox.bits.bitcast(a.w, f32)
        dst[AT + 4] = ox.bits.bitcast(q.x, f32)
        dst[AT + 5] = ox.bits.bitcast(q.y, f32)
        dst[AT + 6] = ox.bits.bitcast(q.z, f32)
        dst[AT + 7] = ox.bits.bitcast(q.w, f32)
    else:
        a = x.load4(e // 8)
        dst[AT] = lane(a.x, 0, DT)
        dst[AT + 1] = lane(a.x, 1, DT)
        dst[AT + 2] = lane(a.y, 0, DT)
        dst[AT + 3] = lane(a.y, 1, DT)
        dst[AT + 4] = lane(a.z, 0, DT)
        dst[AT + 5] = lane(a.z, 1, DT)
        dst[AT + 6] = lane(a.w, 0, DT)
        dst[AT + 7] = lane(a.w, 1, DT)


def load_row4(x: Slice[i32], e: i64, DT: ox.Constexpr[int], dst: MutSlice[f32], AT: ox.Constexpr[int]) -> None:
    """Elements e … e + 3 (e a multiple of 4: 8- or 16-byte aligned) into dst[AT …]."""
    if DT == F32:
        a = x.load4(e // 4)
        dst[AT] = ox.bits.bitcast(a.x, f32)
        dst[AT + 1] = ox.bits.bitcast(a.y, f32)
        dst[AT + 2] = ox.bits.bitcast(a.z, f32)
        dst[AT + 3] = ox.bits.bitcast(a.w, f32)
    else:
        h = x.load2(e // 4)
        dst[AT] = lane(h.x, 0, DT)
        dst[AT + 1] = lane(h.x, 1, DT)
        dst[AT + 2] = lane(h.y, 0, DT)
        dst[AT + 3] = lane(h.y, 1, DT)


def fwd_row(x: Slice[i32], xe: i64, out: MutSlice[i32], oe: i64, win: MutSlice[f32], wv: Slice[f32],
            bv: Slice[f32], act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """One position of the channel-last forward: loads the row at xe into the window's last row,
    stores the 8 outputs at oe and shifts the window by one row."""
    load_row8(x, xe, DT, win, 8 * (W - 1))
    fwd_compute(out, oe, win, wv, bv, act, W, DT)


def fwd_compute(out: MutSlice[i32], oe: i64, win: MutSlice[f32], wv: Slice[f32], bv: Slice[f32], act: bool,
                W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """The 8 outputs of a window whose last row is loaded, stored at oe; shifts the window."""
    ov = ox.local.array(8, f32)
    for ch in ox.static_range(8):
        acc = bv[ch]
        for k in ox.static_range(W):
            acc += wv[8 * k + ch] * win[8 * k + ch]
        if act:
            acc = silu(acc)
        ov[ch] = acc
    with ox.unsafe():
        if DT == F32:
            out.store4(oe // 4, ox.bits.bitcast(ov[0], i32), ox.bits.bitcast(ov[1], i32),
                       ox.bits.bitcast(ov[2], i32), ox.bits.bitcast(ov[3], i32))
            out.store4(oe // 4 + 1, ox.bits.bitcast(ov[4], i32), ox.bits.bitcast(ov[5], i32),
                       ox.bits.bitcast(ov[6], i32), ox.bits.bitcast(ov[7], i32))
        else:
            out.store4(oe // 8, pack(ov[0], ov[1], DT), pack(ov[2], ov[3], DT), pack(ov[4], ov[5], DT),
                       pack(ov[6], ov[7], DT))
    for s in ox.static_range(W - 1):
        for ch in ox.static_range(8):
            win[8 * s + ch] = win[8 * (s + 1) + ch]


@ox.kernel(bounds_check=False, index32=False, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def fwd_channel_last(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], out: MutSlice[i32],
                     dim_vecs: i32, seqlen: i32, nchunks: i32, total: i32, x_sb: i64, x_sl: i64, o_sb: i64,
                     o_sl: i64, has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """One thread per 8 channels (16 bytes) by POSITIONS_FWD positions, channels with stride 1:
    the thread walks its positions with a window of the last W rows in registers."""
    i = thread.index_1d()
    if i < total:
        t = i32(i)
        cv = t % dim_vecs
        r = t // dim_vecs
        lc = r % nchunks
        b = r // nchunks
        c0 = i64(cv) * 8
        l0 = lc * POSITIONS_FWD
        xb = i64(b) * x_sb + c0
        ob = i64(b) * o_sb + c0
        wv = ox.local.array(32, f32)  # wv[8 * k + ch]
        bv = ox.local.array(8, f32)
        for ch in ox.static_range(8):
            bv[ch] = 0.0
            for k in ox.static_range(W):
                wv[8 * k + ch] = weight[c0 + ch, k]
        if has_bias:
            for ch in ox.static_range(8):
                bv[ch] = bias[c0 + ch]
        win = ox.local.array(32, f32)  # win[8 * s + ch]: row l - (W - 1) + s
        for s in ox.static_range(W - 1):
            p = l0 - (W - 1) + s
            if p >= 0:
                load_row8(x, xb + i64(p) * x_sl, DT, win, 8 * s)
            else:
                for ch in ox.static_range(8):
                    win[8 * s + ch] = 0.0
        if l0 + POSITIONS_FWD <= seqlen:
            # every load of a half-chunk issued before the first use: 8 rows in flight a thread
            for half in ox.static_range(POSITIONS_FWD // 8):
                raw = ox.local.array(64, i32)
                for q in ox.static_range(8):
                    e = xb + i64(l0 + 8 * half + q) * x_sl
                    if DT == F32:
                        a = x.load4(e // 4)
                        z = x.load4(e // 4 + 1)
                        raw[8 * q] = a.x
                        raw[8 * q + 1] = a.y
                        raw[8 * q + 2] = a.z
                        raw[8 * q + 3] = a.w
                        raw[8 * q + 4] = z.x
                        raw[8 * q + 5] = z.y
                        raw[8 * q + 6] = z.z
                        raw[8 * q + 7] = z.w
                    else:
                        h = x.load4(e // 8)
                        raw[8 * q] = h.x
                        raw[8 * q + 1] = h.y
                        raw[8 * q + 2] = h.z
                        raw[8 * q + 3] = h.w
                for r8 in ox.static_range(8):
                    l = i64(l0 + 8 * half + r8)
                    for ch in ox.static_range(8):
                        if DT == F32:
                            win[8 * (W - 1) + ch] = ox.bits.bitcast(raw[8 * r8 + ch], f32)
                        else:
                            win[8 * (W - 1) + ch] = lane(raw[8 * r8 + ch // 2], ch % 2, DT)
                    fwd_compute(out, ob + l * o_sl, win, wv, bv, act, W, DT)
        else:
            for q in ox.static_range(POSITIONS_FWD):
                if l0 + q < seqlen:
                    m = i64(l0 + q)
                    fwd_row(x, xb + m * x_sl, out, ob + m * o_sl, win, wv, bv, act, W, DT)


@ox.kernel(bounds_check=False, index32=False, launch_bounds=256, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def bwd_channel_first(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], dout: Slice[i32], dx: MutSlice[i32],
                      dweight: MutTensor[f32, 2], dbias: MutTensor[f32, 1], batch: i32, nvec: i32,
                      x_sb: i64, x_sc: i64, g_sb: i64, g_sc: i64, d_sb: i64, d_sc: i64,
                      has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """One block per channel, over every batch and position of it (8 positions a thread per
    step), so dweight and dbias are summed in the block in one fixed order: deterministic,
    with no atomics and no second pass. Rows as ``fwd_channel_first``'s."""
    c = block.idx.x
    tid = thread.idx.x
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
    for b in range(batch):
        for v in range(tid, nvec, block.dim.x):
            l0 = i64(v) * 8
            xe = i64(b) * x_sb + i64(c) * x_sc + l0
            ge = i64(b) * g_sb + i64(c) * g_sc + l0
            de = i64(b) * d_sb + i64(c) * d_sc + l0
            xv = ox.local.array(20, f32)   # xv[8 + j]: x at l0 + j, j in -4 … 11
            gv = ox.local.array(12, f32)   # gv[j]: dout (then the gradient of the pre-activation) at l0 + j
            for j in ox.static_range(4):
                xv[4 + j] = 0.0
                xv[16 + j] = 0.0
                gv[8 + j] = 0.0
            load_row8(x, xe, DT, xv, 8)
            load_row8(dout, ge, DT, gv, 0)
            if v > 0:
                load_row4(x, xe - 4, DT, xv, 4)
            if v + 1 < nvec:
                load_row4(dout, ge + 8, DT, gv, 8)
                if act:
                    load_row4(x, xe + 8, DT, xv, 16)
            if act:
                for j in ox.static_range(8 + W - 1):
                    pre = bv
                    for k in ox.static_range(W):
                        pre += wv[k] * xv[8 + j - (W - 1) + k]
                    gv[j] = gv[j] * silu_grad(pre)
            ov = ox.local.array(8, f32)
            for j in ox.static_range(8):
                db += gv[j]
                acc: f32 = 0.0
                for k in ox.static_range(W):
                    acc += wv[k] * gv[j + (W - 1) - k]
                    dw[k] += xv[8 + j - (W - 1) + k] * gv[j]
                ov[j] = acc
            with ox.unsafe():
                if DT == F32:
                    dx.store4(de // 4, ox.bits.bitcast(ov[0], i32), ox.bits.bitcast(ov[1], i32),
                              ox.bits.bitcast(ov[2], i32), ox.bits.bitcast(ov[3], i32))
                    dx.store4(de // 4 + 1, ox.bits.bitcast(ov[4], i32), ox.bits.bitcast(ov[5], i32),
                              ox.bits.bitcast(ov[6], i32), ox.bits.bitcast(ov[7], i32))
                else:
                    dx.store4(de // 8, pack(ov[0], ov[1], DT), pack(ov[2], ov[3], DT), pack(ov[4], ov[5], DT),
                              pack(ov[6], ov[7], DT))
    # the block's sums: each warp's by shuffles, then the warps' in order by thread 0
    red = ox.shared.array(160, f32)  # [warp][W + 1], up to 32 warps
    lane_id = warp.lane()
    wid = warp.id()
    for k in ox.static_range(W):
        s = warp.reduce_sum(dw[k])
        if lane_id == 0:
            red[wid * 5 + k] = s
    sb = warp.reduce_sum(db)
    if lane_id == 0:
        red[wid * 5 + 4] = sb
    block.sync()
    if tid == 0:
        nwarps = (block.dim.x + 31) // 32
        for k in ox.static_range(W):
            total: f32 = 0.0
            for w_ in range(nwarps):
                total += red[w_ * 5 + k]
            with ox.unsafe():
                dweight[c, k] = total
        if has_bias:
            tb: f32 = 0.0
            for w2 in range(nwarps):
                tb += red[w2 * 5 + 4]
            with ox.unsafe():
                dbias[c] = tb


def bwd_step(x: Slice[i32], xe: i64, xin: bool, dout: Slice[i32], ge: i64, gin: bool, dx: MutSlice[i32], de: i64,
             store: bool, own: bool, xw: MutSlice[f32], gw: MutSlice[f32], wv: Slice[f32], bv: Slice[f32],
             dw: MutSlice[f32], db: MutSlice[f32], act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """One position m of the channel-last backward (4 channels): x and dout of row m (zero
    where ``xin``/``gin`` say the row is past the end), the gradient g of the pre-activation at
    m, dweight and dbias from it where m is the thread's own (``own``), and dx of row m - (W - 1)
    from g at m - (W - 1) … m (``store``). Shifts both windows by one row."""
    if xin:
        load_row4(x, xe, DT, xw, 4 * (W - 1))
    else:
        for ch in ox.static_range(4):
            xw[4 * (W - 1) + ch] = 0.0
    if gin:
        load_row4(dout, ge, DT, gw, 4 * (W - 1))
    else:
        for ch in ox.static_range(4):
            gw[4 * (W - 1) + ch] = 0.0
    for ch in ox.static_range(4):
        if act:
            pre = bv[ch]
            for k in ox.static_range(W):
                pre += wv[4 * k + ch] * xw[4 * k + ch]
            gw[4 * (W - 1) + ch] = gw[4 * (W - 1) + ch] * silu_grad(pre)
        if own:
            g = gw[4 * (W - 1) + ch]
            db[ch] += g
            for k in ox.static_range(W):
                dw[4 * k + ch] += xw[4 * k + ch] * g
    if store:
        ov = ox.local.array(4, f32)
        for ch in ox.static_range(4):
            acc: f32 = 0.0
            for k in ox.static_range(W):
                acc += wv[4 * k + ch] * gw[4 * (W - 1 - k) + ch]
            ov[ch] = acc
        with ox.unsafe():
            if DT == F32:
                dx.store4(de // 4, ox.bits.bitcast(ov[0], i32), ox.bits.bitcast(ov[1], i32),
                          ox.bits.bitcast(ov[2], i32), ox.bits.bitcast(ov[3], i32))
            else:
                dx.store2(de // 4, pack(ov[0], ov[1], DT), pack(ov[2], ov[3], DT))
    for s in ox.static_range(W - 1):
        for ch in ox.static_range(4):
            xw[4 * s + ch] = xw[4 * (s + 1) + ch]
            gw[4 * s + ch] = gw[4 * (s + 1) + ch]


@ox.kernel(bounds_check=False, index32=False, launch_bounds=128, constexprs={"W": [2, 3, 4], "DT": [0, 1, 2]})
def bwd_channel_last(x: Slice[i32], weight: Tensor[f32, 2], bias: Tensor[f32, 1], dout: Slice[i32], dx: MutSlice[i32],
                     partials: MutSlice[f32], dim: i32, dim_vecs: i32, seqlen: i32, nchunks: i32,
                     x_sb: i64, x_sl: i64, g_sb: i64, g_sl: i64, d_sb: i64, d_sl: i64,
                     has_bias: bool, act: bool, W: ox.Constexpr[int], DT: ox.Constexpr[int]) -> None:
    """Blocks of CL_BWD_VECS x CL_BWD_ROWS threads: thread (x, y) has 4 channels (8 or 16 bytes)
    and POSITIONS_BWD positions; grid (channel groups, batch * position groups). dx is written
    directly; dweight and dbias are summed over the block's positions in a fixed order into
    ``partials[grid row, channel, k]`` (k = W: the bias), which ``reduce_partials`` sums."""
    cv = block.idx.x * CL_BWD_VECS + thread.idx.x
    ty = thread.idx.y
    groups = (nchunks + CL_BWD_ROWS - 1) // CL_BWD_ROWS
    b = block.idx.y // groups
    lc = (block.idx.y - b * groups) * CL_BWD_ROWS + ty
    c0 = i64(cv) * 4
    live = cv < dim_vecs and lc < nchunks
    wv = ox.local.array(16, f32)  # wv[4 * k + ch]
    bv = ox.local.array(4, f32)
    dw = ox.local.array(16, f32)
    db = ox.local.array(4, f32)
    for ch in ox.static_range(4):
        bv[ch] = 0.0
        db[ch] = 0.0
        for k in ox.static_range(4):
            wv[4 * k + ch] = 0.0
            dw[4 * k + ch] = 0.0
    if live:
        for ch in ox.static_range(4):
            for k in ox.static_range(W):
                wv[4 * k + ch] = weight[c0 + ch, k]
            if has_bias:
                bv[ch] = bias[c0 + ch]
        l0 = lc * POSITIONS_BWD
        xb = i64(b) * x_sb + c0
        gb = i64(b) * g_sb + c0
        db_ = i64(b) * d_sb + c0
        xw = ox.local.array(16, f32)  # xw[4 * s + ch]: x at row m - (W - 1) + s
        gw = ox.local.array(16, f32)  # gw[4 * s + ch]: g at row m - (W - 1) + s
        for s in ox.static_range(W - 1):
            p = l0 - (W - 1) + s
            for ch in ox.static_range(4):
                gw[4 * s + ch] = 0.0
            if p >= 0:
                load_row4(x, xb + i64(p) * x_sl, DT, xw, 4 * s)
            else:
                for ch in ox.static_range(4):
                    xw[4 * s + ch] = 0.0
        if l0 + POSITIONS_BWD + W - 1 <= seqlen:
            for q in ox.static_range(POSITIONS_BWD + W - 1):
                m = i64(l0 + q)
                bwd_step(x, xb + m * x_sl, True, dout, gb + m * g_sl, True, dx, db_ + (m - (W - 1)) * d_sl,
                         q >= W - 1, q < POSITIONS_BWD, xw, gw, wv, bv, dw, db, act, W, DT)
        else:
            for q2 in ox.static_range(POSITIONS_BWD + W - 1):
                m2 = l0 + q2
                inside = m2 < seqlen
                mm = i64(m2)
                bwd_step(x, xb + mm * x_sl, inside, dout, gb + mm * g_sl, inside, dx,
                         db_ + (mm - (W - 1)) * d_sl, q2 >= W - 1 and m2 - (W - 1) < seqlen,
                         q2 < POSITIONS_BWD and inside, xw, gw, wv, bv, dw, db, act, W, DT)
    # the block's sums over its CL_BWD_ROWS position chunks, in order
    red = ox.shared.array((CL_BWD_ROWS, CL_BWD_VECS * 20), f32)
    for ch in ox.static_range(4):
        for k in ox.static_range(4):
            red[ty, thread.idx.x * 20 + 4 * k + ch] = dw[4 * k + ch]
        red[ty, thread.idx.x * 20 + 16 + ch] = db[ch]
    block.sync()
    if ty == 0 and cv < dim_vecs:
        rowp = i64(block.idx.y) * dim * (W + 1)
        for ch in ox.static_range(4):
            for k in ox.static_range(W + 1):
                slot = 4 * k + ch if k < W else 16 + ch
                total: f32 = 0.0
                for y in ox.static_range(CL_BWD_ROWS):
                    total += red[y, thread.idx.x * 20 + slot]
                with ox.unsafe():
                    partials[rowp + (c0 + ch) * (W + 1) + k] = total


@ox.kernel(bounds_check=False, index32=False, constexprs={"W": [2, 3, 4]})
def reduce_partials(partials: Slice[f32], rows: i32, dim: i32, dweight: MutTensor[f32, 2], dbias: MutTensor[f32, 1],
                    has_bias: bool, W: ox.Constexpr[int]) -> None:
    """dweight[c, k] and dbias[c] (k = W): the sum of ``partials[r, c, k]`` over the rows r, in
    order (one thread per (c, k))."""
    i = thread.index_1d()
    if i < i64(dim) * (W + 1):
        total: f32 = 0.0
        stride = i64(dim) * (W + 1)
        for r in range(rows):
            total += partials[i64(r) * stride + i]
        c = i // (W + 1)
        k = i - c * (W + 1)
        with ox.unsafe():
            if k < W:
                dweight[c, k] = total
            elif has_bias:
                dbias[c] = total
