"""The general causal conv1d kernels: any layout and strides, any sequence length, with
``seq_idx`` (sub-sequences packed into one row; -1 marks padding), ``initial_states`` and the
final states. One thread per output element; what ``vector_kernels.py`` does not take comes
here. Tensors keep their own dtype (``T``); weight and bias arrive as fp32. The width ``W`` is a
run-time value here (one instance per dtype, not per width: these are the fallback, and the
build stays short). What upstream takes as optional (bias, seq_idx, the initial and final
states) are optional views, None where absent; each thread writes its own element of a
DisjointTensor at the digits of its split index (docs/language.md, "Split indices").

``x(b, c, p)`` for a position p < 0 is the initial state ``init[b, c, W - 1 + p]`` (zero
without one), and ``seq(b, p)`` is -1 there, as upstream reads them.
"""
from __future__ import annotations

from typing import Optional

import oxide as ox
from oxide import DisjointTensor, MutTensor, Tensor, block, bf16, f16, f32, i32, i64, thread, warp

__all__ = ["fwd_general", "final_states", "bwd_general_dx", "bwd_general_dweight", "bwd_general_dinit"]

T = ox.TypeVar("T", f32, f16, bf16)


def x_at(x: Tensor[T, 3], init: Optional[Tensor[T, 3]], b: i64, c: i64, p: i64, W: i32) -> f32:
    if p >= 0:
        return f32(x[b, c, p])
    if init is not None:
        return f32(init[b, c, W - 1 + p])
    return 0.0


def seq_at(seq: Tensor[i32, 2], b: i64, p: i64) -> i32:
    if p >= 0:
        return seq[b, p]
    return -1


def silu(v: f32) -> f32:
    # upstream builds with --use_fast_math: __expf and __fdividef, as here (a few ulp; without
    # them the exp and the IEEE division make the forward compute-bound)
    return ox.math.fast_div(v, 1.0 + ox.math.fast_exp(-v))


def silu_grad(pre: f32) -> f32:
    s = ox.math.fast_div(1.0, 1.0 + ox.math.fast_exp(-pre))
    return s * (1.0 + pre * (1.0 - s))


def pre_at(x: Tensor[T, 3], init: Optional[Tensor[T, 3]], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]],
           seq: Optional[Tensor[i32, 2]], s_cur: i32, b: i64, c: i64, m: i64, W: i32) -> f32:
    """The pre-activation at position m (before SiLU)."""
    acc: f32 = 0.0
    if bias is not None:
        acc = bias[c]
    for k in range(W):
        p = m - (W - 1) + k
        if seq is None or seq_at(seq, b, p) == s_cur:
            acc += weight[c, k] * x_at(x, init, b, c, p, W)
    return acc


def grad_at(x: Tensor[T, 3], init: Optional[Tensor[T, 3]], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]],
            seq: Optional[Tensor[i32, 2]], dout: Tensor[T, 3], act: bool, b: i64, c: i64, m: i64, W: i32) -> f32:
    """The gradient of the pre-activation at position m (0 at padding, m < seqlen)."""
    s_cur: i32 = 0
    if seq is not None:
        s_cur = seq_at(seq, b, m)
        if s_cur < 0:
            return 0.0
    g = f32(dout[b, c, m])
    if act:
        g = g * silu_grad(pre_at(x, init, weight, bias, seq, s_cur, b, c, m, W))
    return g


@ox.kernel
def fwd_general(x: Tensor[T, 3], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]], seq: Optional[Tensor[i32, 2]],
                init: Optional[Tensor[T, 3]], out: DisjointTensor[T, 3], act: bool, channel_fastest: bool,
                W: i32) -> None:
    """out[b, c, l]; threads run along the channels (``channel_fastest``) or the positions, the
    axis of stride 1, so a warp's accesses are coalesced."""
    assert out.shape[0] == x.shape[0] and out.shape[1] == x.shape[1] and out.shape[2] == x.shape[2]
    i = thread.index_1d()
    batch = x.shape[0]
    dim = x.shape[1]
    seqlen = x.shape[2]
    if i < batch * dim * seqlen:
        # i's digits: the channel fastest or the position (a DisjointTensor split: docs/language.md)
        inner = dim if channel_fastest else seqlen
        outer = seqlen if channel_fastest else dim
        d0 = i % inner
        r = i // inner
        d1 = r % outer
        b = r // outer
        c = d0 if channel_fastest else d1
        l = d1 if channel_fastest else d0
        s_cur: i32 = 0
        if seq is not None:
            s_cur = seq_at(seq, b, l)
        acc: f32 = 0.0
        if s_cur >= 0:
            acc = pre_at(x, init, weight, bias, seq, s_cur, b, c, l, W)
            if act:
                acc = silu(acc)
        out[b, c, l] = T(acc)


@ox.kernel
def final_states(x: Tensor[T, 3], init: Optional[Tensor[T, 3]], final: DisjointTensor[T, 3], W: i32) -> None:
    """final[b, c, k] = x(b, c, seqlen - (W - 1) + k): the last W - 1 inputs, initial states
    included where the sequence is shorter."""
    i = thread.index_1d()
    batch = x.shape[0]
    dim = x.shape[1]
    if i < batch * dim * (W - 1):
        c = i % dim
        r = i // dim
        k = r % (W - 1)
        b = r // (W - 1)
        p = x.shape[2] - (W - 1) + k
        final[b, c, k] = T(x_at(x, init, b, c, p, W))


