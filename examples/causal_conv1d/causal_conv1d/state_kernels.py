"""The decoding-side kernels: the conv-state update (one new token or a few per sequence, with a
circular state buffer through ``cache_seqlens`` and a gathered batch through
``conv_state_indices``), and the states of packed variable-length sequences.

This module links CUDA C++ (csrc/halves.cu, through ``@ox.extern``): its kernels see fp16 and
bf16 tensors as their 16-bit patterns (``S`` = i16; fp32 tensors as i32) and convert with
cuda_fp16.h / cuda_bf16.h's functions. Copies (the state's shift) move the bits unchanged.
"""
from __future__ import annotations

from typing import Optional

import oxide as ox
from oxide import DisjointTensor, MutTensor, Tensor, f32, i16, i32, i64, thread

__all__ = ["update", "varlen_states"]

S = ox.TypeVar("S", i16, i32)
HALVES = ["csrc/halves.cu"]


@ox.extern("causal_conv1d_f16_bits_to_float", sources=HALVES)
def f16_bits_to_float(bits: i16) -> f32: ...


@ox.extern("causal_conv1d_bf16_bits_to_float", sources=HALVES)
def bf16_bits_to_float(bits: i16) -> f32: ...


@ox.extern("causal_conv1d_float_to_f16_bits", sources=HALVES)
def float_to_f16_bits(v: f32) -> i16: ...


@ox.extern("causal_conv1d_float_to_bf16_bits", sources=HALVES)
def float_to_bf16_bits(v: f32) -> i16: ...


def to_float(v: S, is_bf16: bool) -> f32:
    if S is i32:
        return ox.bits.bitcast(v, f32)
    else:
        if is_bf16:
            return bf16_bits_to_float(v)
        return f16_bits_to_float(v)


def from_float(v: f32, is_bf16: bool, like: S) -> S:
    if S is i32:
        return ox.bits.bitcast(v, i32)
    else:
        if is_bf16:
            return float_to_bf16_bits(v)
        return float_to_f16_bits(v)


@ox.kernel(constexprs={"W": [2, 3, 4]})
def update(x: Tensor[S, 3], state: MutTensor[S, 3], weight: Tensor[f32, 2], bias: Optional[Tensor[f32, 1]],
           out: MutTensor[S, 3], cache_seqlens: Optional[Tensor[i32, 1]], indices: Optional[Tensor[i32, 1]],
           act: bool, is_bf16: bool, W: ox.Constexpr[int]) -> None:
    """One thread per (batch, channel): out[b, c, :] from the last W - 1 state entries and the
    new inputs, then the state advanced by them (shifted left, or written circularly at
    ``cache_seqlens[b] % state_len``). A batch entry whose index is negative is padding: its
    outputs are zero and no state is touched. bias, cache_seqlens and the state indices
    (conv_state_indices) may be None. A thread writes a row of out (a MutTensor: a loop's
    positions) and a row of the state it gathers (which another entry's index may name too)."""
    i = thread.index_1d()
    batch = x.shape[0]
    dim = x.shape[1]
    seqlen = x.shape[2]
    state_len = state.shape[2]
    if i < batch * dim:
        c = i % dim
        b = i // dim
        sb = b
        if indices is not None:
            sb = i64(indices[b])
        if sb < 0:
            with ox.unsafe():
                for l0 in range(seqlen):
                    out[b, c, l0] = 0
            return
        cs: i64 = 0
        has_cache = cache_seqlens is not None
        if cache_seqlens is not None:
            cs = i64(cache_seqlens[b])
        win = ox.local.array(4, f32)
        for k in ox.static_range(W - 1):
            idx = state_len - (W - 1) + k
            if has_cache:
                idx = (cs - (W - 1) + k) % state_len
            win[k] = to_float(state[sb, c, idx], is_bf16)
        wv = ox.local.array(4, f32)
        for k2 in ox.static_range(W):
            wv[k2] = weight[c, k2]
        bv: f32 = 0.0
        if bias is not None:
            bv = bias[c]
        for l in range(seqlen):
            xl = to_float(x[b, c, l], is_bf16)
            acc = bv + wv[W - 1] * xl
            for k3 in ox.static_range(W - 1):
                acc += wv[k3] * win[k3]
            if act:
                acc = ox.math.fast_div(acc, 1.0 + ox.math.fast_exp(-acc))
            with ox.unsafe():
                out[b, c, l] = from_float(acc, is_bf16, x[b, c, l])
            for k4 in ox.static_range(W - 2):
                win[k4] = win[k4 + 1]
            win[W - 2] = xl
        with ox.unsafe():
            if has_cache:
                for l2 in range(seqlen):
                    state[sb, c, (cs + l2) % state_len] = x[b, c, l2]
            else:
                for j in range(state_len):
                    if j + seqlen < state_len:
                        state[sb, c, j] = state[sb, c, j + seqlen]
                    else:
                        state[sb, c, j] = x[b, c, j + seqlen - state_len]


@ox.kernel
def varlen_states(x: Tensor[S, 2], cu_seqlens: Tensor[i64, 1], states: DisjointTensor[S, 3]) -> None:
    """states[b, c, j] = x[end - state_len + j, c] where that token belongs to sequence b
    (cu_seqlens[b] <= token < cu_seqlens[b + 1] = end), else 0. One thread per element, the
    channel fastest (stride 1 in both)."""
    i = thread.index_1d()
    batch = states.shape[0]
    dim = states.shape[1]
    state_len = states.shape[2]
    if i < batch * dim * state_len:
        c = i % dim
        r = i // dim
        j = r % state_len
        b = r // state_len
        end = cu_seqlens[b + 1]
        start = cu_seqlens[b]
        token = end - state_len + j
        if token >= start and token >= 0:  # each thread its own element: the digits of i
            states[b, c, j] = x[token, c]
        else:
            states[b, c, j] = 0
