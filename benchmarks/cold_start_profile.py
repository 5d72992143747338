"""Where the cold start's milliseconds go, step by step (issue 28 item 5), for the GPU host.

    python benchmarks/cold_start_profile.py [--runs 7] [--arch sm_90] [--fake] [--json PATH]

``benchmarks/cold_start.py`` gives three figures per fresh process (import, CUDA init + arrays,
first launch); this runs the same oxide child (the precompiled ``oxcold`` package, OXIDE_JIT=0)
and splits each phase into its steps, median over ``--runs`` fresh processes:

- **import**: ``import oxide``, then the rest of ``import oxcold.kernels``, then
  ``from oxide.runtime import DeviceArray``; each module imported (its own time, as
  ``python -X importtime`` counts it, the finder's search included) under the phase;
- **init** (not in the benchmark's import + launch): ``import cuda.bindings.driver``, then every
  driver call of ``DeviceArray.from_numpy`` for the three arrays (cuInit, the primary context,
  allocations, copies);
- **launch**: the first ``saxpy[grid, 256](...)`` and ``oxide.runtime.synchronize()``: each driver
  call it makes (module load, get function, the error record's registration, the launch,
  cuCtxSynchronize), each module it imports, and the rest (oxide's own Python: manifest,
  dispatch table, argument checks) as ``python``; then the second launch, for comparison.

Each driver call is timed through a proxy in front of ``cuda.bindings.driver`` (a Python call
around each: ~1 µs, noted in the totals). The GPU run also times a **floor** child: the same
cubin loaded and launched with bare ``cuda.bindings`` calls, once with ``cuModuleLoadData`` +
``cuModuleGetFunction`` and once with ``cuLibraryLoadData`` + ``cuLibraryGetKernel`` +
``cuKernelGetFunction`` (the context-independent API), with the driver's module loading mode
(``cuModuleGetLoadingMode``: LAZY is the default since CUDA 12.2, ``CUDA_MODULE_LOADING``), so
what the driver itself costs is apart from what oxide adds.

``--fake``: no GPU; ``tests/fakes.py``'s ``CFakeDriver`` stands in (as in
``benchmarks/cold_start_host.py``) and the init phase makes fake arrays; the floor is skipped.
tests/test_cold_start.py runs it that way.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.env import REPO  # noqa: E402

__all__ = ["PROFILE_CHILD", "FLOOR_CHILD", "profile_cold_start", "format_profile"]

# What the oxide child and the floor child share: the import timer and the driver proxy.
_TIMERS = '''
import json, sys, time
clock = time.perf_counter
phase = ["-"]
steps = []  # [phase, kind, name, ms]
_stack = []  # [name, start, time of the imports under it]

import _frozen_importlib as _bootstrap
_find_and_load = _bootstrap._find_and_load


def _timed_find_and_load(name, import_):
    # only imports that load a module reach here (a module already imported is found in
    # sys.modules first); its own time, the imports it makes taken out (-X importtime's "self")
    if name in sys.modules:  # from-list imports of loaded modules: nothing loaded, not counted
        return _find_and_load(name, import_)
    _stack.append([name, clock(), 0.0])
    try:
        return _find_and_load(name, import_)
    finally:
        name, start, inner = _stack.pop()
        total = clock() - start
        if _stack:
            _stack[-1][2] += total
        steps.append([phase[0], "import", name, (total - inner) * 1e3])


import gc
_gc_start = [0.0]


def _gc_timer(stage, info):
    # the cycle collector's runs: a phase that allocates enough starts one (a full one scans
    # every object numpy, cuda.bindings and oxide made)
    if stage == "start":
        _gc_start[0] = clock()
    else:
        steps.append([phase[0], "gc", f"collection of generation {info['generation']}", (clock() - _gc_start[0]) * 1e3])


gc.callbacks.append(_gc_timer)


class TimedDriver:
    """Forwards to a driver module; each ``cu*`` call is recorded with its wall time."""

    def __init__(self, drv):
        self._drv = drv
        self.__name__ = getattr(drv, "__name__", type(drv).__name__)

    def __getattr__(self, name):
        value = getattr(self._drv, name)
        if name.startswith("cu") and callable(value):
            def timed(*args, _call=value, _name=name):
                start = clock()
                try:
                    return _call(*args)
                finally:
                    steps.append([phase[0], "driver", _name, (clock() - start) * 1e3])
            value = timed
        setattr(self, name, value)  # found directly next time
        return value
'''

PROFILE_CHILD = _TIMERS + textwrap.dedent('''
    repo, fake = sys.argv[1], sys.argv[2] == "1"
    sys.path.insert(0, repo)
    import numpy as np
    if fake:
        import types
        base = set(json.load(open(sys.argv[3])))
        sys.modules["hashlib"] = types.ModuleType("hashlib")  # as cold_start_host.py: OpenSSL stays out
        from tests import fakes
        del sys.modules["hashlib"]
        fake_drv = fakes.CFakeDriver()
        for name in [m for m in sys.modules if m not in base]:
            del sys.modules[name]
    _bootstrap._find_and_load = _timed_find_and_load
    totals = {}

    def timed(phase_name, what, fn):
        phase[0] = phase_name
        start = clock()
        result = fn()
        ms = (clock() - start) * 1e3
        steps.append([phase_name, "step", what, ms])
        totals[phase_name] = totals.get(phase_name, 0.0) + ms
        return result

    def import_package():
        import oxcold.kernels
        return oxcold.kernels

    timed("import", "import oxide", lambda: __import__("oxide"))
    kernels = timed("import", "import oxcold.kernels", import_package)
    timed("import", "from oxide.runtime import DeviceArray", lambda: __import__("oxide.runtime", fromlist=["DeviceArray"]))
    saxpy = kernels.saxpy
    from oxide.runtime import DeviceArray, device  # imported by the step before

    n = 1 << 20
    if fake:
        drv = TimedDriver(fake_drv)
        device._import_bindings = lambda: drv
        fake_drv.signatures["saxpy_f32"] = ["f32", "u64", "u64", "u64", "i64"]
        xh = yh = None
        x, y, out = fakes.FakeArray(4), fakes.FakeArray(4), fakes.FakeArray(4)  # 1 MiB apart
    else:
        def import_bindings():
            from cuda.bindings import driver as real
            return real
        drv = TimedDriver(timed("init", "import cuda.bindings.driver", import_bindings))
        drv.__name__ = "cuda.bindings.driver"  # the C launcher takes its entry points from it
        device._import_bindings = lambda: drv
        rng = np.random.default_rng()
        xh = rng.standard_normal(n).astype(np.float32)
        yh = rng.standard_normal(n).astype(np.float32)
        x, y, out = timed("init", "DeviceArray.from_numpy x3 (cuInit, context, copies)", lambda: (
            DeviceArray.from_numpy(xh), DeviceArray.from_numpy(yh), DeviceArray.from_numpy(np.full(n, np.nan, np.float32))))

    def first_launch():  # as cold_start.py's child: the import of synchronize is in it
        saxpy[(n + 255) // 256, 256](2.0, x, y, out)
        from oxide.runtime import synchronize
        synchronize()

    timed("launch", "first launch + synchronize", first_launch)
    timed("second", "second launch + synchronize", first_launch)
    _bootstrap._find_and_load = _find_and_load
    if fake:
        assert [launch["fn"] for launch in fake_drv.launches] == ["saxpy_f32"] * 2, fake_drv.launches
        ok = True
        mode = None
    else:
        ok = bool(np.allclose(out.to_numpy(), 2.0 * xh + yh, rtol=1e-5, atol=1e-5))
        err, mode = drv._drv.cuModuleGetLoadingMode()
        mode = getattr(mode, "name", str(mode)) if int(err) == 0 else f"unknown (CUresult {int(err)})"
    print(json.dumps({"steps": steps, "totals": totals, "correct": ok, "loading_mode": mode,
                      "CUDA_MODULE_LOADING": __import__("os").environ.get("CUDA_MODULE_LOADING")}))
''')

# The driver alone: the cubin loaded and saxpy_f32 launched with bare cuda.bindings calls, in a
# fresh process, once through a CUmodule and once through a CUlibrary (argv[3]).
FLOOR_CHILD = _TIMERS + textwrap.dedent('''
    cubin_path, manifest_path, api = sys.argv[1], sys.argv[2], sys.argv[3]
    import ctypes, struct
    import numpy as np
    phase[0] = "floor"

    def step(name, fn):
        start = clock()
        result = fn()
        steps.append(["floor", "step", name, (clock() - start) * 1e3])
        return result

    def check(result, what):
        err = result[0]
        if int(err) != 0:
            raise SystemExit(f"{what}: CUresult {int(err)}")
        return result[1] if len(result) == 2 else result[1:]

    symbol = next(k["symbol"] for k in json.load(open(manifest_path))["kernels"] if k["name"] == "saxpy")
    real = step("import cuda.bindings.driver", lambda: __import__("cuda.bindings.driver", fromlist=["x"]))
    drv = TimedDriver(real)
    check(drv.cuInit(0), "cuInit")
    dev = check(drv.cuDeviceGet(0), "cuDeviceGet")
    ctx = check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    n = 1 << 20
    nbytes = 4 * n
    xh = np.ones(n, np.float32)
    ptrs = [int(check(drv.cuMemAlloc(nbytes), "cuMemAlloc")) for _ in range(3)]
    for p in ptrs:
        check(drv.cuMemcpyHtoD(p, xh.ctypes.data, nbytes), "cuMemcpyHtoD")
    phase[0] = "launch"
    launch_start = clock()
    image = open(cubin_path, "rb").read()
    steps.append(["launch", "file", "read the cubin", (clock() - launch_start) * 1e3])
    if api == "module":
        mod = check(drv.cuModuleLoadData(image), "cuModuleLoadData")
        fn = check(drv.cuModuleGetFunction(mod, symbol.encode()), "cuModuleGetFunction")
    else:
        lib = check(drv.cuLibraryLoadData(image, None, None, 0, None, None, 0), "cuLibraryLoadData")
        kern = check(drv.cuLibraryGetKernel(lib, symbol.encode()), "cuLibraryGetKernel")
        fn = check(drv.cuKernelGetFunction(kern), "cuKernelGetFunction")
    # the entry point's parameters (param_slots [0, 1, 3, 5, 6] of a, x, y, out): a, x, y, out, len(out)
    values = [ctypes.c_float(2.0), ctypes.c_uint64(ptrs[0]), ctypes.c_uint64(ptrs[1]), ctypes.c_uint64(ptrs[2]),
              ctypes.c_int64(n)]
    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    check(drv.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, 0, ctypes.addressof(pointers), 0),
          "cuLaunchKernel")
    check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
    steps.append(["launch", "step", f"read, load ({api}), get function, launch, synchronize",
                  (clock() - launch_start) * 1e3])
    out = np.empty(n, np.float32)
    check(drv.cuMemcpyDtoH(out.ctypes.data, ptrs[2], nbytes), "cuMemcpyDtoH")
    err, mode = real.cuModuleGetLoadingMode()
    print(json.dumps({"steps": steps, "correct": bool(np.allclose(out, 3.0)),
                      "loading_mode": getattr(mode, "name", str(mode)) if int(err) == 0 else None}))
''')


def _run(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"profile child failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-2000:]}")
    data: dict[str, Any] = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    return data


def _medians(samples: list[dict[str, Any]]) -> list[tuple[str, str, str, float, int]]:
    """(phase, kind, name, median ms over the runs, calls per run) of every step, in the
    first run's order; a step a run lacks counts 0 there."""
    order: list[tuple[str, str, str]] = []
    per_run: list[dict[tuple[str, str, str], tuple[float, int]]] = []
    for s in samples:
        sums: dict[tuple[str, str, str], tuple[float, int]] = {}
        for ph, kind, name, ms in s["steps"]:
            key = (ph, kind, name)
            if key not in sums and key not in order:
                order.append(key)
            total, count = sums.get(key, (0.0, 0))
            sums[key] = (total + ms, count + 1)
        per_run.append(sums)
    rows = []
    for key in order:
        values = [r.get(key, (0.0, 0)) for r in per_run]
        rows.append((*key, statistics.median(v[0] for v in values), max(v[1] for v in values)))
    return rows


