"""Cold start: a fresh Python process imports a package of precompiled oxide kernels and
launches one, against numba-cuda's first call (its compile included) in a fresh process.

Each child prints one JSON line of phase times measured inside it, and the parent adds the
process's whole wall time. Phases:

- ``import_ms``: importing the kernel package (oxide + ``oxcold.kernels``), or ``numba.cuda``
  and defining the ``@cuda.jit`` function;
- ``init_ms``: CUDA init, the context and three 4 MiB arrays copied from the host (the same
  for every library; a program that already uses the GPU has paid it);
- ``first_launch_ms``: the first launch and a synchronize (oxide: finding the manifest, loading
  the cubin; numba: compiling);
- ``import_plus_launch_ms``: import + first launch, the figure issue 5's target (≤ 50 ms) is
  about.

numpy is imported before the clock starts in both children. oxide's modules and the kernel
package are byte-compiled first, as ``pip install`` does for a wheel.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.env import subprocess_env

__all__ = ["COLD_START_TARGET_MS", "cold_start_benchmark", "OXIDE_CHILD", "NUMBA_CHILD"]

COLD_START_TARGET_MS = 50.0

OXIDE_CHILD = textwrap.dedent('''
    import json, time
    import numpy as np
    t0 = time.perf_counter()
    from oxcold.kernels import saxpy
    from oxide.runtime import DeviceArray
    t1 = time.perf_counter()
    n = 1 << 20
    rng = np.random.default_rng()
    xh = rng.standard_normal(n).astype(np.float32)
    yh = rng.standard_normal(n).astype(np.float32)
    x, y = DeviceArray.from_numpy(xh), DeviceArray.from_numpy(yh)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    t2 = time.perf_counter()
    saxpy[(n + 255) // 256, 256](2.0, x, y, out)
    from oxide.runtime import synchronize
    synchronize()
    t3 = time.perf_counter()
    ok = bool(np.allclose(out.to_numpy(), 2.0 * xh + yh, rtol=1e-5, atol=1e-5))
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "init_ms": (t2 - t1) * 1e3,
                      "first_launch_ms": (t3 - t2) * 1e3, "correct": ok}))
''')

NUMBA_CHILD = textwrap.dedent('''
    import json, time
    import numpy as np
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    t0 = time.perf_counter()
    from numba import cuda

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]

    t1 = time.perf_counter()
    n = 1 << 20
    rng = np.random.default_rng()
    xh = rng.standard_normal(n).astype(np.float32)
    yh = rng.standard_normal(n).astype(np.float32)
    x, y = cuda.to_device(xh), cuda.to_device(yh)
    out = cuda.to_device(np.full(n, np.nan, np.float32))
    t2 = time.perf_counter()
    saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y, out)
    cuda.synchronize()
    t3 = time.perf_counter()
    ok = bool(np.allclose(out.copy_to_host(), 2.0 * xh + yh, rtol=1e-5, atol=1e-5))
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "init_ms": (t2 - t1) * 1e3,
                      "first_launch_ms": (t3 - t2) * 1e3, "correct": ok}))
''')


REPO_OXIDE = Path(__file__).resolve().parent.parent / "oxide"


def _compile_bytecode(dirs: list[Path]) -> None:
    """Writes the ``.pyc`` files an installed wheel has (pip compiles at install time), so the
    child does not compile oxide's sources on every import (PYTHONDONTWRITEBYTECODE may be set)."""
    import compileall

    for d in dirs:
        compileall.compile_dir(str(d), quiet=1)


def _run_child(script: Path, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    wall = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    data = json.loads(line)
    if not data.get("correct"):
        raise AssertionError("the cold-start launch computed a wrong result")
    data["process_wall_ms"] = wall
    data["import_plus_launch_ms"] = data["import_ms"] + data["first_launch_ms"]
    return data


def _summary(name: str, samples: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    keys = ("import_ms", "init_ms", "first_launch_ms", "import_plus_launch_ms", "process_wall_ms")
    rec: dict[str, Any] = {"name": name, "status": "ok", "runs": len(samples), "notes": notes}
    for k in keys:
        vals = [s[k] for s in samples]
        rec[k] = statistics.median(vals)
        rec[k + "_min"] = min(vals)
        rec[k + "_max"] = max(vals)
    return rec


def cold_start_benchmark(arch: str, runs: int) -> list[dict[str, Any]]:
    """Median over ``runs`` fresh processes for oxide (precompiled) and numba-cuda (first call)."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="oxide-bench-cold-") as tmp:
        root = Path(tmp)
        # oxide
        try:
            from benchmarks.temp_packages import build_cold_package

            build_cold_package(root, arch)
            _compile_bytecode([REPO_OXIDE, root / "oxcold"])
            script = root / "oxide_child.py"
            script.write_text(OXIDE_CHILD)
            env = subprocess_env(OXIDE_JIT="0")
            env["PYTHONPATH"] = os.pathsep.join([str(root), env["PYTHONPATH"]])
            samples = [_run_child(script, root, env) for _ in range(runs)]
            rec = _summary("oxide (precompiled cubin)", samples, ["OXIDE_JIT=0: a missing or stale cubin fails"])
            rec["target_ms"] = COLD_START_TARGET_MS
            rec["met"] = rec["import_plus_launch_ms"] <= COLD_START_TARGET_MS
            results.append(rec)
        except Exception as e:
            results.append({"name": "oxide (precompiled cubin)", "status": "error", "error": f"{type(e).__name__}: {e}",
                            "traceback": traceback.format_exc(limit=6)[-2000:]})
        # numba-cuda
        try:
            script = root / "numba_child.py"
            script.write_text(NUMBA_CHILD)
            env = subprocess_env()
            samples = [_run_child(script, root, env) for _ in range(runs)]
            results.append(_summary("numba-cuda (first call compiles)", samples, ["no on-disk cache (cache=False)"]))
        except Exception as e:
            status = "skipped" if "No module named 'numba'" in str(e) else "error"
            results.append({"name": "numba-cuda (first call compiles)", "status": status,
                            "error": f"{type(e).__name__}: {str(e)[-600:]}"})
    for r in results:
        if r["status"] == "ok":
            print(f"  cold start {r['name']:<34} import+launch {r['import_plus_launch_ms']:7.1f} ms "
                  f"(import {r['import_ms']:.1f}, init {r['init_ms']:.1f}, first launch {r['first_launch_ms']:.1f}; "
                  f"process {r['process_wall_ms']:.0f} ms)", flush=True)
        else:
            print(f"  cold start {r['name']}: {r['status']}: {r.get('error', '')[:300]}", flush=True)
    return results
