"""Attention examples (issue #18): ``flash_attention`` is the sm_80 tensor-core path
(FlashAttention-2 forward: mma.sync, ldmatrix, cp.async, online softmax in registers).
``attention_forward`` launches it on torch tensors."""
from __future__ import annotations

import math
from typing import Any

__all__ = ["attention_forward"]

HEAD_DIMS = (64, 128)


def attention_forward(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                      warps: int = 4) -> tuple[Any, Any]:
    """``(o, lse)`` for torch tensors q, k, v of shape (batch, heads, seq, D), contiguous, one of
    bf16 / f16, D = 64 or 128: ``o = softmax(q k^T * scale) v`` (keys after the query row
    masked when ``causal``), ``lse`` (batch, heads, seq) float32 the natural log-sum-exp of each
    row's scaled scores. ``scale`` defaults to ``1 / sqrt(D)``; ``warps`` (4 or 8) is the
    block's warps, 16 query rows each."""
    import torch

    from .flash_attention import flash_attention

    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must have one shape (batch, heads, seq, D); got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    batch, heads, seq, dim = q.shape
    if dim not in HEAD_DIMS:
        raise ValueError(f"head dim {dim} is not supported; the kernel is built for {HEAD_DIMS}")
    if q.dtype not in (torch.bfloat16, torch.float16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k and v must all be bfloat16 or all float16; got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("q, k and v must be contiguous (call .contiguous())")
    if warps not in (4, 8):
        raise ValueError(f"warps must be 4 or 8, got {warps}")
    if seq == 0 or batch * heads == 0:
        return torch.empty_like(q), torch.empty((batch, heads, seq), device=q.device, dtype=torch.float32)
    o = torch.empty_like(q)
    lse = torch.empty((batch, heads, seq), device=q.device, dtype=torch.float32)
    rows = 16 * warps
    flash_attention[((seq + rows - 1) // rows, batch * heads), 32 * warps](
        q.view(-1), k.view(-1), v.view(-1), batch * heads, seq,
        1.0 / math.sqrt(dim) if scale is None else float(scale), o.view(-1), lse.view(-1), dim, bool(causal), warps)
    return o, lse