def format_profile(rec: dict[str, Any]) -> str:
    """The breakdown as text: per phase its steps, driver calls, imports and the rest."""
    lines = [f"cold start profile ({rec['driver']}, median of {rec['runs']} fresh processes, ms; "
             f"module loading mode {rec.get('loading_mode')}, CUDA_MODULE_LOADING={rec.get('CUDA_MODULE_LOADING')})"]
    rows = rec["rows"]
    for ph in ("import", "init", "launch", "second", "floor-module", "floor-library"):
        mine = [r for r in rows if r[0] == ph]
        if not mine:
            continue
        step_ms = sum(r[3] for r in mine if r[1] == "step")
        lines.append(f"{ph}: {step_ms:.3f} ms")
        for kind in ("step", "driver", "file", "import", "gc"):
            of_kind = sorted((r for r in mine if r[1] == kind), key=lambda r: -r[3]) if kind == "import" else \
                [r for r in mine if r[1] == kind]
            if not of_kind:
                continue
            total = sum(r[3] for r in of_kind)
            if kind != "step":
                inside = " (inside the times of the imports or calls it ran in)" if kind == "gc" else ""
                lines.append(f"  {kind}s: {total:.3f} ms in {sum(r[4] for r in of_kind)}{inside}")
            shown = of_kind if kind != "import" else of_kind[:25]
            for _, _, name, ms, count in shown:
                lines.append(f"    {name:<58} {ms:8.3f}" + (f"  ({count} calls)" if count > 1 else ""))
            if len(of_kind) > len(shown):
                lines.append(f"    ... {len(of_kind) - len(shown)} more: {sum(r[3] for r in of_kind[len(shown):]):.3f} ms")
        if ph in ("launch", "second", "import", "init"):
            driver_ms = sum(r[3] for r in mine if r[1] == "driver")
            import_ms = sum(r[3] for r in mine if r[1] == "import")
            lines.append(f"  python (the rest): {step_ms - driver_ms - import_ms:.3f} ms")
    if rec.get("floor_error"):
        lines.append(f"floor: {rec['floor_error']}")
    return "\n".join(lines)


