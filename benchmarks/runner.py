"""``python -m benchmarks``: runs the benchmarks, writes ``results.json`` and ``ratios.png`` into
the output directory, and prints a table last.

    python -m benchmarks                      # everything (GPU host), ~5-8 minutes
    python -m benchmarks --quick              # 20 timed runs instead of 50, fewer repeats
    python -m benchmarks --only saxpy,sgemm   # some of them (names: --list)
    python -m benchmarks --cpu-only           # compile times and the wheel build, no GPU needed
    python -m benchmarks --only ports         # public CUDA kernels ported to oxide against nvcc builds

``results.json`` is rewritten after every benchmark, so a run that is cut short keeps what it
measured. ``python -m benchmarks.report OUT/results.json --write BENCHMARKS.md`` puts the
tables into BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import platform
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks.env import REPO, Unavailable, git_commit, subprocess_env

__all__ = ["KERNELS", "GPU_EXTRAS", "CPU_BENCHMARKS", "ALL_BENCHMARKS", "Options", "parse_args", "main"]

KERNELS = ("saxpy", "reduce", "scan", "histogram", "transpose", "softmax", "stencil", "sgemm", "lto")
GPU_EXTRAS = ("cold_start", "launch_overhead", "ports")
CPU_BENCHMARKS = ("compile", "build")
ALL_BENCHMARKS = KERNELS + GPU_EXTRAS + CPU_BENCHMARKS
ALIASES = {"kernels": KERNELS, "gpu": KERNELS + GPU_EXTRAS, "cpu": CPU_BENCHMARKS, "all": ALL_BENCHMARKS}


@dataclass(frozen=True)
class Options:
    selected: tuple[str, ...]
    quick: bool
    out: Path
    cpu_only: bool
    restrict: bool
    compile_examples: tuple[str, ...] | None  # None: every example
    ports: tuple[str, ...] | None = None  # None: every case of the ports corpus

    @property
    def runs(self) -> int:
        return 20 if self.quick else 50

    @property
    def compile_runs(self) -> int:
        return 5 if self.quick else 15

    @property
    def cold_runs(self) -> int:
        return 3 if self.quick else 7

    @property
    def build_reps(self) -> int:
        return 1 if self.quick else 2


def _split_names(values: Sequence[str]) -> tuple[str, ...]:
    names: list[str] = []
    for v in values:
        for part in v.split(","):
            part = part.strip()
            if not part:
                continue
            expanded = ALIASES.get(part, (part,))
            for name in expanded:
                if name not in ALL_BENCHMARKS:
                    raise argparse.ArgumentTypeError(
                        f"unknown benchmark {name!r}; known: {', '.join(ALL_BENCHMARKS)} "
                        f"(or {', '.join(ALIASES)})"
                    )
                if name not in names:
                    names.append(name)
    return tuple(names)


def parse_args(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="oxide against CUDA C++ (NVRTC) and numba-cuda; compile, build, cold-start and launch figures.",
    )
    parser.add_argument("--only", action="append", default=[], metavar="NAME[,NAME]",
                        help=f"run only these: {', '.join(ALL_BENCHMARKS)}; groups: {', '.join(ALIASES)}")
    parser.add_argument("--quick", action="store_true", help="20 timed runs per figure (full: 50), fewer repeats")
    parser.add_argument("--out", type=Path, default=Path("bench_out"), help="output directory (default: bench_out/)")
    parser.add_argument("--cpu-only", action="store_true", help="only what needs no GPU: compile times, wheel build")
    parser.add_argument("--no-restrict", action="store_true",
                        help="compile the C++ baselines with plain pointers instead of const __restrict__ inputs")
    parser.add_argument("--compile-examples", default=None, metavar="NAME[,NAME]",
                        help="examples for the compile-time figure (default: all)")
    parser.add_argument("--ports", default=None, metavar="NAME[,NAME]",
                        help="cases of the ports benchmark to run (default: all; names: benchmarks/ports_cases.py)")
    parser.add_argument("--list", action="store_true", help="list the benchmark names and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(ALL_BENCHMARKS))
        raise SystemExit(0)
    try:
        selected = _split_names(args.only) if args.only else ALL_BENCHMARKS
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    if args.cpu_only:
        selected = tuple(n for n in selected if n in CPU_BENCHMARKS) or (CPU_BENCHMARKS if not args.only else ())
        if not selected:
            parser.error("--cpu-only with --only selects nothing: the CPU benchmarks are " + ", ".join(CPU_BENCHMARKS))
    compile_examples = None
    if args.compile_examples:
        from benchmarks.cpu_suite import EXAMPLES

        compile_examples = tuple(s.strip() for s in args.compile_examples.split(",") if s.strip())
        unknown = [e for e in compile_examples if e not in EXAMPLES]
        if unknown:
            parser.error(f"unknown example(s) {unknown}; known: {', '.join(EXAMPLES)}")
    ports = None
    if args.ports:
        from benchmarks.ports_cases import SPECS

        ports = tuple(s.strip() for s in args.ports.split(",") if s.strip())
        unknown = [p for p in ports if p not in {spec.name for spec in SPECS}]
        if unknown:
            parser.error(f"unknown ports case(s) {unknown}; known: {', '.join(spec.name for spec in SPECS)}")
    return Options(selected=selected, quick=args.quick, out=args.out, cpu_only=args.cpu_only,
                   restrict=not args.no_restrict, compile_examples=compile_examples, ports=ports)


# ---- results --------------------------------------------------------------------------------------

def new_results(opts: Options, argv: Sequence[str]) -> dict[str, Any]:
    return {
        "schema": 1,
        "meta": {
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": git_commit(),
            "python": platform.python_version(),
            "host": platform.node(),
            "quick": opts.quick,
            "runs": opts.runs,
            "argv": list(argv),
            "selected": list(opts.selected),
            "cxx_restrict": opts.restrict,
            "gpu": None,
        },
        "ceilings": {},
        "kernels": [],
        "cold_start": [],
        "launch_overhead": [],
        "compile": [],
        "build": [],
        "ports": {},
        "errors": [],
    }


def write_results(results: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, default=str))
    tmp.replace(path)
    return path


def write_chart(results: dict[str, Any], out: Path) -> Path | None:
    """``ratios.png``: oxide/C++ and oxide/numba per kernel; None without matplotlib or data."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no ratios.png", flush=True)
        return None
    recs = [r for r in results.get("kernels", []) if r.get("ratio_cuda") or r.get("ratio_numba")]
    if not recs:
        return None
    names = [r["name"] for r in recs]
    cxx = [r.get("ratio_cuda") or 0.0 for r in recs]
    nb = [r.get("ratio_numba") or 0.0 for r in recs]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names)), 4.0))
    xs = range(len(names))
    w = 0.38
    ax.bar([x - w / 2 for x in xs], cxx, w, label="oxide / CUDA C++ (NVRTC)")
    ax.bar([x + w / 2 for x in xs], nb, w, label="oxide / numba-cuda")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.98, color="red", linewidth=0.8, linestyle="--", label="target 0.98× C++")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("throughput ratio (>1: oxide faster)")
    meta = results.get("meta", {})
    ax.set_title(f"oxide vs CUDA C++ and numba — {meta.get('gpu') or '?'}, {meta.get('date', '')}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "ratios.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---- launch overhead (another module, maybe not written yet) ------------------------------------

LAUNCH_TARGET = 1.3  # issue 5: oxide ≤ 1.3× the C floor per launch, 4 parameters, torch or CuPy arrays


def launch_overhead_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for results.json from launch_overhead.json (``results``: kernel -> contender ->
    {median_us, ...}; ``ratios``: kernel -> "oxide-x/ref" -> ratio)."""
    rows: list[dict[str, Any]] = []
    for kname, row in (payload.get("results") or {}).items():
        for contender, r in row.items():
            if not isinstance(r, dict):
                continue
            if "median_us" in r:
                rows.append({"name": f"{kname} {contender}", "median_us": r["median_us"],
                             **{k: r[k] for k in ("min_us", "max_us") if k in r}})
            else:
                rows.append({"name": f"{kname} {contender}", "status": "skipped",
                             "reason": str(r.get("skipped", r))[:200]})
    for kname, ratios in (payload.get("ratios") or {}).items():
        for key, value in ratios.items():
            rec: dict[str, Any] = {"name": f"{kname} {key}", "ratio": value}
            if kname == "p4" and key in ("oxide-torch/floor", "oxide-cupy/floor"):
                rec["target_max"] = LAUNCH_TARGET
                rec["met"] = bool(value <= LAUNCH_TARGET)
            rows.append(rec)
    for key in ("c_launcher", "oxide_kernels", "fake_driver", "launches_per_rep", "reps"):
        if key in payload:
            rows.append({"name": f"setting {key}", "value": payload[key]})
    return rows


def run_launch_overhead(out: Path, quick: bool) -> list[dict[str, Any]]:
    """``benchmarks/launch_overhead.py`` (written separately): its ``run(out_dir, quick)`` if it
    has one, else the script in a subprocess (``--out DIR``), whose launch_overhead.json is read."""
    script = REPO / "benchmarks" / "launch_overhead.py"
    if not script.exists():
        return [{"name": "launch overhead", "status": "skipped", "reason": "benchmarks/launch_overhead.py does not exist"}]
    target = out / "launch_overhead"
    target.mkdir(parents=True, exist_ok=True)
    mod = importlib.import_module("benchmarks.launch_overhead")
    fn = getattr(mod, "run", None)
    if callable(fn):
        result = fn(target, quick)
        if isinstance(result, dict):
            return launch_overhead_rows(result) if "results" in result else [result]
        return [r if isinstance(r, dict) else {"name": str(r)} for r in (result or [])]
    cmd = [sys.executable, str(script), "--out", str(target)] + (["--reps", "10"] if quick else [])
    proc = subprocess.run(cmd, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=900)
    (target / "stdout.txt").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    print("\n".join("  " + line for line in proc.stdout.strip().splitlines()[-40:]), flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    payload = json.loads((target / "launch_overhead.json").read_text())
    return launch_overhead_rows(payload)


# ---- main -----------------------------------------------------------------------------------------

def _gpu_selected(opts: Options) -> bool:
    return any(n in KERNELS + GPU_EXTRAS for n in opts.selected)


def run(opts: Options, argv: Sequence[str]) -> dict[str, Any]:
    results = new_results(opts, argv)
    out = opts.out
    write_results(results, out)
    t_start = time.perf_counter()

    def step(label: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f} s] {label}", flush=True)

    ctx = None
    gpu_reason = None
    arch = "sm_90"
    if _gpu_selected(opts):
        step("GPU setup")
        try:
            from benchmarks.gpu_suite import GpuContext

            ctx = GpuContext.create(runs=opts.runs, quick=opts.quick, restrict=opts.restrict)
            arch = ctx.arch
            results["meta"].update(gpu=ctx.device.name, arch=ctx.device.arch, driver=ctx.device.driver,
                                   sm_count=ctx.device.sm_count, torch=ctx.device.torch, cupy=ctx.device.cupy,
                                   numba_cuda=ctx.device.numba_cuda)
            print(f"  {ctx.device.name} ({ctx.device.arch}, {ctx.device.sm_count} SMs), driver {ctx.device.driver}",
                  flush=True)
        except Unavailable as e:
            gpu_reason = str(e)
        except Exception as e:
            gpu_reason = f"{type(e).__name__}: {e}"
            results["errors"].append({"where": "GPU setup", "error": gpu_reason, "traceback": traceback.format_exc()})
        if gpu_reason:
            print(f"  GPU benchmarks skipped: {gpu_reason}", flush=True)

    kernels = [n for n in opts.selected if n in KERNELS]
    if kernels:
        if ctx is None:
            results["kernels"] = [{"name": n, "status": "skipped", "reason": gpu_reason, "impls": {}} for n in kernels]
        else:
            from benchmarks.gpu_suite import finalize_record, measure_ceilings, run_kernel_benchmark

            step("ceilings (device-to-device copy, cuBLAS)")
            results["ceilings"] = measure_ceilings(ctx)
            for name in kernels:
                step(name)
                results["kernels"].append(run_kernel_benchmark(ctx, name))
                write_results(results, out)
            results["kernels"] = [finalize_record(r, ctx.ceilings) for r in results["kernels"]]
        write_results(results, out)

    if "cold_start" in opts.selected:
        step("cold start")
        if ctx is None:
            results["cold_start"] = [{"name": "cold start", "status": "skipped", "error": gpu_reason}]
        else:
            try:
                from benchmarks.cold_start import cold_start_benchmark

                results["cold_start"] = cold_start_benchmark(arch, opts.cold_runs)
            except Exception as e:
                results["cold_start"] = [{"name": "cold start", "status": "error", "error": f"{type(e).__name__}: {e}",
                                          "traceback": traceback.format_exc(limit=6)}]
        write_results(results, out)

    if "launch_overhead" in opts.selected:
        step("launch overhead")
        if ctx is None:
            results["launch_overhead"] = [{"name": "launch overhead", "status": "skipped", "reason": gpu_reason}]
        else:
            try:
                results["launch_overhead"] = run_launch_overhead(out, opts.quick)
            except Exception as e:
                results["launch_overhead"] = [{"name": "launch overhead", "status": "error",
                                               "error": f"{type(e).__name__}: {e}",
                                               "traceback": traceback.format_exc(limit=8)}]
                print(f"  launch overhead: error: {type(e).__name__}: {e}", flush=True)
        write_results(results, out)

    if "ports" in opts.selected:
        step("ports (public CUDA kernels against their nvcc-built originals)")
        if ctx is None:
            results["ports"] = {"summary": {"status": "skipped", "reason": gpu_reason}, "records": []}
        else:
            try:
                from benchmarks.ports import run_ports

                results["ports"] = run_ports(ctx, out, opts.ports)
            except Exception as e:
                results["ports"] = {"summary": {"status": "error", "error": f"{type(e).__name__}: {e}",
                                                "traceback": traceback.format_exc(limit=8)}, "records": []}
                print(f"  ports: error: {type(e).__name__}: {e}", flush=True)
        write_results(results, out)

    if "compile" in opts.selected:
        step("compile time per example")
        from benchmarks.cpu_suite import EXAMPLES, compile_benchmarks

        results["compile"] = compile_benchmarks(opts.compile_runs, opts.compile_examples or EXAMPLES, arch)
        write_results(results, out)

    if "build" in opts.selected:
        step("sample project wheel build")
        from benchmarks.cpu_suite import wheel_build_benchmark

        results["build"] = wheel_build_benchmark(opts.build_reps)
        write_results(results, out)

    results["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    write_results(results, out)
    try:
        chart = write_chart(results, out)
        if chart:
            print(f"wrote {chart}", flush=True)
    except Exception as e:
        print(f"ratios.png not written: {type(e).__name__}: {e}", flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # examples/ and oxide/ from this checkout
    results = run(opts, argv)
    from benchmarks.report import render_text

    print()
    print(render_text(results))
    print(f"\nresults: {opts.out / 'results.json'} ({results['meta']['elapsed_s']} s)")
    return 0
