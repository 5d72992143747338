"""Cold start without a GPU: the host CPU time of ``benchmarks/cold_start.py``'s oxide child
(import the precompiled ``oxcold`` package, first launch of ``saxpy``) against the tests' fake
driver, for work on issue 28's cold-start item on a machine without a GPU.

    python -m benchmarks.cold_start_host [--runs 15] [--arch sm_90] [--profile]

Each child process loads ``tests/fakes.py`` (``CFakeDriver``: the C launcher's set-up runs
too), then drops from ``sys.modules`` everything a process with numpy and ``cuda.bindings.driver``
imported would not have (the GPU run's child has both before its first launch: numpy before
the clock, the bindings in its CUDA init), so the import and the first launch import what they
would import on the GPU. ``hashlib`` is kept out of the fakes' import: OpenSSL's library, once
loaded, stays loaded. Times are the child thread's CPU time (``time.thread_time``), the median
over fresh processes; the fake driver's own calls are in the first launch (they are cheap).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.env import REPO

__all__ = ["HOST_CHILD", "cold_start_host"]

HOST_CHILD = textwrap.dedent('''
    import json, sys, time, types
    repo, base_file, profile = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    sys.path.insert(0, repo)
    import numpy as np
    sys.modules["hashlib"] = types.ModuleType("hashlib")  # the fakes import it; see the docstring
    from tests import fakes
    del sys.modules["hashlib"]
    drv = fakes.CFakeDriver()
    base = set(json.load(open(base_file)))
    for name in [m for m in sys.modules if m not in base]:
        del sys.modules[name]
    if profile:
        import cProfile
        prof = cProfile.Profile()
    import gc
    collections = []
    gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
    t0 = time.thread_time()
    if profile: prof.enable()
    from oxcold.kernels import saxpy
    from oxide.runtime import DeviceArray
    if profile: prof.disable()
    t1 = time.thread_time()
    from oxide.runtime import device
    device._import_bindings = lambda: drv
    drv.signatures["saxpy_f32"] = ["f32", "u64", "u64", "u64", "i64"]  # the entry point's slots
    x, y, out = fakes.FakeArray(4), fakes.FakeArray(4), fakes.FakeArray(4)
    t2 = time.thread_time()
    if profile: prof.enable()
    saxpy[1, 256](2.0, x, y, out)
    from oxide.runtime import synchronize
    synchronize()
    if profile: prof.disable()
    t3 = time.thread_time()
    assert [launch["fn"] for launch in drv.launches] == ["saxpy_f32"], drv.launches
    if profile:
        import pstats
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_launch_ms": (t3 - t2) * 1e3,
                      "collections": len(collections), "old_collections": sum(g > 0 for g in collections)}))
''')


def cold_start_host(runs: int, arch: str = "sm_90", profile: bool = False) -> dict[str, float]:
    """Medians over ``runs`` fresh processes of the import and the first launch, host CPU ms."""
    from benchmarks.cold_start import REPO_OXIDE, _compile_bytecode
    from benchmarks.temp_packages import build_cold_package

    with tempfile.TemporaryDirectory(prefix="oxide-bench-cold-host-") as tmp:
        root = Path(tmp)
        build_cold_package(root, arch)
        _compile_bytecode([REPO_OXIDE, root / "oxcold"])
        base = root / "base_modules.json"
        subprocess.run([sys.executable, "-c", "import json, sys, numpy, cuda.bindings.driver; "
                        f"json.dump(sorted(sys.modules), open({str(base)!r}, 'w'))"], check=True)
        script = root / "host_child.py"
        script.write_text(HOST_CHILD)
        env = dict(os.environ, OXIDE_JIT="0", OXIDE_DEVICE="cuda")
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(REPO)])
        samples = []
        for _ in range(1 if profile else runs):
            proc = subprocess.run([sys.executable, str(script), str(REPO), str(base), "1" if profile else "0"],
                                  cwd=root, env=env, capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise RuntimeError(f"cold-start child failed: {proc.stderr[-2000:]}")
            if profile:
                print(proc.stderr)
            samples.append(json.loads(proc.stdout.splitlines()[-1]))
    rec = {k: statistics.median(s[k] for s in samples) for k in ("import_ms", "first_launch_ms")}
    rec["import_plus_launch_ms"] = statistics.median(s["import_ms"] + s["first_launch_ms"] for s in samples)
    for k in ("collections", "old_collections"):  # the cycle collector's runs (older generations: 1 and 2)
        rec[k] = statistics.median(s[k] for s in samples)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="fresh processes (median)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--profile", action="store_true", help="one child under cProfile, its profile printed")
    args = ap.parse_args()
    rec = cold_start_host(args.runs, args.arch, args.profile)
    print(f"cold start, fake driver, host CPU: import {rec['import_ms']:.2f} ms, first launch "
          f"{rec['first_launch_ms']:.2f} ms, import + launch {rec['import_plus_launch_ms']:.2f} ms; "
          f"{rec['collections']:g} cycle collections, {rec['old_collections']:g} of older generations "
          f"(median of {1 if args.profile else args.runs})")


if __name__ == "__main__":
    main()