def profile_cold_start(runs: int, arch: str = "sm_90", fake: bool = False) -> dict[str, Any]:
    from benchmarks.cold_start import REPO_OXIDE, _compile_bytecode
    from benchmarks.temp_packages import build_cold_package

    with tempfile.TemporaryDirectory(prefix="oxide-bench-cold-profile-") as tmp:
        root = Path(tmp)
        build_cold_package(root, arch)
        manifest = root / "oxcold" / "_oxide" / "oxcold.kernels.json"
        _compile_bytecode([REPO_OXIDE, root / "oxcold"])
        env = dict(os.environ, OXIDE_JIT="0", OXIDE_DEVICE="cuda")
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(REPO)])
        (root / "profile_child.py").write_text(PROFILE_CHILD)
        args = [str(root / "profile_child.py"), str(REPO), "1" if fake else "0"]
        if fake:
            base = root / "base_modules.json"
            subprocess.run([sys.executable, "-c", "import json, sys, numpy, cuda.bindings.driver; "
                            f"json.dump(sorted(sys.modules), open({str(base)!r}, 'w'))"], check=True)
            args.append(str(base))
        samples = [_run(args, env, root) for _ in range(runs)]
        if not all(s["correct"] for s in samples):
            raise AssertionError("the profiled cold-start launch computed a wrong result")
        rec: dict[str, Any] = {"driver": "fake driver (tests/fakes.py)" if fake else "cuda.bindings",
                               "runs": runs, "loading_mode": samples[0]["loading_mode"],
                               "CUDA_MODULE_LOADING": samples[0]["CUDA_MODULE_LOADING"]}
        rows = _medians(samples)
        if not fake:
            (root / "floor_child.py").write_text(FLOOR_CHILD)
            cubin = manifest.parent / f"oxcold.kernels.{arch}.cubin"
            try:
                for api in ("module", "library"):
                    floors = [_run([str(root / "floor_child.py"), str(cubin), str(manifest), api], env, root)
                              for _ in range(runs)]
                    if not all(f["correct"] for f in floors):
                        raise AssertionError(f"the floor's launch ({api}) computed a wrong result")
                    for f in floors:  # its launch phase under the API's name; its set-up is left out
                        f["steps"] = [[f"floor-{api}", *st[1:]] for st in f["steps"] if st[0] == "launch"]
                    rows += _medians(floors)
            except Exception as e:  # the oxide breakdown is still worth printing
                rec["floor_error"] = f"{type(e).__name__}: {str(e)[-800:]}"
        rec["rows"] = rows
        rec["samples"] = samples
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="fresh processes (median)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--fake", action="store_true", help="no GPU: tests/fakes.py's driver stands in")
    ap.add_argument("--json", type=Path, help="also write the steps of every run here")
    args = ap.parse_args()
    rec = profile_cold_start(args.runs, args.arch, args.fake)
    print(format_profile(rec))
    if args.json:
        args.json.write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
