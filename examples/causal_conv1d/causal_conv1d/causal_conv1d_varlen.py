"""``causal_conv1d_varlen_states``: the conv states (the last ``state_len`` inputs) of each of
the variable-length sequences packed into x, as upstream's (a Triton kernel there, an oxide one
here: state_kernels.varlen_states); and upstream's reference ``causal_conv1d_varlen_states_ref``,
unchanged (Copyright (c) 2024, Tri Dao; BSD-3-Clause, LICENSE-causal-conv1d).
"""
from __future__ import annotations

import torch
from torch import Tensor

from causal_conv1d import state_kernels

__all__ = ["causal_conv1d_varlen_states", "causal_conv1d_varlen_states_ref"]

_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def causal_conv1d_varlen_states(x: Tensor, cu_seqlens: Tensor, state_len: int) -> Tensor:
    """
    Forward pass only, does not support backward pass.
    Parameters:
        x: (total_tokens, dim)
        cu_seqlens: (batch + 1), must already be sorted. The cumulative sum of the sequence lengths, starting from 0.
        state_len: int. For each cu_seqlens, how many elements from x should be copied to the state.
            If some of those elements belong to a different sequence, the value of the states will be zero.
    Return:
        states: (batch, dim, state_len)
    """
    if x.dim() != 2 or x.dtype not in _INT_VIEW:
        raise ValueError(f"causal_conv1d_varlen_states: x must be (total_tokens, dim) of float32, float16 or "
                         f"bfloat16; got {tuple(x.shape)} {x.dtype}")
    _, dim = x.shape
    batch = cu_seqlens.shape[0] - 1
    cu = cu_seqlens.to(torch.int64).contiguous()
    states = torch.empty(batch, state_len, dim, dtype=x.dtype, device=x.device).transpose(1, 2)
    n = batch * dim * state_len
    if n:
        iv = _INT_VIEW[x.dtype]
        state_kernels.varlen_states[-(-n // 256), 256](x.view(iv), cu, states.view(iv))
    return states


# Upstream's reference, unchanged. Copyright (c) 2024, Tri Dao. BSD-3-Clause (LICENSE-causal-conv1d).
def causal_conv1d_varlen_states_ref(x: Tensor, cu_seqlens: Tensor, state_len: int) -> Tensor:
    """
    Forward pass only, does not support backward pass.
    Parameters:
        x: (total_tokens, dim)
        cu_seqlens: (batch + 1), must already be sorted. The cumulative sum of the sequence lengths, starting from 0.
        state_len: int. For each cu_seqlens, how many elements from x should be copied to the state.
            If some of those elements belong to a different sequence, the value of the states will be zero.
    Return:
        states: (batch, dim, state_len)
    """
    _, dim = x.shape
    batch = cu_seqlens.shape[0] - 1
    cu_seqlens = cu_seqlens.contiguous()
    states = torch.zeros(batch, state_len, dim, dtype=x.dtype, device=x.device).transpose(1, 2)
    for i in range(batch):
        end_idx = cu_seqlens[i + 1]
        start_idx = torch.maximum(cu_seqlens[i], end_idx - state_len)
        states[i, :, -(end_idx - start_idx):] = x[start_idx:end_idx].T
    return states
