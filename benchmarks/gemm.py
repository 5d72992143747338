"""Tensor-core GEMM (issue #18): oxide's sm_80 ``mma.sync`` GEMM (examples/gemm/mma_gemm.py)
and, on a 9.0 GPU, its sm_90a warp-specialized ``wgmma`` GEMM (examples/gemm/wgmma_gemm.py)
against cuBLAS (``torch.matmul``) and a Triton matmul, bf16 and f16 in, f32 accumulate,
bf16/f16 out, at 4096³, 8192³ and the skinny 16384×1024×4096. Needs a GPU, PyTorch and Triton.

    python benchmarks/gemm.py --out results/ [--reps 30]

Each size and type is checked against torch in float64 on sampled rows first. The timed runs
go round-robin (oxide, cuBLAS, Triton, oxide, ...) so that clocks and temperature drift hit all
alike; each run is one call between two CUDA events; the median of ``--reps`` runs is reported
as TFLOP/s (2·M·N·K / time).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 1024, 4096)]


def triton_matmul() -> Callable[[Any, Any], Any] | None:
    """A Triton matmul (tiles autotuned over common configurations), or None without Triton."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4)]
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        grid_m = tl.cdiv(M, BM)
        grid_n = tl.cdiv(N, BN)
        per_group = GROUP * grid_n
        first_m = (pid // per_group) * GROUP
        size_m = min(grid_m - first_m, GROUP)
        pid_m = first_m + (pid % per_group) % size_m
        pid_n = (pid % per_group) // size_m
        rm = (pid_m * BM + tl.arange(0, BM)) % M
        rn = (pid_n * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(K, BK)):
            x = tl.load(pa, mask=rk[None, :] < K - k0 * BK, other=0.0)
            y = tl.load(pb, mask=rk[:, None] < K - k0 * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            pa += BK * sak
            pb += BK * sbk
        cm = pid_m * BM + tl.arange(0, BM)
        cn = pid_n * BN + tl.arange(0, BN)
        pc = c + cm[:, None] * scm + cn[None, :] * scn
        tl.store(pc, acc.to(c.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))

    def matmul(x: Any, y: Any) -> Any:
        m, k = x.shape
        _, n = y.shape
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
        kernel[lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)](
            x, y, out, m, n, k, x.stride(0), x.stride(1), y.stride(0), y.stride(1), out.stride(0), out.stride(1))
        return out

    return matmul


def check(torch: Any, name: str, out: Any, a: Any, b: Any, elem: str) -> float:
    """The largest error on 64 sampled rows against float64, relative to the output's ulp."""
    rows = torch.randperm(a.shape[0], device=a.device)[:64]
    ref = a[rows].double() @ b.double()
    ulp = 2.0 ** -8 if elem == "bf16" else 2.0 ** -11
    err = ((out[rows].double() - ref).abs() / (ulp * ref.abs() + 1e-6 * (a[rows].double().abs() @ b.double().abs()) + 1e-6))
    worst = float(err.max())
    if not worst <= 1.0:
        print(f"{name} {elem} {tuple(a.shape)}x{tuple(b.shape)}: WRONG result (error {worst:.2f} ulp-bounds); not timed",
              flush=True)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--sizes", default=None, help="MxNxK,... (default: " + ",".join("x".join(map(str, s)) for s in SIZES) + ")")
    args = parser.parse_args()
    import torch

    from examples.gemm import wgmma_gemm as wg
    from examples.gemm.mma_gemm import BM, BN, THREADS, mma_gemm

    sizes = SIZES if args.sizes is None else [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    hopper = torch.cuda.get_device_capability(0) == (9, 0)  # wgmma needs sm_90a
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    tri = triton_matmul()
    results: list[dict[str, Any]] = []
    props = torch.cuda.get_device_properties(0)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": props.name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "reps": args.reps}
    try:
        import triton

        meta["triton"] = triton.__version__
    except ImportError:
        pass
    for m, n, k in sizes:
        for elem, dt in dtypes.items():
            a = torch.randn(m, k, device="cuda").to(dt)
            b = torch.randn(k, n, device="cuda").to(dt)
            c = torch.empty(m, n, device="cuda", dtype=dt)

            def oxide_run() -> Any:
                mma_gemm[((n + BN - 1) // BN, (m + BM - 1) // BM), THREADS](a.view(-1), b.view(-1), m, n, k, c.view(-1))
                return c

            tiles = ((m + wg.BM - 1) // wg.BM) * ((n + wg.BN - 1) // wg.BN)
            wgmma_launch = wg.wgmma_gemm[min(sms, tiles), wg.THREADS, None, wg.SMEM_BYTES]

            def wgmma_run() -> Any:
                wgmma_launch(a.view(-1), b.view(-1), m, n, k, c.view(-1))
                return c

            impls: dict[str, Callable[[], Any]] = {"oxide mma_gemm": oxide_run}
            if hopper:
                impls["oxide wgmma_gemm"] = wgmma_run
            impls["cuBLAS (torch.matmul)"] = lambda: a @ b
            if tri is not None:
                impls["Triton"] = lambda: tri(a, b)
            errors = {}
            for name, fn in impls.items():
                c.fill_(float("nan"))  # poisoned: an element the kernel never writes fails the check
                errors[name] = check(torch, name, fn(), a, b, elem)
            impls = {name: fn for name, fn in impls.items() if errors[name] <= 1.0}
            for fn in impls.values():  # warm-up (and Triton's autotuning)
                for _ in range(3):
                    fn()
            torch.cuda.synchronize()
            times: dict[str, list[float]] = {name: [] for name in impls}
            for _ in range(args.reps):
                for name, fn in impls.items():
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(1_000_000)  # the host queues the call before the GPU reaches start
                    start.record()
                    fn()
                    end.record()
                    end.synchronize()
                    times[name].append(start.elapsed_time(end))
            flops = 2.0 * m * n * k
            cublas = statistics.median(times["cuBLAS (torch.matmul)"])
            for name, ts in times.items():
                med = statistics.median(ts)
                row = {"size": f"{m}x{n}x{k}", "dtype": elem, "impl": name, "median_ms": round(med, 4),
                       "min_ms": round(min(ts), 4), "tflops": round(flops / med / 1e9, 1),
                       "vs_cublas": round(cublas / med, 3), "max_error_ulp_bound": round(errors[name], 3)}
                results.append(row)
                print(f"{row['size']:>16} {elem:>5} {name:<24} {row['median_ms']:9.3f} ms {row['tflops']:7.1f} TFLOP/s "
                      f"{row['vs_cublas']:6.3f}x cuBLAS", flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gemm.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
