"""The GEMM cases of tests/test_wgmma_gpu.py for examples/gemm/wgmma_gemm_tf32.py (TMA + wgmma in
TF32: f32 in, read as tf32, f32 out, C = A @ Btᵀ), run in a process of their own (``python
tests/wgmma_gemm_tf32_cases.py``): a persistent kernel whose barriers never complete would hang
the process, so the test runs this with a timeout and fails instead of hanging the session.
Prints one line per case; exits 1 if any is wrong.

Inputs are fresh random normal values (none zero), the output is poisoned with NaN before every
launch, every element is checked against A @ Btᵀ in float64. The bound: tf32 keeps 10 fraction
bits of each input (the tensor cores drop the other 13, or round them), so each product is off by
less than 2^-9 of |a|·|b|; the f32 sum adds at most K·2^-24 of |A| @ |B| (a loose worst case), so
each element must be within (2^-9 + K·2^-24) · (|A| @ |B|)ᵢⱼ. And as a whole the error is far
smaller: its RMS must stay below 2^-8 of the RMS of the result (about 2^-11 is typical). A wrong
result is far off both: one K step of 8 products missing at K = 1024 is ~9% of the RMS."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# one tile and one stage; odd M with edges in M, N and K (K = 328: a stage past the edge, TMA's
# zero fill); N = 8; more tiles than SMs (the persistent loop); the benchmark's 4096³
TF32_GEMM_SIZES = [(128, 256, 32), (999, 520, 328), (77, 8, 40), (1280, 2304, 1032), (4096, 4096, 512),
                   (4096, 4096, 4096)]
PRODUCT = 2.0 ** -9  # of |a|·|b|: each input truncated (or rounded) to tf32's 10 fraction bits
RMS = 2.0 ** -8  # of the result's RMS


def error_count(out: Any, a: Any, bt: Any) -> tuple[int, str]:
    """Elements of ``out`` off A @ Btᵀ (in float64) by more than tf32's input rounding and an f32
    sum allow, and whether the RMS of the error stays below ``RMS`` of the result's."""
    a64, b64 = a.double(), bt.double().t()
    ref = a64 @ b64
    k = a.shape[1]
    bound = (PRODUCT + k * 2.0 ** -24) * (a64.abs() @ b64.abs()) + 1e-6
    err = (out.double() - ref).abs()
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    rms = float(err.nan_to_num(1e30).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt())
    if not bool(bad.any()) and rms <= RMS:
        return 0, f"max error {float((err / bound).max()):.3f} of the bound, RMS error {rms:.2e} of the RMS"
    if not bool(bad.any()):
        return out.numel(), f"every element within its bound, but the RMS error is {rms:.2e} of the RMS (> {RMS})"
    first = divmod(int(bad.reshape(-1).nonzero()[0]), out.shape[1])
    return int(bad.sum()), f"first at {first}, max error {err.nan_to_num(1e30).max().item()}, RMS {rms:.2e}"


def randn(*shape: int) -> Any:
    """Random normal f32 values, none zero."""
    import torch

    x = torch.randn(*shape, device="cuda")
    x[x.abs() < 1e-3] = 0.5
    return x


def refusals() -> int:
    """gemm_tf32 refuses what the kernel cannot take with a ValueError naming it; 1 if one is not."""
    import torch

    from examples.gemm.wgmma_gemm_tf32 import gemm_tf32

    a, bt = randn(64, 64), randn(64, 64)
    cases = [
        ("K not a multiple of 4", lambda: gemm_tf32(randn(64, 66), randn(64, 66)), "K = 66 is not a multiple of 4"),
        ("N not a multiple of 4", lambda: gemm_tf32(a, randn(66, 64)), "N = 66 is not a multiple of 4"),
        ("K that differ", lambda: gemm_tf32(a, randn(64, 32)), "bt holds B transposed"),
        ("f16 inputs", lambda: gemm_tf32(a.half(), bt.half()), "must be a 2-D float32 tensor"),
        ("a transposed view", lambda: gemm_tf32(a, randn(64, 128).t()), "must be row-major contiguous"),
        ("a host tensor", lambda: gemm_tf32(a.cpu(), bt.cpu()), "CUDA tensors on one device"),
        ("a misaligned view", lambda: gemm_tf32(randn(64 * 64 + 1)[1:].view(64, 64), bt), "16-byte aligned"),
        ("an out of the wrong shape", lambda: gemm_tf32(a, bt, torch.empty(64, 32, device="cuda")), "out must be"),
    ]
    failed = 0
    for what, call, message in cases:
        try:
            call()
        except ValueError as e:
            ok = message in str(e)
            print(f"refusal of {what}: " + ("ok" if ok else f"WRONG message: {e}"), flush=True)
            failed += not ok
        else:
            print(f"refusal of {what}: WRONG, it was taken", flush=True)
            failed += 1
    return failed


def main() -> int:
    import torch

    sys.path.insert(0, str(ROOT))
    from examples.gemm.wgmma_gemm_tf32 import gemm_tf32

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = [(mnk, sms) for mnk in TF32_GEMM_SIZES]
    cases.append(((1024, 1024, 200), 3))  # 3 blocks walking 16 tiles: the ring carries across tiles
    failed = 0
    for (m, n, k), blocks in cases:
        a, bt = randn(m, k), randn(n, k)  # B K-contiguous: bt is N×K row-major, C = a @ bt.t()
        c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
        gemm_tf32(a, bt, c, blocks=blocks)
        torch.cuda.synchronize()
        wrong, where = error_count(c, a, bt)
        failed += wrong > 0
        tiles = ((m + 127) // 128) * ((n + 255) // 256)
        print(f"tf32 {m}x{n}x{k} on {min(blocks, tiles)} blocks: "
              + (f"{wrong} of {m * n} wrong, {where}" if wrong else f"ok ({where})"), flush=True)
    failed += refusals()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
