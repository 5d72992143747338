"""Tensor-core GEMM (issue #18): oxide's GEMMs against cuBLAS and Triton, same run: bf16 and
f16 in (the sm_80 ``mma.sync`` examples/gemm/mma_gemm.py, 128×256×64 tiles, and its 128×128×32
first version mma_gemm_128x128.py; on a 9.0 GPU the sm_90a warp-specialized ``wgmma`` GEMMs,
examples/gemm/wgmma_gemm.py with TMA loads and stores, wgmma_cpasync_gemm.py with cp.async) against ``torch.matmul``; fp8 e4m3 in (mma_gemm_fp8.py and,
on a 9.0 GPU, the TMA wgmma wgmma_gemm_fp8.py; per-tensor scales, bf16 out) against cuBLASLt through
``torch._scaled_mm`` (with and without ``use_fast_accum``: the wgmma kernel's accumulation is the
fast one's); TF32 (f32 in and out; on a 9.0 GPU examples/gemm/wgmma_gemm_tf32.py, C = A @ Btᵀ
with Bt N×K, against cuBLAS TF32: ``torch.matmul(a, bt.t())`` with
``torch.backends.cuda.matmul.allow_tf32 = True``; target: oxide ≥ 0.9× cuBLAS, printed after the
times); f32 accumulate; each against a Triton matmul; at 4096³, 8192³ and the skinny
16384×1024×4096. Needs a GPU, PyTorch and Triton.

    python benchmarks/gemm.py --out results/ [--reps 30] [--dtypes bf16,f16,e4m3,tf32] [--sizes 4096,8192x8192x8192]
        [--impls "wgmma_gemm (TMA"]  # only the contenders whose names hold one of these, and the reference

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
# (BM, BN, BK, stages, warps): Triton's autotuning candidates per input width
# contenders whose fp8 accumulation keeps 13 fraction bits (Hopper's fp8 wgmma without promotion
# to f32): their check allows 2^-9 · (|A| @ |B|) for it (tests/wgmma_gemm_fp8_cases.py says why)
FP8_FAST_ACCUMULATION = {"oxide wgmma_gemm_fp8 (TMA)", "cuBLASLt (torch._scaled_mm, fast accum)"}
TRITON_CONFIGS = {2: [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4)],
                  1: [(128, 256, 128, 3, 8), (128, 128, 128, 4, 4)],
                  4: [(128, 256, 32, 3, 8), (256, 128, 32, 3, 8), (128, 128, 32, 4, 4)]}  # tf32: tl.dot's default
# TF32 (issue 28 item 4): oxide's wgmma_gemm_tf32 against cuBLAS TF32 at this ratio or better
TF32_TARGET = 0.9
TF32_ORACLE = "oxide wgmma_gemm_tf32 (TMA)"
TF32_REFERENCE = "cuBLAS TF32 (torch.matmul)"


def triton_matmul(itemsize: int = 2) -> Callable[..., Any] | None:
    """A Triton matmul (tiles autotuned over common configurations for inputs of ``itemsize``
    bytes), or None without Triton. ``matmul(x, y, out_dtype=None, scale=1.0)``: y may be a
    transposed view (fp8: K-contiguous, as cuBLASLt takes it)."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in TRITON_CONFIGS[itemsize]
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, scale,
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
        tl.store(pc, (acc * scale).to(c.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))

    def matmul(x: Any, y: Any, out_dtype: Any = None, scale: float = 1.0) -> Any:
        m, k = x.shape
        _, n = y.shape
        out = torch.empty((m, n), device=x.device, dtype=out_dtype or x.dtype)
        kernel[lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)](
            x, y, out, m, n, k, x.stride(0), x.stride(1), y.stride(0), y.stride(1), out.stride(0), out.stride(1),
            scale)
        return out

    return matmul


def check(torch: Any, name: str, out: Any, a: Any, b: Any, elem: str, scale: float = 1.0,
          accumulation: float = 1e-6) -> float:
    """The largest error on 64 sampled rows against float64, in units of the bound an f32
    accumulation (``accumulation`` · (|A| @ |B|)) rounded once to the output type meets (≤ 1: right)."""
    rows = torch.randperm(a.shape[0], device=a.device)[:64]
    ref = (a[rows].double() @ b.double()) * scale
    ulp = {"f16": 2.0 ** -11, "tf32": 2.0 ** -24}.get(elem, 2.0 ** -8)  # bf16 out for bf16 and e4m3, f32 for tf32
    err = ((out[rows].double() - ref).abs()
           / (ulp * ref.abs() + accumulation * (a[rows].double().abs() @ b.double().abs()) + 1e-6))
    return float(err.max())


