"""Import time of a package of precompiled oxide kernels, in fresh processes (no GPU needed).

    python benchmarks/import_time.py                 # 50 kernels, 21 processes
    python benchmarks/import_time.py --kernels 200 --runs 41 --out results/

Issue 5 asks that importing a module of 50 kernels take at most 20 ms and do no CUDA work. The
package is built the way a wheel carries it (``compile_module`` + ``write_module_artifacts``:
``_oxide/<module>.json`` and the cubin next to the source; without the toolchain, a manifest
written by hand, which importing never reads anyway). Each child process measures
``import <package>`` with ``time.perf_counter`` around it and reports which of the modules a
launch needs were imported too; the parent also times the whole process against ``python -c
pass``. Bytecode is cached (``PYTHONPYCACHEPREFIX`` in a temporary directory, one warm-up
process first), as ``pip install`` compiles it for an installed wheel.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["IMPORT_TARGET_MS", "kernel_package_source", "build_kernel_package", "measure_import", "main"]

IMPORT_TARGET_MS = 20.0

# modules only a launch needs: importing kernels must not import them
LAUNCH_ONLY_MODULES = (
    "ctypes", "json", "numpy", "cuda", "cuda.bindings", "oxide.runtime.loader", "oxide.runtime.manifest",
    "oxide.runtime.arrays", "oxide.runtime.kernel_errors", "oxide.runtime.device", "oxide_build",
    # nor what only some kernels need, nor stdlib modules the runtime does without (issue 28's cold start)
    "oxide.tma", "oxide.runtime.tensor_maps", "threading", "dataclasses",
)  # fmt: skip

_CHILD = """
import sys, time
t0 = time.perf_counter()
import {package}
t1 = time.perf_counter()
loaded = [m for m in {launch_only!r} if m in sys.modules]
import json
print(json.dumps({{"import_ms": (t1 - t0) * 1e3, "loaded": loaded}}))
"""


def kernel_package_source(kernels: int) -> str:
    """A module of ``kernels`` small element-wise kernels, written like a user writes them."""
    out = ["import oxide as ox", "from oxide import DisjointSlice, Slice, f32, thread", ""]
    for i in range(kernels):
        out += [
            "",
            "@ox.kernel",
            f"def k{i}(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:",
            "    i = thread.index_1d()",
            "    if i < len(out):",
            f"        out[i] = a * x[i] + {i}.0",
            "",
        ]
    return "\n".join(out)


def build_kernel_package(root: Path, name: str = "oximport", kernels: int = 50) -> str:
    """Writes package ``name`` (its ``__init__.py`` holds the kernels) under ``root`` with its
    compiled artifacts; returns how it was built."""
    pkg = root / name
    pkg.mkdir(parents=True, exist_ok=True)
    src = pkg / "__init__.py"
    src.write_text(kernel_package_source(kernels))
    try:
        from oxide_build.compile import CompileOptions, compile_module
        from oxide_build.package.artifacts import write_module_artifacts

        write_module_artifacts(compile_module(src, name, CompileOptions(archs=("sm_90",))), pkg)
        return "oxide_build (sm_90 cubin)"
    except Exception as e:  # no toolchain: the manifest alone (importing does not read it)
        from oxide.runtime.manifest import KernelSpec, ModuleManifest, ParamSpec, manifest_path

        params = (ParamSpec("a", "scalar", "f32"), ParamSpec("x", "slice", "f32"), ParamSpec("out", "disjoint_slice", "f32"))
        path = manifest_path(pkg, name)
        path.parent.mkdir(exist_ok=True)
        path.write_text(ModuleManifest(
            module=name, source=src.name, source_sha256=hashlib.sha256(src.read_bytes()).hexdigest(),
            kernels=tuple(KernelSpec(f"k{i}", f"k{i}", params) for i in range(kernels)), cubins={},
        ).to_json())  # fmt: skip
        return f"manifest only ({type(e).__name__}: {e})"


def _env(root: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT)])
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def measure_import(root: Path, name: str = "oximport", runs: int = 21) -> dict[str, Any]:
    """Imports ``name`` from ``root`` in ``runs`` fresh processes (after one warm-up that
    writes the bytecode); medians in ms."""
    with tempfile.TemporaryDirectory(prefix="oxpyc_") as cache:
        env = _env(root, Path(cache))
        child = _CHILD.format(package=name, launch_only=LAUNCH_ONLY_MODULES)
        subprocess.run([sys.executable, "-c", child], env=env, check=True, capture_output=True, cwd=root)
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, cwd=root)
        imports: list[float] = []
        process: list[float] = []
        empty: list[float] = []
        loaded: set[str] = set()
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, cwd=root)
            empty.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", child], env=env, check=True, capture_output=True, text=True, cwd=root)
            process.append((time.perf_counter() - t) * 1e3)
            record = json.loads(out.stdout.strip().splitlines()[-1])
            imports.append(record["import_ms"])
            loaded.update(record["loaded"])
    return {
        "runs": runs,
        "import_ms": statistics.median(imports),
        "import_min_ms": min(imports),
        "import_max_ms": max(imports),
        "process_ms": statistics.median(process),
        "empty_process_ms": statistics.median(empty),
        "process_minus_empty_ms": statistics.median(process) - statistics.median(empty),
        "launch_modules_imported": sorted(loaded),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--out", type=Path, default=None, help="directory for import_time.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oximport_") as tmp:
        built = build_kernel_package(Path(tmp), kernels=args.kernels)
        result = measure_import(Path(tmp), runs=args.runs)
    payload = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
               "python": sys.version.split()[0], "kernels": args.kernels, "built": built, **result}  # fmt: skip
    print(f"import of a package of {args.kernels} kernels ({built}), {args.runs} fresh processes:")
    print(f"  import: median {result['import_ms']:.2f} ms [{result['import_min_ms']:.2f}..{result['import_max_ms']:.2f}]"
          f" (target {IMPORT_TARGET_MS:.0f} ms)")
    print(f"  whole process: {result['process_ms']:.1f} ms, python -c pass: {result['empty_process_ms']:.1f} ms")
    print(f"  launch-only modules imported: {', '.join(result['launch_modules_imported']) or 'none'}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "import_time.json").write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
