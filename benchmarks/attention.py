"""Attention forward (issue #18): oxide's FlashAttention-3-style kernel on the sm_90a path
(examples/attention/wgmma_attention.py: TMA, wgmma, warp specialization; with and without its
consumers' pingpong; on sm_90 GPUs) and its FlashAttention-2-style kernel on the sm_80 tensor-core
path (examples/attention/flash_attention.py) against PyTorch's scaled_dot_product_attention
with its flash backend and its cuDNN backend, and a compact Triton flash-attention forward
written here (the FlashAttention-2 algorithm in Triton, ours, not the tutorial's code). bf16,
batch 8, 16 heads, sequence 4096, head dim 64 and 128, causal and not. Needs a GPU, PyTorch and
Triton.

    python benchmarks/attention.py --out results/ [--reps 25]

Every implementation is checked first against float32 math on one (batch, head) and 256 query
rows (every element within a bf16 bound). The timed runs go round-robin (benchmarks.timing:
CUDA events, warm-up, a GPU sleep before each run so host time stays out) and the median of
``--reps`` runs is reported as TFLOP/s: 4·b·h·s²·d, halved for causal.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BATCH, HEADS, SEQ = 8, 16, 4096
HEAD_DIMS = (64, 128)


def triton_attention() -> Callable[[Any, Any, Any, bool], Any] | None:
    """A FlashAttention-2 forward in Triton (tiles autotuned over a few configurations), or None
    without Triton."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [triton.Config({"BM": bm, "BN": bn}, num_stages=s, num_warps=w)
               for bm, bn, s, w in [(128, 64, 3, 4), (128, 128, 3, 8), (128, 64, 4, 8), (64, 64, 3, 4)]]

    @triton.jit
    def tile(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, offs_n, offs_d, start, stop, seq, qk_scale,
             D: tl.constexpr, BN: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr):
        for n0 in range(start, stop, BN):
            cols = n0 + offs_n
            k = tl.load(k_ptr + cols[None, :] * D + offs_d[:, None], mask=cols[None, :] < seq, other=0.0)
            qk = tl.dot(q, k) * qk_scale
            if MASK:
                keep = cols[None, :] < seq
                if CAUSAL:
                    keep = keep & (cols[None, :] <= offs_m[:, None])
                qk = tl.where(keep, qk, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(v_ptr + cols[:, None] * D + offs_d[None, :], mask=cols[:, None] < seq, other=0.0)
            acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
            m_i = m_new
        return acc, l_i, m_i

    @triton.autotune(configs=configs, key=["seq", "D", "CAUSAL"])
    @triton.jit
    def kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, D: tl.constexpr, CAUSAL: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr):
        pid_m = tl.program_id(0)
        head = tl.program_id(1).to(tl.int64) * seq * D
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_n = tl.arange(0, BN)
        offs_d = tl.arange(0, D)
        q = tl.load(q_ptr + head + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
        acc = tl.zeros([BM, D], dtype=tl.float32)
        l_i = tl.zeros([BM], dtype=tl.float32)
        m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
        qk_scale = scale * 1.4426950408889634
        stop = tl.minimum(seq, (pid_m + 1) * BM) if CAUSAL else seq
        full = (pid_m * BM // BN) * BN if CAUSAL else (seq // BN) * BN  # tiles no row masks
        full = tl.minimum(full, stop)
        acc, l_i, m_i = tile(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, offs_m, offs_n, offs_d, 0, full, seq,
                             qk_scale, D, BN, False, CAUSAL)
        acc, l_i, m_i = tile(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, offs_m, offs_n, offs_d, full, stop, seq,
                             qk_scale, D, BN, True, CAUSAL)
        acc = acc / l_i[:, None]
        tl.store(o_ptr + head + offs_m[:, None] * D + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
                 mask=offs_m[:, None] < seq)

    def attention(q: Any, k: Any, v: Any, causal: bool) -> Any:
        b, h, s, d = q.shape
        out = torch.empty_like(q)
        kernel[lambda meta: (triton.cdiv(s, meta["BM"]), b * h)](q, k, v, out, s, 1.0 / math.sqrt(d), D=d,
                                                                  CAUSAL=causal)
        return out

    return attention


def sdpa(torch: Any, backend: Any) -> Callable[[Any, Any, Any, bool], Any]:
    from torch.nn.attention import sdpa_kernel

    def attention(q: Any, k: Any, v: Any, causal: bool) -> Any:
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return attention


def check(torch: Any, name: str, out: Any, q: Any, k: Any, v: Any, causal: bool) -> float:
    """The largest error on (batch 0, head 0) and 256 query rows against float32 math, relative to
    the bound ulp·(|o| + P|V|) (ulp = 2^-8: P's and the output's bf16 rounding)."""
    rows = torch.randperm(q.shape[2], device=q.device)[:256]
    qs, ks, vs = q[0, 0, rows].float(), k[0, 0].float(), v[0, 0].float()
    scores = (qs @ ks.T) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(torch.arange(q.shape[2], device=q.device)[None, :] > rows[:, None], float("-inf"))
    p = torch.softmax(scores, dim=-1)
    ref, spread = p @ vs, p @ vs.abs()
    err = (out[0, 0, rows].float() - ref).abs() / (2.0 ** -8 * (ref.abs() + spread) + 1e-6)
    worst = float(err.max())
    if not worst <= 1.0:
        raise SystemExit(f"{name} d={q.shape[-1]} causal={causal}: wrong result (error {worst:.2f} bounds)")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=25)
    parser.add_argument("--seq", type=int, default=SEQ)
    parser.add_argument("--only", default="", help="comma-separated parts of contender names to time (default: all)")
    args = parser.parse_args()
    import torch
    from torch.nn.attention import SDPBackend

    from benchmarks.timing import GpuTimer
    from examples.attention.flash_attention import flash_attention

    tri = triton_attention()
    timer = GpuTimer(torch, warmup=3)
    props = torch.cuda.get_device_properties(0)
    meta: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": props.name,
                            "torch": torch.__version__, "cuda": torch.version.cuda, "reps": args.reps,
                            "batch": BATCH, "heads": HEADS, "seq": args.seq,
                            "cudnn": torch.backends.cudnn.version()}
    try:
        import triton

        meta["triton"] = triton.__version__
    except ImportError:
        pass
    results: list[dict[str, Any]] = []
    seq = args.seq
    for dim in HEAD_DIMS:
        for causal in (False, True):
            q, k, v = (torch.randn(BATCH, HEADS, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            o = torch.empty_like(q)
            lse = torch.empty((BATCH, HEADS, seq), device="cuda", dtype=torch.float32)
            scale = 1.0 / math.sqrt(dim)

            def oxide_run(warps: int) -> Callable[[], Any]:
                def run() -> Any:
                    flash_attention[((seq + 16 * warps - 1) // (16 * warps), BATCH * HEADS), 32 * warps](
                        q.view(-1), k.view(-1), v.view(-1), BATCH * HEADS, seq, scale, o.view(-1), lse.view(-1),
                        dim, causal, warps)
                    return o
                return run

            def wgmma_run(pingpong: bool) -> Callable[[], Any]:
                from examples.attention import wgmma_attention_launcher

                launch = wgmma_attention_launcher(q, k, v, o, lse, causal, scale, pingpong)

                def run() -> Any:
                    launch()
                    return o
                return run

            impls: dict[str, Callable[[], Any]] = {}
            if torch.cuda.get_device_capability(0) == (9, 0):  # wgmma needs sm_90a
                impls["oxide wgmma"] = wgmma_run(False)
                impls["oxide wgmma pingpong"] = wgmma_run(True)
            impls |= {
                "oxide (4 warps)": oxide_run(4),
                "oxide (8 warps)": oxide_run(8),
                "SDPA flash": lambda: sdpa(torch, SDPBackend.FLASH_ATTENTION)(q, k, v, causal),
                "SDPA cuDNN": lambda: sdpa(torch, SDPBackend.CUDNN_ATTENTION)(q, k, v, causal),
            }
            if tri is not None:
                impls["Triton (ours)"] = lambda: tri(q, k, v, causal)
            if args.only:
                impls = {n: f for n, f in impls.items() if any(part in n for part in args.only.split(","))}
            errors: dict[str, float] = {}
            for name in list(impls):
                try:
                    errors[name] = check(torch, name, impls[name](), q, k, v, causal)
                except Exception as exc:  # noqa: BLE001 - a backend this torch lacks is reported, not fatal
                    if isinstance(exc, SystemExit):
                        raise
                    print(f"{name}: unavailable ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})", flush=True)
                    del impls[name]
            stats = timer.time_round_robin(impls, args.reps)
            flops = 4.0 * BATCH * HEADS * seq * seq * dim / (2.0 if causal else 1.0)
            sdpa_best = min((stats[n].median_ms for n in ("SDPA flash", "SDPA cuDNN") if n in stats), default=float("nan"))
            triton_ms = stats["Triton (ours)"].median_ms if "Triton (ours)" in stats else float("nan")
            for name, st in stats.items():
                row = {"head_dim": dim, "causal": causal, "impl": name, "median_ms": round(st.median_ms, 4),
                       "min_ms": round(st.min_ms, 4), "spread_pct": round(st.spread_pct, 2),
                       "tflops": round(flops / st.median_ms / 1e9, 1),
                       "vs_best_sdpa": round(sdpa_best / st.median_ms, 3),
                       "vs_triton": round(triton_ms / st.median_ms, 3), "max_error_bound": round(errors[name], 3)}
                results.append(row)
                print(f"d={dim:<4} {'causal' if causal else 'full':<7} {name:<18} {row['median_ms']:8.3f} ms "
                      f"{row['tflops']:7.1f} TFLOP/s {row['vs_best_sdpa']:6.3f}x best SDPA "
                      f"{row['vs_triton']:6.3f}x Triton (err {row['max_error_bound']:.2f})", flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "attention.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