def timed(torch: Any, impls: dict[str, Callable[[], Any]], reps: int) -> dict[str, list[float]]:
    """Milliseconds per call of each implementation, round-robin so that drift hits all alike."""
    for fn in impls.values():  # warm-up (and Triton's autotuning)
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(reps):
        for name, fn in impls.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1_000_000)  # the host queues the call before the GPU reaches start
            start.record()
            fn()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return times


def wgmma_impls(torch: Any, a: Any, b: Any) -> dict[str, Callable[[], Any]]:
    """The sm_90a GEMMs: examples/gemm/wgmma_gemm.py (TMA loads and stores; its descriptors made
    once, as a caller keeps them) and its cp.async variant, each into an output of its own."""
    import oxide
    from examples.gemm import wgmma_cpasync_gemm as wgc
    from examples.gemm import wgmma_gemm as wg

    (m, k), n = a.shape, b.shape[1]
    tiles = ((m + wg.BM - 1) // wg.BM) * ((n + wg.BN - 1) // wg.BN)
    blocks = min(torch.cuda.get_device_properties(0).multi_processor_count, tiles)
    tma_launch = wg.wgmma_gemm[blocks, wg.THREADS, None, wg.SMEM_BYTES]
    a_map = oxide.tma.descriptor(a, box=(wg.BM, wg.BK), swizzle=128)
    b_map = oxide.tma.descriptor(b, box=(wg.BK, 64), swizzle=128)
    cpasync_launch = wgc.wgmma_cpasync_gemm[blocks, wgc.THREADS, None, wgc.SMEM_BYTES]
    c_tma = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    c_map = oxide.tma.descriptor(c_tma, box=(64, 64), swizzle=128)  # its epilogue's TMA stores
    c_cpasync = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)

    def tma_run() -> Any:
        tma_launch(a_map, b_map, c_map, m, n, k)
        return c_tma

    def cpasync_run() -> Any:
        cpasync_launch(a.view(-1), b.view(-1), m, n, k, c_cpasync.view(-1))
        return c_cpasync

    return {"oxide wgmma_gemm (TMA)": tma_run, "oxide wgmma_cpasync_gemm": cpasync_run}


def wgmma_fp8_impls(torch: Any, a: Any, bt: Any, scale: float) -> dict[str, Callable[[], Any]]:
    """examples/gemm/wgmma_gemm_fp8.py (TMA loads, its descriptors made once): e4m3 A (M×K) and
    Bt (N×K), both K-contiguous, bf16 out."""
    import oxide
    from examples.gemm import wgmma_gemm_fp8 as wf

    (m, k), n = a.shape, bt.shape[0]
    tiles = ((m + wf.BM - 1) // wf.BM) * ((n + wf.BN - 1) // wf.BN)
    blocks = min(torch.cuda.get_device_properties(0).multi_processor_count, tiles)
    launch = wf.wgmma_gemm_fp8[blocks, wf.THREADS, None, wf.SMEM_BYTES]
    a_map = oxide.tma.descriptor(a, box=(wf.BM, wf.BK), swizzle=128)
    b_map = oxide.tma.descriptor(bt, box=(wf.BN, wf.BK), swizzle=128)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)

    def run() -> Any:
        launch(a_map, b_map, scale, m, n, k, c.view(-1))
        return c

    return {"oxide wgmma_gemm_fp8 (TMA)": run}


