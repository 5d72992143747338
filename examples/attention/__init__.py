"""Attention examples (issue #18): ``flash_attention`` is the sm_80 tensor-core path
(FlashAttention-2 forward: mma.sync, ldmatrix, cp.async, online softmax in registers);
``wgmma_attention`` the sm_90a one (FlashAttention-3's design: TMA, wgmma with P in registers,
a producer warpgroup and two consumer warpgroups, the softmax overlapped with P V).
``attention_forward`` launches one of them on torch tensors."""
from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["attention_forward", "wgmma_attention_launch", "wgmma_attention_launcher"]

HEAD_DIMS = (64, 128)


def attention_forward(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                      warps: int = 4, kernel: str = "auto", pingpong: bool = True) -> tuple[Any, Any]:
    """``(o, lse)`` for torch tensors q, k, v of shape (batch, heads, seq, D), contiguous, one of
    bf16 / f16, D = 64 or 128: ``o = softmax(q k^T * scale) v`` (keys after the query row
    masked when ``causal``), ``lse`` (batch, heads, seq) float32 the natural log-sum-exp of each
    row's scaled scores. ``scale`` defaults to ``1 / sqrt(D)``.

    ``kernel``: ``"wgmma"`` (examples/attention/wgmma_attention.py, sm_90 GPUs: H100/H200),
    ``"mma"`` (flash_attention.py, sm_80 and newer), ``"auto"`` the first one the GPU runs.
    ``warps`` (4 or 8): the mma kernel's warps per block, 16 query rows each; ``pingpong``: the
    wgmma kernel's consumers take turns issuing their GEMMs."""
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
    if kernel not in ("auto", "wgmma", "mma"):
        raise ValueError(f"kernel must be 'auto', 'wgmma' or 'mma', got {kernel!r}")
    if kernel == "auto":
        kernel = "wgmma" if torch.cuda.get_device_capability(q.device) == (9, 0) else "mma"
    if seq == 0 or batch * heads == 0:
        return torch.empty_like(q), torch.empty((batch, heads, seq), device=q.device, dtype=torch.float32)
    o = torch.empty_like(q)
    lse = torch.empty((batch, heads, seq), device=q.device, dtype=torch.float32)
    scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    if kernel == "wgmma":
        wgmma_attention_launch(q, k, v, o, lse, causal, scale, pingpong)
        return o, lse
    rows = 16 * warps
    flash_attention[((seq + rows - 1) // rows, batch * heads), 32 * warps](
        q.view(-1), k.view(-1), v.view(-1), batch * heads, seq,
        scale, o.view(-1), lse.view(-1), dim, bool(causal), warps)
    return o, lse


def wgmma_attention_launch(q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool, scale: float,
                           pingpong: bool = True) -> None:
    """Launches examples/attention/wgmma_attention.py on contiguous (batch, heads, seq, D)
    tensors q, k, v, o and an f32 (batch, heads, seq) lse: one block per 128 query rows of each
    (batch, head), three 3-d TMA maps over (batch * heads, seq, D)."""
    wgmma_attention_launcher(q, k, v, o, lse, causal, scale, pingpong)()


def wgmma_attention_launcher(q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool, scale: float,
                             pingpong: bool = True) -> Callable[[], None]:
    """``wgmma_attention_launch``'s work done once: the TMA maps and the launch configuration,
    and a function that launches the kernel on them (what a benchmark times)."""
    import oxide

    from .wgmma_attention import BM, THREADS, block_n, smem_bytes, wgmma_attention

    batch, heads, seq, dim = q.shape
    bh = batch * heads
    bn = block_n(dim, causal)
    q_map = oxide.tma.descriptor(q.view(bh, seq, dim), box=(1, BM, 64), swizzle=128)
    k_map = oxide.tma.descriptor(k.view(bh, seq, dim), box=(1, bn, 64), swizzle=128)
    v_map = oxide.tma.descriptor(v.view(bh, seq, dim), box=(1, bn, 64), swizzle=128)
    blocks = (seq + BM - 1) // BM * bh
    launch = wgmma_attention[blocks, THREADS, None, smem_bytes(dim, causal)]
    o_flat, lse_flat = o.view(-1), lse.view(-1)

    def run() -> None:
        launch(q_map, k_map, v_map, bh, seq, scale, o_flat, lse_flat, dim, bool(causal), bool(pingpong))
    return run
