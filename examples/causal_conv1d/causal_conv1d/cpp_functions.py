"""The operators of causal_conv1d, with upstream's names and signatures
(``causal_conv1d_fwd_function``, ``causal_conv1d_bwd_function``,
``causal_conv1d_update_function``): ``oxide.torch`` ops over the kernels of this package.

Upstream's module of this name wraps its C++ extension; here the same functions choose a kernel
by layout: the fast paths of ``vector_kernels`` where every tensor has the strides and 16-byte
alignment they need, the general kernels of ``kernels`` otherwise. The backward is
deterministic in every case (dweight and dbias are summed in a fixed order, never with atomics),
so ``CAUSAL_CONV1D_DETERMINISTIC`` and ``torch.use_deterministic_algorithms`` change nothing.
"""
from __future__ import annotations

import functools
from typing import Optional

import torch

import oxide.torch as oxt
from causal_conv1d import kernels, state_kernels, vector_kernels as vk

__all__ = ["causal_conv1d_fwd_function", "causal_conv1d_bwd_function", "causal_conv1d_update_function",
           "LIBRARY_NAME"]

LIBRARY_NAME = "causal_conv1d_oxide"
_DT = {torch.float32: vk.F32, torch.float16: vk.F16, torch.bfloat16: vk.BF16}
_WORD_ELEMENTS = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 2}  # elements a 32-bit word
_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_I32_MAX = 2**31 - 1
_dummies: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = {}
_FLOAT = torch.float32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=None)
def _sm_count(device: int) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _cf_bwd_plan(nvec: int, batch: int, dim: int, device: int) -> tuple[int, int]:
    """(threads a block, batches a block) of the channel-first backward: 128 threads (a row of
    up to 255 vectors in one chunk of whole warps), and as many batches a block as make about 8
    chunks of work a block, so a block's start and end (the weights, the sums) are paid over
    enough rows, while the grid keeps at least two rounds of the GPU's resident blocks (a
    multiprocessor holds 12 blocks of 128: the kernel keeps to 40 registers)."""
    threads = _cdiv(nvec, 32) * 32 if nvec < 256 else 128
    if device < 0:  # the CPU device: the fewest blocks
        return threads, batch
    bpb = max(1, min(batch, 8 // _cdiv(nvec, threads)))
    slots = _sm_count(device) * (65536 // (vk.CF_BWD_REGISTERS * threads))
    while bpb > 1 and dim * _cdiv(batch, bpb) < 2 * slots:
        bpb //= 2
    return threads, bpb


_arrivals: dict[tuple[int, int], torch.Tensor] = {}


def _arrived(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The channel-first backward's arrival counters (uint32, at least ``dim``) for x's device
    and the current stream: zero between launches (the last block of a channel wraps its
    counter back to 0), so they are zeroed once; one set a stream, since launches on one stream
    do not overlap."""
    key = (x.get_device(), torch.cuda.current_stream(x.device).cuda_stream if x.is_cuda else 0)
    found = _arrivals.get(key)
    if found is None or found.numel() < dim:
        found = _arrivals[key] = torch.zeros(max(dim, 1024), dtype=torch.uint32, device=x.device)
    return found


def _absent(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tensors the vector kernels take for an absent bias and dbias (fp32, 1-D: two tensors,
    since a kernel's read-only and written arguments must not overlap; [2], [3]) on x's device:
    never read nor written (has_bias is False), and the channel-first backward's partial sums when
    a block has a whole channel ([4]). The general and state kernels take None for what is
    absent (optional views)."""
    index = x.get_device()
    found = _dummies.get(index)
    if found is None:
        seq = torch.zeros((1, 1), dtype=torch.int32, device=x.device)
        found = _dummies[index] = (seq, seq[0], torch.zeros((1,), dtype=torch.float32, device=x.device),
                                   torch.zeros((1,), dtype=torch.float32, device=x.device),
                                   torch.zeros((1,), dtype=torch.float32, device=x.device))
    return found


def _no_bias(x: torch.Tensor) -> torch.Tensor:
    return _absent(x)[2]


def _no_dbias(x: torch.Tensor) -> torch.Tensor:
    return _absent(x)[3]


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> int:
    if x.dim() != 3:
        raise ValueError(f"causal_conv1d: x must be (batch, dim, seqlen); got shape {tuple(x.shape)}")
    if x.dtype not in _DT or weight.dtype not in _DT:
        raise TypeError(f"causal_conv1d: x and weight must be float32, float16 or bfloat16; got {x.dtype} and {weight.dtype}")
    width = weight.shape[-1]
    if weight.dim() != 2 or weight.shape[0] != x.shape[1]:
        raise ValueError(f"causal_conv1d: weight must be (dim, width) = ({x.shape[1]}, width); got {tuple(weight.shape)}")
    if not 2 <= width <= 4:
        raise ValueError(f"causal_conv1d only supports width between 2 and 4; got {width}")
    if bias is not None and (bias.shape != (x.shape[1],) or bias.dtype != weight.dtype):
        raise ValueError(f"causal_conv1d: bias must be ({x.shape[1]},) of weight's dtype {weight.dtype}; "
                         f"got {tuple(bias.shape)} {bias.dtype}")
    device = x.get_device()
    if device < 0 or weight.get_device() != device or (bias is not None and bias.get_device() != device):
        raise ValueError("causal_conv1d: x, weight and bias must be on one CUDA device; "
                         f"got {x.device}, {weight.device}{'' if bias is None else f', {bias.device}'}")
    if x.stride(2) != 1 and x.stride(1) != 1:
        raise ValueError("causal_conv1d: x must have stride 1 along the positions (channel-first) or the "
                         f"channels (channel-last); got strides {x.stride()}")
    return int(width)


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype is _FLOAT else t.float()


def _is_channel_last(x: torch.Tensor) -> bool:
    return x.stride(1) == 1 and x.stride(2) > 1


def _words(t: torch.Tensor) -> torch.Tensor:
    """The 32-bit words of the memory ``t`` spans, as a 1-D contiguous int32 tensor (its first
    word at ``t``'s first element): what the vector kernels' ``Slice[i32]`` reads with 16-byte
    loads. Only for tensors ``_vector_ok`` accepted (aligned, an even span)."""
    n0, n1, n2 = t.shape
    s0, s1, s2 = t.stride()
    return t.as_strided((1 + (n0 - 1) * s0 + (n1 - 1) * s1 + (n2 - 1) * s2,), (1,)).view(torch.int32)


def _cl_fwd_steps(columns: int, seqlen: int) -> int:
    """The CL_STEP-position steps a thread of the channel-last forward takes down its column:
    the largest power of two (at most 32) that still leaves about a million threads (columns:
    batch x words), so that long sequences take few, long-lived threads and short ones many."""
    steps = 1
    while steps < 32 and columns * _cdiv(seqlen, vk.CL_STEP * steps * 2) >= 1 << 20:
        steps *= 2
    return steps


def _cl_bwd_split(batch: int, seqlen: int) -> tuple[int, int]:
    """(groups, segs_per) of the channel-last backward: each block row takes ``segs_per`` turns
    of CL_ROWS segments of a batch, ``groups`` block rows a batch; segs_per the smallest power
    of two (at most 16) that keeps the rows of partial sums (batch * groups) at 64 or fewer, so
    that there are many blocks and few partial sums to add."""
    nsegs = _cdiv(seqlen, vk.CL_SEG_BWD)
    segs_per = 1
    while segs_per < 16 and batch * _cdiv(nsegs, vk.CL_ROWS * segs_per) > 64:
        segs_per *= 2
    return _cdiv(nsegs, vk.CL_ROWS * segs_per), segs_per


def _cf_fwd_vectors(rows: int, nvec: int) -> int:
    """The 8-position vectors a thread of the channel-first forward takes (up to
    ``vk.CF_VECS``): the most that still leave half a million threads (rows: batch x dim)."""
    vpt = vk.CF_VECS
    while vpt > 1 and rows * _cdiv(nvec, vpt) < 1 << 19:
        vpt //= 2
    return vpt


def _vector_ok(channel_last: bool, *ts: torch.Tensor) -> bool:
    """Whether the vector kernels take these (batch, dim, seqlen) tensors: stride 1 along the
    vector's axis, the other strides and that axis's length multiples of 8, 16-byte aligned."""
    for t in ts:
        b, c, l = t.stride()
        if channel_last:
            if c != 1 or t.shape[1] % 8 or b % 8 or l % 8 or t.shape[0] * _cdiv(t.shape[2], 32) > 65535:
                return False  # the grid's y: batch x groups of at least 32 positions
        elif l != 1 or t.shape[2] % 8 or b % 8 or c % 8 or t.shape[1] > 65535 or t.shape[0] > 65535:
            return False  # channel-first: the grid's y and z are the channel and the batch
        if t.data_ptr() % 16:
            return False
    return True


@oxt.op(f"{LIBRARY_NAME}::fwd", outputs={"out": oxt.Out(like="x", layout="preserve")}, mutates=["final_states_out"])
def _fwd(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], seq_idx: Optional[torch.Tensor],
         initial_states: Optional[torch.Tensor], final_states_out: Optional[torch.Tensor], silu_activation: bool,
         out: torch.Tensor) -> None:
    width = _check_inputs(x, weight, bias)
    batch, dim, seqlen = x.shape
    if x.numel() == 0:
        return
    w32 = _f32(weight)
    b32 = _f32(bias) if bias is not None else None
    channel_last = _is_channel_last(x)
    dt = _DT[x.dtype]
    # out is x's layout, dense and fresh (16-byte aligned): x's checks cover it
    if seq_idx is None and initial_states is None and _vector_ok(channel_last, x):
        xs, os_ = x.stride(), out.stride()
        bias_arg = b32 if b32 is not None else _no_bias(x)
        if channel_last:
            epw = _WORD_ELEMENTS[x.dtype]
            words = dim // epw
            steps = _cl_fwd_steps(batch * words, seqlen)
            groups = _cdiv(_cdiv(seqlen, vk.CL_STEP * steps), vk.CL_ROWS)
            vk.fwd_channel_last[(_cdiv(words, 32), batch * groups), (32, vk.CL_ROWS)](
                _words(x), w32, bias_arg, _words(out), words, seqlen, groups, steps,
                xs[0] // epw, xs[2] // epw, os_[0] // epw, os_[2] // epw, b32 is not None, silu_activation, width, dt)
        else:
            nvec = seqlen // 8
            threads = 128 if nvec >= 128 else _cdiv(nvec, 32) * 32
            vpt = _cf_fwd_vectors(batch * dim, nvec)
            vk.fwd_channel_first[(_cdiv(nvec, threads * vpt), dim, batch), threads](
                _words(x), w32, bias_arg, _words(out), nvec,
                xs[0], xs[1], os_[0], os_[1], b32 is not None, silu_activation, width, dt)
    else:
        if seq_idx is not None and (seq_idx.dtype != torch.int32 or seq_idx.shape != (batch, seqlen)):
            raise ValueError(f"causal_conv1d: seq_idx must be int32 of shape ({batch}, {seqlen})")
        init = _check_states(initial_states, x, width, "initial_states")
        total = x.numel()
        kernels.fwd_general[_cdiv(total, 256), 256](x, w32, b32, seq_idx, init, out, silu_activation,
                                                     x.stride(1) == 1, width)
    if final_states_out is not None:
        _check_states(final_states_out, x, width, "final_states_out")
        init = initial_states
        n = batch * dim * (width - 1)
        kernels.final_states[_cdiv(n, 256), 256](x, init, final_states_out, width)


def _check_states(states: torch.Tensor | None, x: torch.Tensor, width: int, name: str) -> torch.Tensor | None:
    if states is None:
        return None
    batch, dim = x.shape[:2]
    if states.shape != (batch, dim, width - 1) or states.dtype != x.dtype or states.device != x.device:
        raise ValueError(f"causal_conv1d: {name} must be ({batch}, {dim}, {width - 1}) of {x.dtype} on {x.device}; "
                         f"got {tuple(states.shape)} {states.dtype} on {states.device}")
    return states


def causal_conv1d_fwd_function(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                               seq_idx: torch.Tensor | None, initial_states: torch.Tensor | None,
                               final_states_out: torch.Tensor | None, silu_activation: bool) -> torch.Tensor:
    """out = act(causal depthwise conv1d of x (batch, dim, seqlen) by weight (dim, width) + bias),
    in x's layout; ``final_states_out`` (batch, dim, width - 1), if given, gets the last inputs."""
    return _fwd(x, weight, bias, seq_idx, initial_states, final_states_out, silu_activation)


@oxt.op(f"{LIBRARY_NAME}::bwd", mutates=["dx", "dweight", "dbias", "dinitial_states"])
def _bwd(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], dout: torch.Tensor,
         seq_idx: Optional[torch.Tensor], initial_states: Optional[torch.Tensor],
         dfinal_states: Optional[torch.Tensor], dx: torch.Tensor, dweight: torch.Tensor,
         dbias: Optional[torch.Tensor], dinitial_states: Optional[torch.Tensor], silu_activation: bool) -> None:
    width = _check_inputs(x, weight, bias)
    batch, dim, seqlen = x.shape
    device = x.get_device()
    for name, t in (("dout", dout), ("dx", dx)):
        if t.shape != x.shape or t.dtype is not x.dtype or t.get_device() != device:
            raise ValueError(f"causal_conv1d: {name} must be like x, {tuple(x.shape)} {x.dtype} on {x.device}; "
                             f"got {tuple(t.shape)} {t.dtype} on {t.device}")
    if x.numel() == 0:
        dweight.zero_()
        if dbias is not None:
            dbias.zero_()
        return
    w32 = _f32(weight)
    b32 = _f32(bias) if bias is not None else None
    has_bias = b32 is not None
    bias_arg = b32 if b32 is not None else _no_bias(x)
    dbias_arg = dbias if dbias is not None else _no_dbias(x)
    channel_last = _is_channel_last(x)
    dt = _DT[x.dtype]
    plain = seq_idx is None and initial_states is None and dfinal_states is None
    if plain and _vector_ok(channel_last, x, dout, dx):
        xs, gs, ds = x.stride(), dout.stride(), dx.stride()
        if channel_last:
            epw = _WORD_ELEMENTS[x.dtype]
            words = dim // epw
            groups, segs_per = _cl_bwd_split(batch, seqlen)
            rows = batch * groups
            partials = dweight.new_empty((rows * dim * (width + 1),))
            vk.bwd_channel_last[(_cdiv(words, 32), rows), (32, vk.CL_ROWS)](
                _words(x), w32, bias_arg, _words(dout), _words(dx), partials, dim, words, seqlen, groups, segs_per,
                rows, xs[0] // epw, xs[2] // epw, gs[0] // epw, gs[2] // epw, ds[0] // epw, ds[2] // epw,
                has_bias, silu_activation, width, dt)
            vk.reduce_partials[_cdiv(dim * (width + 1) * 32, 256), 256](partials, rows, dim, dweight, dbias_arg,
                                                                        has_bias, width)
        else:
            nvec = seqlen // 8
            threads, bpb = _cf_bwd_plan(nvec, batch, dim, x.get_device())
            ngroups = _cdiv(batch, bpb)
            partials = dweight.new_empty((dim * (width + 1) * ngroups,)) if ngroups > 1 else _absent(x)[4]
            vk.bwd_channel_first[dim * ngroups, threads](
                _words(x), w32, bias_arg, _words(dout), _words(dx), dweight, dbias_arg, partials, _arrived(x, dim),
                batch, dim, nvec, bpb, xs[0], xs[1], gs[0], gs[1], ds[0], ds[1], has_bias, silu_activation, width, dt)
        return
    if seq_idx is not None and (seq_idx.dtype != torch.int32 or seq_idx.shape != (batch, seqlen)):
        raise ValueError(f"causal_conv1d: seq_idx must be int32 of shape ({batch}, {seqlen})")
    init = _check_states(initial_states, x, width, "initial_states")
    dfin = _check_states(dfinal_states, x, width, "dfinal_states")
    total = x.numel()
    kernels.bwd_general_dx[_cdiv(total, 256), 256](x, w32, b32, seq_idx, init, dout, dfin, dx, silu_activation,
                                                   x.stride(1) == 1, width)
    kernels.bwd_general_dweight[dim, 256](x, w32, b32, seq_idx, init, dout, dweight, dbias if has_bias else None,
                                          silu_activation, width)
    if dinitial_states is not None:
        if init is None:
            raise ValueError("causal_conv1d: dinitial_states needs initial_states")
        _check_states(dinitial_states, x, width, "dinitial_states")
        n = batch * dim * (width - 1)
        kernels.bwd_general_dinit[_cdiv(n, 256), 256](x, w32, b32, init, dout, dfin, dinitial_states,
                                                      silu_activation, width)


def causal_conv1d_bwd_function(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, dout: torch.Tensor,
                               seq_idx: torch.Tensor | None, initial_states: torch.Tensor | None,
                               dfinal_states: torch.Tensor | None, dx: torch.Tensor | None,
                               return_dinitial_states: bool, silu_activation: bool
                               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(dx, dweight, dbias, dinitial_states) of ``causal_conv1d_fwd_function``; deterministic."""
    batch, dim = x.shape[:2]
    width = weight.shape[-1]
    if dx is None:
        dx = torch.empty_like(x)
    # every element is written (fixed-order sums, no float atomics): no zeros needed
    dweight = weight.new_empty(weight.shape) if weight.dtype is _FLOAT else weight.new_empty(weight.shape, dtype=_FLOAT)
    dbias = None
    if bias is not None:
        dbias = bias.new_empty(bias.shape) if bias.dtype is _FLOAT else bias.new_empty(bias.shape, dtype=_FLOAT)
    dinitial_states = None
    if return_dinitial_states:
        dinitial_states = torch.empty(batch, width - 1, dim, device=x.device, dtype=x.dtype).transpose(1, 2)
    if dout.stride(2) != 1 and dout.stride(1) != 1:
        dout = dout.contiguous()
    _bwd(x, weight, bias, dout, seq_idx, initial_states, dfinal_states, dx, dweight, dbias, dinitial_states,
         silu_activation)
    if weight.dtype is not _FLOAT:
        dweight = dweight.to(weight.dtype)
    if dbias is not None and bias is not None and bias.dtype is not _FLOAT:
        dbias = dbias.to(bias.dtype)
    return dx, dweight, dbias, dinitial_states


@oxt.op(f"{LIBRARY_NAME}::update", outputs={"out": oxt.Out(like="x", layout="preserve")}, mutates=["conv_state"])
def _update(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
            silu_activation: bool, cache_seqlens: Optional[torch.Tensor], conv_state_indices: Optional[torch.Tensor],
            out: torch.Tensor) -> None:
    width = _check_inputs(x, weight, bias) if x.stride(2) == 1 or x.stride(1) == 1 else int(weight.shape[-1])
    batch, dim, seqlen = x.shape
    if conv_state.dim() != 3 or conv_state.shape[1] != dim or conv_state.dtype != x.dtype:
        raise ValueError(f"causal_conv1d_update: conv_state must be (batch, {dim}, state_len) of {x.dtype}; "
                         f"got {tuple(conv_state.shape)} {conv_state.dtype}")
    if conv_state.shape[2] < width - 1:
        raise ValueError(f"causal_conv1d_update: state_len {conv_state.shape[2]} < width - 1 = {width - 1}")
    if conv_state_indices is None and conv_state.shape[0] != batch:
        raise ValueError(f"causal_conv1d_update: conv_state has {conv_state.shape[0]} entries for batch {batch}")
    for name, t in (("cache_seqlens", cache_seqlens), ("conv_state_indices", conv_state_indices)):
        if t is not None and (t.dtype != torch.int32 or t.shape != (batch,)):
            raise ValueError(f"causal_conv1d_update: {name} must be int32 of shape ({batch},)")
    if batch * dim == 0 or seqlen == 0:
        return
    w32 = _f32(weight)
    b32 = _f32(bias) if bias is not None else None
    iv = _INT_VIEW[x.dtype]
    n = batch * dim
    state_kernels.update[_cdiv(n, 128), 128](
        x.view(iv), conv_state.view(iv), w32, b32, out.view(iv), cache_seqlens, conv_state_indices,
        silu_activation, x.dtype == torch.bfloat16, width)


def causal_conv1d_update_function(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor,
                                  bias: torch.Tensor | None, silu_activation: bool, cache_seqlens: torch.Tensor | None,
                                  conv_state_indices: torch.Tensor | None) -> torch.Tensor:
    """out (batch, dim, seqlen) for new tokens x given the conv state, which it advances in place."""
    return _update(x, conv_state, weight, bias, silu_activation, cache_seqlens, conv_state_indices)