def tf32_impls(torch: Any, m: int, n: int, k: int,
               tri: Callable[..., Any] | None) -> tuple[dict[str, Callable[[], Any]], Any, Any, str, float]:
    """The TF32 contenders (f32 in and out) on fresh inputs: A M×K and Bt N×K, both row-major (B
    K-contiguous, as tf32 wgmma needs it); examples/gemm/wgmma_gemm_tf32.py with its descriptors
    made once; cuBLAS through ``torch.matmul(a, bt.t())`` with TF32 allowed; Triton's ``tl.dot``
    (TF32 by default for f32)."""
    a = torch.randn(m, k, device="cuda")
    bt = torch.randn(n, k, device="cuda")
    impls: dict[str, Callable[[], Any]] = {}
    if torch.cuda.get_device_capability(0) == (9, 0):  # wgmma needs sm_90a
        import oxide
        from examples.gemm import wgmma_gemm_tf32 as wt

        wt.check_operands(a, bt)
        tiles = ((m + wt.BM - 1) // wt.BM) * ((n + wt.BN - 1) // wt.BN)
        blocks = min(torch.cuda.get_device_properties(0).multi_processor_count, tiles)
        launch = wt.wgmma_gemm_tf32[blocks, wt.THREADS, None, wt.SMEM_BYTES]
        c = torch.full((m, n), float("nan"), device="cuda")  # poisoned: an element never written fails the check
        a_map = oxide.tma.descriptor(a, box=(wt.BM, wt.BK), swizzle=128)
        b_map = oxide.tma.descriptor(bt, box=(wt.BN, wt.BK), swizzle=128)
        c_map = oxide.tma.descriptor(c, box=(64, wt.C_COLS), swizzle=128)

        def oxide_run() -> Any:
            launch(a_map, b_map, c_map, m, n, k)
            return c

        impls[TF32_ORACLE] = oxide_run

    def cublas_run() -> Any:
        torch.backends.cuda.matmul.allow_tf32 = True  # set here: the other rounds leave it as they found it
        return torch.matmul(a, bt.t())

    impls[TF32_REFERENCE] = cublas_run
    if tri is not None:
        impls["Triton"] = lambda: tri(a, bt.t())
    return impls, a, bt.t(), TF32_REFERENCE, 1.0


def sixteen_bit_impls(torch: Any, m: int, n: int, k: int, dt: Any,
                      tri: Callable[..., Any] | None) -> tuple[dict[str, Callable[[], Any]], Any, Any, str, float]:
    """The bf16/f16 contenders on fresh inputs, the inputs, the reference's name and the scale."""
    from examples.gemm import mma_gemm as big
    from examples.gemm import mma_gemm_128x128 as small

    a = torch.randn(m, k, device="cuda").to(dt)
    b = torch.randn(k, n, device="cuda").to(dt)
    # outputs poisoned: an element a kernel never writes fails the check
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    c2 = torch.full((m, n), float("nan"), device="cuda", dtype=dt)

    def oxide_run() -> Any:
        big.mma_gemm[((n + big.BN - 1) // big.BN, (m + big.BM - 1) // big.BM), big.THREADS, None, big.SMEM_BYTES](
            a.view(-1), b.view(-1), m, n, k, c.view(-1))
        return c

    def oxide_small() -> Any:
        small.mma_gemm_128x128[((n + small.BN - 1) // small.BN, (m + small.BM - 1) // small.BM), small.THREADS](
            a.view(-1), b.view(-1), m, n, k, c2.view(-1))
        return c2

    impls: dict[str, Callable[[], Any]] = {"oxide mma_gemm": oxide_run, "oxide mma_gemm_128x128": oxide_small}
    if torch.cuda.get_device_capability(0) == (9, 0):  # wgmma needs sm_90a
        impls.update(wgmma_impls(torch, a, b))
    impls["cuBLAS (torch.matmul)"] = lambda: a @ b
    if tri is not None:
        impls["Triton"] = lambda: tri(a, b)
    return impls, a, b, "cuBLAS (torch.matmul)", 1.0


def fp8_impls(torch: Any, m: int, n: int, k: int,
              tri: Callable[..., Any] | None) -> tuple[dict[str, Callable[[], Any]], Any, Any, str, float]:
    """The e4m3 contenders (per-tensor scales, bf16 out) on fresh inputs: A M×K and B K×N
    K-contiguous (bt, N×K row-major), as cuBLASLt takes fp8; and the dequantized inputs."""
    from examples.gemm import mma_gemm_fp8 as f8

    e4m3 = torch.float8_e4m3fn
    a = torch.randn(m, k, device="cuda").to(e4m3)
    bt = torch.randn(n, k, device="cuda").to(e4m3)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(1.5, device="cuda")
    scale = float(sa * sb)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)

    def oxide_run() -> Any:
        f8.mma_gemm_fp8[((n + f8.BN - 1) // f8.BN, (m + f8.BM - 1) // f8.BM), f8.THREADS, None, f8.SMEM_BYTES](
            a.view(-1), bt.view(-1), scale, m, n, k, c.view(-1))
        return c

    impls: dict[str, Callable[[], Any]] = {"oxide mma_gemm_fp8": oxide_run}
    if torch.cuda.get_device_capability(0) == (9, 0):  # wgmma needs sm_90a
        impls.update(wgmma_fp8_impls(torch, a, bt, scale))
    impls["cuBLASLt (torch._scaled_mm)"] = lambda: torch._scaled_mm(a, bt.t(), sa, sb, out_dtype=torch.bfloat16)
    impls["cuBLASLt (torch._scaled_mm, fast accum)"] = lambda: torch._scaled_mm(
        a, bt.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)
    if tri is not None:
        impls["Triton"] = lambda: tri(a, bt.t(), torch.bfloat16, scale)
    return impls, a.float(), bt.float().t(), "cuBLASLt (torch._scaled_mm)", scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--dtypes", default="bf16,f16,e4m3,tf32", help="comma-separated: bf16, f16, e4m3, tf32")
    parser.add_argument("--impls", default=None, help="comma-separated parts of contender names to time (the "
                        "reference is always timed), e.g. 'wgmma_gemm (TMA' (default: all)")
    parser.add_argument("--sizes", default=None, help="MxNxK or an edge of a cube, comma-separated (default: "
                        + ",".join("x".join(map(str, s)) for s in SIZES) + ")")
    args = parser.parse_args()
    import torch

    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "e4m3": torch.float8_e4m3fn}
    chosen = [d for d in args.dtypes.split(",") if d]
    shapes = [[int(x) for x in s.split("x")] for s in (args.sizes or "").split(",") if s]
    sizes = [(s[0], s[0], s[0]) if len(s) == 1 else (s[0], s[1], s[2]) for s in shapes] or SIZES
    tri16 = triton_matmul(2)
    tri8 = triton_matmul(1) if "e4m3" in chosen else None
    tri32 = triton_matmul(4) if "tf32" in chosen else None
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
        for elem in chosen:
            allow_tf32 = torch.backends.cuda.matmul.allow_tf32
            if elem == "e4m3":
                impls, a, b, reference, scale = fp8_impls(torch, m, n, k, tri8)
            elif elem == "tf32":
                impls, a, b, reference, scale = tf32_impls(torch, m, n, k, tri32)
            else:
                impls, a, b, reference, scale = sixteen_bit_impls(torch, m, n, k, dtypes[elem], tri16)
            if args.impls:  # the reference stays: the figures are relative to it
                wanted = [w for w in args.impls.split(",") if w]
                impls = {name: fn for name, fn in impls.items() if name == reference or any(w in name for w in wanted)}
            errors: dict[str, float] = {}
            for name in list(impls):
                try:
                    out = impls[name]()
                    torch.cuda.synchronize()
                    # tf32: each product off by up to 2^-9 of |a|·|b| (10 fraction bits per input)
                    accumulation = (2.0 ** -9 + k * 2.0 ** -24 if elem == "tf32"
                                    else 2.0 ** -9 if name in FP8_FAST_ACCUMULATION else 1e-6)
                    errors[name] = check(torch, name, out, a, b, elem, scale, accumulation)
                except Exception as exc:  # a contender that fails (a Triton fp8 config) is reported, not fatal
                    if name.startswith("oxide"):
                        raise
                    print(f"{m}x{n}x{k} {elem} {name}: failed, left out: {type(exc).__name__}: {exc}"[:300], flush=True)
                    del impls[name]
                    continue
                if errors[name] > 1.0:  # oxide's must be right; the others' error is reported with their time
                    if name.startswith("oxide"):
                        print(f"{name} {elem} {m}x{n}x{k}: WRONG result (error {errors[name]:.2f} bounds); not timed",
                              flush=True)
                        del impls[name]
                        continue
                    print(f"{m}x{n}x{k} {elem} {name}: error {errors[name]:.2f}x the f32-accumulation bound "
                          "(checked on 64 rows against float64)", flush=True)
            times = timed(torch, impls, args.reps)
            torch.backends.cuda.matmul.allow_tf32 = allow_tf32
            flops = 2.0 * m * n * k
            base = statistics.median(times[reference])
            for name, ts in times.items():
                med = statistics.median(ts)
                row = {"size": f"{m}x{n}x{k}", "dtype": elem, "impl": name, "median_ms": round(med, 4),
                       "min_ms": round(min(ts), 4), "tflops": round(flops / med / 1e9, 1),
                       "vs_cublas": round(base / med, 3), "max_error_ulp_bound": round(errors[name], 3)}
                if name == TF32_ORACLE:  # issue 28 item 4: ≥ 0.9× cuBLAS TF32
                    row["target"] = {"min": TF32_TARGET, "value": row["vs_cublas"],
                                     "met": row["vs_cublas"] >= TF32_TARGET}
                results.append(row)
                print(f"{row['size']:>16} {elem:>5} {name:<28} {row['median_ms']:9.3f} ms {row['tflops']:7.1f} TFLOP/s "
                      f"{row['vs_cublas']:6.3f}x {reference.split()[0]}", flush=True)
            if TF32_ORACLE in times:
                ratio = base / statistics.median(times[TF32_ORACLE])
                print(f"{m}x{n}x{k} tf32: {TF32_ORACLE} / {TF32_REFERENCE} = {ratio:.3f}x "
                      f"(target >= {TF32_TARGET}: {'met' if ratio >= TF32_TARGET else 'NOT met'})", flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gemm.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
