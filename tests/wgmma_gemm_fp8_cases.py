"""The GEMM cases of tests/test_wgmma_gpu.py for examples/gemm/wgmma_gemm_fp8.py (TMA + wgmma,
e4m3 in, per-tensor scales, bf16 out), run in a process of their own (``python
tests/wgmma_gemm_fp8_cases.py``): a persistent kernel whose barriers never complete would hang
the process, so the test runs this with a timeout and fails instead of hanging the session.
Prints one line per case; exits 1 if any is wrong.

The bound: the bf16 output's rounding, plus the accumulation's. Hopper's fp8 ``wgmma`` keeps its
running sum with 13 fraction bits, not f32's 23 (SageAttention2, DeepSeek-V3's report; what
``torch._scaled_mm(..., use_fast_accum=True)`` also gives); a model of it that truncates every
K-step of 32 products and the sum to 13 bits stays below 6e-4 · (|A| @ |B|) up to K = 8192, so
the bound allows 2^-9 · (|A| @ |B|). A wrong result is far off it: one K-step of 32 products
missing is ~0.9e-2 · (|A| @ |B|) at K = 1024."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# one tile; odd M with edges in M and N; K of 8 stages; more tiles than SMs (the persistent loop)
FP8_GEMM_SIZES = [(128, 256, 128), (999, 512, 384), (1280, 2304, 1024), (4096, 4096, 512)]
ACCUMULATION = 2.0 ** -9  # relative to |A| @ |B|: the fp8 wgmma's 13-bit accumulation, with margin


def error_count(out: Any, a: Any, bt: Any, scale: float) -> tuple[int, str]:
    """Elements of ``out`` off scale · A @ Btᵀ (in float64) by more than bf16's rounding and the
    fp8 accumulation's error."""
    a64, b64 = a.float().double(), bt.float().double().t()  # float8 -> f32 is exact
    ref = (a64 @ b64) * scale
    bound = 2.0 ** -8 * ref.abs() + ACCUMULATION * scale * (a64.abs() @ b64.abs()) + 1e-6
    err = (out.double() - ref).abs()
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    if not bool(bad.any()):
        return 0, f"max error {float((err / bound).max()):.3f} of the bound"
    first = divmod(int(bad.reshape(-1).nonzero()[0]), out.shape[1])
    return int(bad.sum()), f"first at {first}, max error {err.nan_to_num(1e30).max().item()}"


def e4m3(*shape: int) -> Any:
    """Random normal values in e4m3, none zero."""
    import torch

    x = torch.randn(*shape, device="cuda")
    x[x.abs() < 1e-2] = 0.5
    return x.to(torch.float8_e4m3fn)


def main() -> int:
    import torch

    sys.path.insert(0, str(ROOT))
    import oxide
    from examples.gemm.wgmma_gemm_fp8 import BK, BM, BN, SMEM_BYTES, THREADS, wgmma_gemm_fp8

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = [(mnk, sms) for mnk in FP8_GEMM_SIZES]
    cases.append(((77, 272, 160), sms))  # N and K past a whole tile: TMA's zero fill, the guarded stores
    cases.append(((1024, 1024, 256), 3))  # 3 blocks walking 16 tiles: the ring carries across tiles
    failed = 0
    for (m, n, k), blocks in cases:
        a, bt = e4m3(m, k), e4m3(n, k)  # B K-contiguous: bt is N×K row-major, as torch._scaled_mm takes b = bt.t()
        scale_a = torch.tensor(0.37, device="cuda")
        scale_b = torch.tensor(1.9, device="cuda")
        scale = float(scale_a * scale_b)  # f32, as the kernel multiplies
        c = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
        b_map = oxide.tma.descriptor(bt, box=(BN, BK), swizzle=128)
        tiles = ((m + BM - 1) // BM) * ((n + BN - 1) // BN)
        wgmma_gemm_fp8[min(blocks, tiles), THREADS, None, SMEM_BYTES](a_map, b_map, scale, m, n, k, c.reshape(-1))
        torch.cuda.synchronize()
        wrong, where = error_count(c, a, bt, scale)
        failed += wrong > 0
        print(f"e4m3 {m}x{n}x{k} on {min(blocks, tiles)} blocks: "
              + (f"{wrong} of {m * n} wrong, {where}" if wrong else f"ok ({where})"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