@ox.kernel
def bwd_general_dx(x: Tensor[T, 3], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]],
                   seq: Optional[Tensor[i32, 2]], init: Optional[Tensor[T, 3]], dout: Tensor[T, 3],
                   dfinal: Optional[Tensor[T, 3]], dx: DisjointTensor[T, 3], act: bool, channel_fastest: bool,
                   W: i32) -> None:
    """dx[b, c, l] = sum_k weight[c, k] g(l + W - 1 - k) over the positions of l's sequence,
    plus dfinal where l is one of the last W - 1 positions."""
    i = thread.index_1d()
    batch = x.shape[0]
    dim = x.shape[1]
    seqlen = x.shape[2]
    if i < batch * dim * seqlen:
        # i's digits: the channel fastest or the position (a DisjointTensor split: docs/language.md)
        inner = dim if channel_fastest else seqlen
        outer = seqlen if channel_fastest else dim
        d0 = i % inner
        r = i // inner
        d1 = r % outer
        b = r // outer
        c = d0 if channel_fastest else d1
        l = d1 if channel_fastest else d0
        s_l: i32 = 0
        if seq is not None:
            s_l = seq_at(seq, b, l)
        acc: f32 = 0.0
        for k in range(W):
            m = l + (W - 1) - k
            if m < seqlen:
                if seq is None or seq_at(seq, b, m) == s_l:
                    acc += weight[c, k] * grad_at(x, init, weight, bias, seq, dout, act, b, c, m, W)
        if dfinal is not None:
            j = l - (seqlen - (W - 1))
            if j >= 0:
                acc += f32(dfinal[b, c, j])
        dx[b, c, l] = T(acc)


@ox.kernel
def bwd_general_dinit(x: Tensor[T, 3], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]], init: Tensor[T, 3],
                      dout: Tensor[T, 3], dfinal: Optional[Tensor[T, 3]], dinit: DisjointTensor[T, 3], act: bool,
                      W: i32) -> None:
    """dinit[b, c, j]: the gradient of initial state j (position p = j - (W - 1) < 0); no
    seq_idx, which upstream does not take with initial states."""
    i = thread.index_1d()
    batch = x.shape[0]
    dim = x.shape[1]
    seqlen = x.shape[2]
    if i < batch * dim * (W - 1):
        c = i % dim
        r = i // dim
        j = r % (W - 1)
        b = r // (W - 1)
        p = j - (W - 1)
        acc: f32 = 0.0
        for k in range(W):
            m = p + (W - 1) - k
            if m >= 0 and m < seqlen:
                acc += weight[c, k] * grad_at(x, init, weight, bias, None, dout, act, b, c, m, W)
        if dfinal is not None:
            jj = p - (seqlen - (W - 1))
            if jj >= 0:
                acc += f32(dfinal[b, c, jj])
        dinit[b, c, j] = T(acc)


@ox.kernel
def bwd_general_dweight(x: Tensor[T, 3], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]],
                        seq: Optional[Tensor[i32, 2]], init: Optional[Tensor[T, 3]], dout: Tensor[T, 3],
                        dweight: MutTensor[f32, 2], dbias: Optional[MutTensor[f32, 1]], act: bool, W: i32) -> None:
    """One block per channel: dweight[c, k] = sum over (b, m) of g(m) x(m - (W - 1) + k) (same
    sequence), dbias[c] = sum g(m) (where dbias is given); summed in one fixed order
    (deterministic). Thread 0 of the block writes them: a MutTensor."""
    assert block.dim.x <= 1024
    c = i64(block.idx.x)
    batch = x.shape[0]
    seqlen = x.shape[2]
    dw = ox.local.array(4, f32)
    for k0 in ox.static_range(4):
        dw[k0] = 0.0
    db: f32 = 0.0
    steps = batch * seqlen
    for u in range(i64(thread.idx.x), steps, i64(block.dim.x)):
        b = u // seqlen
        m = u - b * seqlen
        g = grad_at(x, init, weight, bias, seq, dout, act, b, c, m, W)
        s_m: i32 = 0
        if seq is not None:
            s_m = seq_at(seq, b, m)
        db += g
        for k in range(W):
            p = m - (W - 1) + k
            if seq is None or seq_at(seq, b, p) == s_m:
                dw[k] += g * x_at(x, init, b, c, p, W)
    red = ox.shared.array(160, f32)
    lane_id = warp.lane()
    wid = warp.id()
    for k in range(W):
        s = warp.reduce_sum(dw[k])
        if lane_id == 0:
            red[wid * 5 + k] = s
    sb = warp.reduce_sum(db)
    if lane_id == 0:
        red[wid * 5 + 4] = sb
    block.sync()
    if thread.idx.x == 0:
        nwarps = (block.dim.x + 31) // 32
        for k in range(W):
            total: f32 = 0.0
            for w_ in range(nwarps):
                total += red[w_ * 5 + k]
            with ox.unsafe():
                dweight[c, k] = total
        if dbias is not None:
            tb: f32 = 0.0
            for w2 in range(nwarps):
                tb += red[w2 * 5 + 4]
            with ox.unsafe():
                dbias[c] = tb
