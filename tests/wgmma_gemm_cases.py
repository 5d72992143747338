"""The GEMM cases of tests/test_wgmma_gpu.py for examples/gemm/wgmma_gemm.py (TMA + wgmma), run
in a process of their own (``python tests/wgmma_gemm_cases.py``): a persistent kernel whose
barriers never complete would hang the process, so the test runs this with a timeout and
fails instead of hanging the session. Prints one line per case; exits 1 if any is wrong."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# one tile; odd M with edges in every direction; more tiles than SMs (the persistent loop)
GEMM_SIZES = [(128, 256, 64), (999, 520, 328), (77, 8, 40), (1280, 2304, 1032), (4096, 4096, 512)]


def error_count(out: Any, a: Any, b: Any, rounding: float) -> tuple[int, str]:
    """Elements of ``out`` off A @ B by more than the output's rounding and an f32 accumulation."""
    ref = a.double() @ b.double()
    bound = rounding * ref.abs() + 1e-5 * (a.double().abs() @ b.double().abs()) + 1e-6
    err = (out.double() - ref).abs()
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    if not bool(bad.any()):
        return 0, ""
    first = divmod(int(bad.reshape(-1).nonzero()[0]), out.shape[1])
    return int(bad.sum()), f"first at {first}, max error {err.nan_to_num(1e30).max().item()}"


def main() -> int:
    import torch

    sys.path.insert(0, str(ROOT))
    import oxide
    from examples.gemm.wgmma_gemm import BK, BM, BN, SMEM_BYTES, THREADS, wgmma_gemm

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = [(elem, mnk, sms) for mnk in GEMM_SIZES for elem in ("bf16", "f16")]
    cases.append(("bf16", (1024, 1024, 200), 3))  # 3 blocks walking 32 tiles: the ring carries across tiles
    failed = 0
    for elem, (m, n, k), blocks in cases:
        dt = torch.bfloat16 if elem == "bf16" else torch.float16
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        a[a.abs() < 1e-3] = 0.5  # never zero
        b[b.abs() < 1e-3] = 0.5
        a, b = a.to(dt), b.to(dt)
        c = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
        a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
        b_map = oxide.tma.descriptor(b, box=(BK, 64), swizzle=128)
        c_map = oxide.tma.descriptor(c, box=(64, 64), swizzle=128)  # the epilogue's TMA stores
        tiles = ((m + BM - 1) // BM) * ((n + BN - 1) // BN)
        wgmma_gemm[min(blocks, tiles), THREADS, None, SMEM_BYTES](a_map, b_map, c_map, m, n, k)
        torch.cuda.synchronize()
        wrong, where = error_count(c, a, b, 2.0 ** -8 if elem == "bf16" else 2.0 ** -11)
        failed += wrong > 0
        print(f"{elem} {m}x{n}x{k} on {min(blocks, tiles)} blocks: " + (f"{wrong} of {m * n} wrong, {where}" if wrong else "ok"),
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
