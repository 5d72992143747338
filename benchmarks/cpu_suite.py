"""Benchmarks that need no GPU: compile time per example, and the sample project's wheel build
(full, then with nothing changed)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.env import REPO, subprocess_env
from benchmarks.timing import time_cpu

__all__ = ["EXAMPLES", "COMPILE_TARGET_MS", "compile_benchmark", "compile_benchmarks", "wheel_build_benchmark"]

EXAMPLES = ("saxpy", "reduce", "scan", "histogram", "transpose", "softmax", "stencil", "sgemm")
COMPILE_TARGET_MS = 50.0  # issue 3: median ≤ 50 ms per kernel, source to PTX


def compile_benchmark(example: str, runs: int, arch: str = "sm_90") -> dict[str, Any]:
    """Median wall time of ``compile_module(examples/<example>.py)`` to PTX for one arch (after
    one untimed run, which pays for importing and initialising llvmlite)."""
    rec: dict[str, Any] = {"name": f"compile {example}", "example": example, "arch": arch}
    try:
        from oxide_build.compile import CompileOptions, compile_module

        source = REPO / "examples" / f"{example}.py"
        options = CompileOptions(archs=(arch,), link_cubins=False)
        holder: dict[str, Any] = {}

        def once() -> None:
            holder["compiled"] = compile_module(source, f"examples.{example}", options, root=REPO)

        stats, samples = time_cpu(once, runs=runs, warmup=1)
        compiled = holder["compiled"]
        entry_points = len(compiled.kernels)
        kernel_names = sorted({k.name for k in compiled.kernels})
        per_kernel = stats.median_ms / max(1, entry_points)
        rec.update(
            status="ok", **stats.to_dict(), samples_ms=[round(s, 3) for s in samples],
            entry_points=entry_points, kernels=kernel_names, per_kernel_ms=per_kernel,
            target_ms=COMPILE_TARGET_MS, met=per_kernel <= COMPILE_TARGET_MS,
        )
        print(f"  compile {example:<10} {stats.median_ms:8.1f} ms for {entry_points} entry point(s): "
              f"{per_kernel:.1f} ms each", flush=True)
    except Exception as e:
        rec.update(status="error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=6)[-3000:])
        print(f"  compile {example}: error: {type(e).__name__}: {e}", flush=True)
    return rec


def compile_benchmarks(runs: int, examples: tuple[str, ...] = EXAMPLES, arch: str = "sm_90") -> list[dict[str, Any]]:
    return [compile_benchmark(name, runs, arch) for name in examples]


def _copy_project(src: Path, dest_root: Path) -> Path:
    dest = dest_root / src.name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "_oxide", "__pycache__", "dist"))
    return dest


def _build_wheel(project: Path, out_dir: Path, cache: Path) -> tuple[float, Path]:
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", str(project), "-w", str(out_dir)]
    env = subprocess_env(OXIDE_CACHE_DIR=str(cache), PIP_DISABLE_PIP_VERSION_CHECK="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    elapsed = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"pip wheel failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}")
    wheels = sorted(out_dir.glob("*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise RuntimeError("pip wheel wrote no wheel")
    return elapsed, wheels[-1]


def wheel_build_benchmark(reps: int = 2) -> list[dict[str, Any]]:
    """``pip wheel --no-build-isolation --no-deps`` of a fresh copy of sample_project with an
    empty compile cache (full), then again on the same copy (no change); ``reps`` times."""
    full: list[float] = []
    nochange: list[float] = []
    notes: list[str] = []
    try:
        for _ in range(reps):
            with tempfile.TemporaryDirectory(prefix="oxide-bench-wheel-") as tmp:
                root = Path(tmp)
                project = _copy_project(REPO / "sample_project", root)
                cache = root / "cache"
                t_full, wheel = _build_wheel(project, root / "wheels", cache)
                with zipfile.ZipFile(wheel) as zf:  # one fatbin per module, or cubins ([tool.oxide] fatbin)
                    cubins = [n for n in zf.namelist() if n.endswith((".cubin", ".fatbin"))]
                if not cubins:
                    raise RuntimeError(f"{wheel.name} holds no cubin or fatbin")
                t_again, _ = _build_wheel(project, root / "wheels", cache)
                full.append(t_full)
                nochange.append(t_again)
                notes = [f"{wheel.name}: {len(cubins)} code file(s): {', '.join(sorted(Path(c).suffix for c in cubins))}"]
                print(f"  wheel build: full {t_full:.0f} ms, no change {t_again:.0f} ms", flush=True)
    except Exception as e:
        print(f"  wheel build: error: {type(e).__name__}: {e}", flush=True)
        return [{"name": "sample wheel build", "status": "error", "error": f"{type(e).__name__}: {e}",
                 "full_ms": full, "nochange_ms": nochange}]
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else None  # noqa: E731
    return [
        {"name": "sample wheel build (full)", "status": "ok", "runs_ms": full, "median_ms": med(full),
         "min_ms": min(full), "max_ms": max(full), "notes": notes + ["fresh copy, empty OXIDE_CACHE_DIR"]},
        {"name": "sample wheel build (no change)", "status": "ok", "runs_ms": nochange, "median_ms": med(nochange),
         "min_ms": min(nochange), "max_ms": max(nochange), "notes": ["same copy and cache, rebuilt at once"]},
    ]
