"""The ports benchmark: public CUDA kernels ported to oxide, each timed against its original
compiled by nvcc in the same run.

The corpus is ``benchmarks/ports_cases.py``: for each kernel the oxide port
(``tests/packages/ports/port_<name>.py``, written line by line from the original), the original's
CUDA C++ (``benchmarks/ports_cuda/<name>.cu``, as its public source has it), the original's nvcc
flags, inputs at the original's benchmark size, and the launches of one run (the same grid,
block, shared memory and arguments on both sides).

For each case:

1. every original is built with ``nvcc -O3 -arch=<device arch> -cubin`` plus its own flags
   (``--use_fast_math`` where its build uses it), all at once, one job per CPU; every port is
   compiled by oxide three ways at the same time: bounds checks on (the default), off, and, where
   the original uses fast math, both with ``fast-math`` on (the figure then compares like with like);
2. the original runs first and its outputs are the reference; each oxide variant then runs on the
   same inputs, outputs poisoned first, and must match (``rtol``/``atol`` per case, exact for
   integers) before it is timed;
3. the original and the oxide variants are timed round-robin (``benchmarks.timing``: CUDA events,
   a GPU sleep before each run so host overhead stays out), and the median of each is kept.

``ratio`` is the original's time over oxide's (> 1: oxide faster); the geomeans over the corpus are
with bounds checks on and off. The CUDA side is loaded and launched through the driver API
(``cuda.bindings``: ``cuModuleLoadData``, ``cuLaunchKernel``, ``cuLaunchCooperativeKernel`` for a
grid-wide barrier), on the legacy default stream that oxide and torch use too.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.env import REPO, Unavailable

__all__ = [
    "PORTS_DIR", "CUDA_DIR", "Case", "Spec", "signed_view", "Side", "OxideSide", "CudaSide", "build_originals", "build_ports",
    "run_ports", "ports_table", "render_ports_markdown", "geomean", "main",
]

PORTS_DIR = REPO / "tests" / "packages" / "ports"
CUDA_DIR = REPO / "benchmarks" / "ports_cuda"
NVCC_BASE = ("-O3", "-std=c++17", "-cubin")


# ---- a case ---------------------------------------------------------------------------------------

class Side:
    """One implementation of a case: ``launch`` runs one of its kernels."""

    name: str

    def launch(self, kernel: str, grid: int | tuple[int, ...], block: int | tuple[int, ...], args: Sequence[Any],
               shared: int = 0, constexprs: Sequence[Any] = (), symbol: str | None = None) -> None:
        raise NotImplementedError

    def write_constant(self, oxide_name: str, cuda_name: str, oxide_value: np.ndarray,
                       cuda_value: np.ndarray | None = None) -> None:
        raise NotImplementedError


@dataclass
class Case:
    """One kernel of the corpus, set up with its inputs.

    ``body(side)`` launches one run (one or more kernels) on either side; ``reset()`` restores the
    inputs a run changes and poisons the outputs; ``outputs()`` are the tensors compared after a
    run; ``compare`` replaces the elementwise comparison where the result is not unique (the
    order of a stream compaction). ``per_run``: what each timed run does first, on both sides
    alike (a run that consumes its input, like a BFS, restores it; a compaction zeroes its count).
    """

    size: str
    body: Callable[[Side], None]
    reset: Callable[[], None]
    outputs: Callable[[], list[Any]]
    rtol: float = 1e-5
    atol: float = 1e-5
    compare: Callable[[list[Any], list[Any]], None] | None = None
    per_run: Callable[[], None] | None = None
    notes: tuple[str, ...] = ()
    cooperative: tuple[str, ...] = ()  # kernels launched cooperatively (they hold a grid-wide barrier)
    prepare: Callable[[Side], None] | None = None  # once per side before its first run: __constant__ tables


@dataclass(frozen=True)
class Spec:
    """A corpus entry: ``make(torch, rng)`` builds its Case."""

    name: str
    source: str            # where the original comes from (repository, file, kernel)
    origin: str            # "tests/packages/ports" (first corpus) or "new"
    make: Callable[[Any, np.random.Generator], Case]
    nvcc_flags: tuple[str, ...] = ()  # the original's own flags, --use_fast_math included where it has it
    fast_math: bool = False  # oxide's fast-math: where the original builds with --use_fast_math or
    # calls the fast intrinsics (__expf, __fdividef, ...) itself

    @property
    def cu(self) -> Path:
        return CUDA_DIR / f"{self.name}.cu"

    @property
    def port(self) -> Path:
        return PORTS_DIR / f"port_{self.name}.py"


# ---- the CUDA side: nvcc cubins through the driver API -------------------------------------------

_CTYPES = {
    np.int8: ctypes.c_int8, np.uint8: ctypes.c_uint8, np.int16: ctypes.c_int16, np.uint16: ctypes.c_uint16,
    np.int32: ctypes.c_int32, np.uint32: ctypes.c_uint32, np.int64: ctypes.c_int64, np.uint64: ctypes.c_uint64,
    np.float32: ctypes.c_float, np.float64: ctypes.c_double, np.bool_: ctypes.c_bool,
}


def _check(result: Any) -> Any:
    err = result[0]
    if int(err) != 0:
        from cuda.bindings import driver

        _, name = driver.cuGetErrorName(err)
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if isinstance(name, bytes) else name}")
    return result[1] if len(result) == 2 else result[1:]


def kernel_symbols(cubin: bytes) -> list[str]:
    """The kernels of a cubin: the names of its ``.text.<name>`` sections."""
    return sorted({m.decode() for m in re.findall(rb"\.text\.([A-Za-z_][A-Za-z0-9_$]*)\x00", cubin)})


def resolve_symbol(name: str, symbols: Sequence[str]) -> str:
    """``name`` itself (``extern "C"`` or an exact mangled name), or the one C++ kernel of that
    name (``_Z<len><name>...``)."""
    if name in symbols:
        return name
    mangled = [s for s in symbols if s.startswith(f"_Z{len(name)}{name}")]
    if len(mangled) == 1:
        return mangled[0]
    raise KeyError(f"kernel {name!r}: {'several' if mangled else 'no'} matching symbols in {list(symbols)}")


class CudaSide(Side):
    """The original: its cubin loaded into the current context, launched with ``cuLaunchKernel``."""

    name = "cuda"

    def __init__(self, cubin: bytes, cooperative: Sequence[str] = ()) -> None:
        from cuda.bindings import driver

        self._driver = driver
        self.symbols = kernel_symbols(cubin)
        self.module = _check(driver.cuModuleLoadData(cubin))
        self._functions: dict[str, Any] = {}
        self.cooperative = set(cooperative)

    def function(self, kernel: str, symbol: str | None) -> Any:
        key = symbol or kernel
        fn = self._functions.get(key)
        if fn is None:
            fn = _check(self._driver.cuModuleGetFunction(self.module, resolve_symbol(key, self.symbols).encode()))
            self._functions[key] = fn
        return fn

    def launch(self, kernel: str, grid: int | tuple[int, ...], block: int | tuple[int, ...], args: Sequence[Any],
               shared: int = 0, constexprs: Sequence[Any] = (), symbol: str | None = None) -> None:
        fn = self.function(kernel, symbol)
        g = (tuple(grid) if isinstance(grid, tuple) else (grid,)) + (1, 1)
        b = (tuple(block) if isinstance(block, tuple) else (block,)) + (1, 1)
        values: list[Any] = []
        types: list[Any] = []
        for a in args:
            if hasattr(a, "data_ptr"):
                values.append(a.data_ptr())
                types.append(ctypes.c_void_p)
            else:
                ctype = _CTYPES.get(type(a))
                if ctype is None:
                    raise TypeError(f"{kernel}: argument {a!r} needs a NumPy scalar type (its C type)")
                values.append(a.item())
                types.append(ctype)
        if shared > 48 * 1024:
            _check(self._driver.cuFuncSetAttribute(
                fn, self._driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared))
        launch = self._driver.cuLaunchCooperativeKernel if kernel in self.cooperative else self._driver.cuLaunchKernel
        extra = () if kernel in self.cooperative else (0,)
        _check(launch(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, (tuple(values), tuple(types)), *extra))

    def write_constant(self, oxide_name: str, cuda_name: str, oxide_value: np.ndarray,
                       cuda_value: np.ndarray | None = None) -> None:
        value = np.ascontiguousarray(oxide_value if cuda_value is None else cuda_value)
        ptr, size = _check(self._driver.cuModuleGetGlobal(self.module, cuda_name.encode()))
        if int(size) != value.nbytes:
            raise ValueError(f"__constant__ {cuda_name}: {int(size)} bytes, the table has {value.nbytes}")
        _check(self._driver.cuMemcpyHtoD(ptr, value, value.nbytes))


class OxideSide(Side):
    """A port, compiled one way (bounds checks on or off, fast math or not)."""

    def __init__(self, name: str, module: ModuleType) -> None:
        self.name = name
        self.module = module
        self._configured: dict[tuple[Any, ...], Any] = {}

    def launch(self, kernel: str, grid: int | tuple[int, ...], block: int | tuple[int, ...], args: Sequence[Any],
               shared: int = 0, constexprs: Sequence[Any] = (), symbol: str | None = None) -> None:
        key = (kernel, grid, block, shared)
        k = self._configured.get(key)
        if k is None:
            k = getattr(self.module, kernel)[grid, block, None, shared] if shared else \
                getattr(self.module, kernel)[grid, block]
            self._configured[key] = k
        k(*args, *constexprs)

    def write_constant(self, oxide_name: str, cuda_name: str, oxide_value: np.ndarray,
                       cuda_value: np.ndarray | None = None) -> None:
        getattr(self.module, oxide_name).write(np.ascontiguousarray(oxide_value))


# ---- building ------------------------------------------------------------------------------------

def find_nvcc() -> str:
    nvcc = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).exists()), None)
    if nvcc is None:
        raise Unavailable("nvcc is not on PATH: the ports benchmark builds each original with nvcc")
    return nvcc


def nvcc_version() -> str:
    try:
        proc = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True, timeout=30)
        return proc.stdout.strip().splitlines()[-2] if proc.returncode == 0 else "?"
    except (OSError, subprocess.SubprocessError, Unavailable, IndexError):
        return "?"


def nvcc_command(nvcc: str, spec: Spec, arch: str, out: Path) -> list[str]:
    flags = list(NVCC_BASE) + [f"-arch={arch}"] + list(spec.nvcc_flags)
    return [nvcc, *flags, "-o", str(out), str(spec.cu)]


def _nvcc_one(cmd: list[str]) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t0, proc.stderr[-3000:], proc.returncode


def build_originals(specs: Sequence[Spec], arch: str, out: Path, jobs: int) -> dict[str, Any]:
    """Every original built by nvcc at once; name -> cubin path, or an Exception."""
    nvcc = find_nvcc()
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Any] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {s.name: pool.submit(_nvcc_one, nvcc_command(nvcc, s, arch, out / f"{s.name}.cubin"))
                   for s in specs}
        for name, fut in futures.items():
            seconds, stderr, rc = fut.result()
            built[name] = out / f"{name}.cubin" if rc == 0 else RuntimeError(f"nvcc failed ({rc}): {stderr}")
    return built


@dataclass(frozen=True)
class Variant:
    label: str          # "oxide" (checked), "oxide_unchecked"
    bounds_check: bool


VARIANTS = (Variant("oxide", True), Variant("oxide_unchecked", False))


def _compile_port(source: str, root: str, module: str, arch: str, bounds_check: bool, fast_math: bool) -> str:
    """Runs in a worker process: compiles one port one way, writes its artifacts beside it."""
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    options = CompileOptions(archs=(arch,), bounds_check=bounds_check, fast_math=fast_math)
    compiled = compile_module(Path(source), module, options, root=Path(root))
    return str(write_module_artifacts(compiled, Path(source).parent))


def variant_module(spec: Spec, variant: Variant) -> str:
    return f"oxport_{spec.name}_{'checked' if variant.bounds_check else 'unchecked'}"


def build_ports(specs: Sequence[Spec], arch: str, root: Path, jobs: int) -> dict[tuple[str, str], Any]:
    """Each port compiled each way into ``root`` (a module per variant); (name, label) -> module
    name, or an Exception."""
    root.mkdir(parents=True, exist_ok=True)
    result: dict[tuple[str, str], Any] = {}
    ctx = __import__("multiprocessing").get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {}
        for s in specs:
            for v in VARIANTS:
                mod = variant_module(s, v)
                src = root / f"{mod}.py"
                src.write_text(s.port.read_text())
                futures[(s.name, v.label)] = (mod, pool.submit(_compile_port, str(src), str(root), mod, arch,
                                                                v.bounds_check, s.fast_math))
        for key, (mod, fut) in futures.items():
            try:
                fut.result()
                result[key] = mod
            except Exception as e:
                result[key] = e
    return result


# ---- checking and timing -------------------------------------------------------------------------

def signed_view(torch: Any, t: Any) -> Any:
    """``t`` as the signed integer type of its width (torch implements few operations on uint32
    and uint64 tensors); other tensors as they are."""
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}.get(t.dtype)
    return t.view(signed) if signed is not None else t


def compare_outputs(torch: Any, got: list[Any], ref: list[Any], rtol: float, atol: float, what: str) -> None:
    for k, (g, r) in enumerate(zip(got, ref)):
        if g.shape != r.shape or g.dtype != r.dtype:
            raise AssertionError(f"{what}: output {k} is {tuple(g.shape)} {g.dtype}, expected {tuple(r.shape)} {r.dtype}")
        g, r = signed_view(torch, g), signed_view(torch, r)
        if not g.dtype.is_floating_point:
            if not torch.equal(g, r):
                bad = int((g != r).sum())
                idx = int(torch.nonzero((g != r).flatten())[0])
                raise AssertionError(f"{what}: output {k}: {bad} of {g.numel()} elements differ; first at {idx}: "
                                     f"{g.flatten()[idx].item()} vs {r.flatten()[idx].item()}")
            continue
        g64, r64 = g.double(), r.double()
        finite = torch.isfinite(r64)
        if not bool((torch.isfinite(g64) == finite).all()):
            raise AssertionError(f"{what}: output {k}: {int((torch.isfinite(g64) != finite).sum())} elements "
                                 "not finite where the original's are (or the other way)")
        err = (g64 - r64).abs().where(finite, torch.zeros_like(g64))
        tol = atol + rtol * r64.abs().where(finite, torch.zeros_like(r64))
        if not bool((err <= tol).all()):
            idx = int(torch.argmax(err - tol))
            raise AssertionError(f"{what}: output {k}: {int((err > tol).sum())} of {g.numel()} elements off; worst "
                                 f"at {idx}: {g64.flatten()[idx].item()!r} vs {r64.flatten()[idx].item()!r}")


def geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def run_case(torch: Any, timer: Any, spec: Spec, cubin: Any, modules: dict[str, Any], runs: int,
             seed: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"name": spec.name, "source": spec.source, "origin": spec.origin,
                           "nvcc_flags": list(NVCC_BASE) + list(spec.nvcc_flags),
                           "fast_math": spec.fast_math, "impls": {}}
    if isinstance(cubin, Exception):
        rec["status"] = "error"
        rec["error"] = f"original: {cubin}"
        return rec
    rng = np.random.default_rng(seed)
    case = spec.make(torch, rng)
    rec["size"] = case.size
    rec["notes"] = list(case.notes)
    cuda = CudaSide(Path(cubin).read_bytes(), cooperative=case.cooperative)
    if case.prepare is not None:
        case.prepare(cuda)
    case.reset()
    case.body(cuda)
    torch.cuda.synchronize()
    ref = [o.clone() for o in case.outputs()]
    runners: dict[str, Callable[[], None]] = {}

    def runner(side: Side) -> Callable[[], None]:
        before = case.per_run
        if before is not None:
            def run() -> None:
                before()
                case.body(side)
            return run
        return lambda: case.body(side)

    runners["cuda"] = runner(cuda)
    for label, mod in modules.items():
        if isinstance(mod, Exception):
            rec["impls"][label] = {"status": "error", "error": f"compile: {type(mod).__name__}: {mod}"[:3000]}
            continue
        try:
            side = OxideSide(label, importlib.import_module(mod))
            if case.prepare is not None:
                case.prepare(side)
            case.reset()
            case.body(side)
            torch.cuda.synchronize()
            got = case.outputs()
            if case.compare is not None:
                case.compare(got, ref)
            else:
                compare_outputs(torch, got, ref, case.rtol, case.atol, f"{spec.name} {label}")
            runners[label] = runner(side)
        except Exception as e:
            rec["impls"][label] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:3000],
                                   "traceback": traceback.format_exc(limit=5)[-2000:]}
    if len(runners) > 1:
        stats = timer.time_round_robin(runners, runs)
        for label, s in stats.items():
            rec["impls"][label] = {"status": "ok", **s.to_dict()}
    cu = rec["impls"].get("cuda", {}).get("median_ms")
    for label in modules:
        e = rec["impls"].get(label, {})
        if e.get("status") == "ok" and cu:
            rec[f"ratio_{label}"] = cu / e["median_ms"]
    rec["status"] = "ok" if all(rec["impls"].get(lbl, {}).get("status") == "ok" for lbl in modules) else "partial"
    return rec


def run_ports(ctx: Any, out: Path, only: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole benchmark; returns the ``ports`` section of results.json."""
    from benchmarks.ports_cases import SPECS

    specs = [s for s in SPECS if not only or s.name in only]
    torch = ctx.torch
    arch = ctx.arch
    jobs = os.cpu_count() or 4
    work = Path(tempfile.mkdtemp(prefix="oxide-ports-"))
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        f_orig = pool.submit(build_originals, specs, arch, work / "cubins", jobs)
        f_ports = pool.submit(build_ports, specs, arch, work / "ports", jobs)
        originals = f_orig.result()
        ports = f_ports.result()
    build_s = time.perf_counter() - t0
    print(f"  built {len(specs)} originals (nvcc) and {len(specs) * len(VARIANTS)} port variants (oxide) "
          f"in {build_s:.1f} s, {jobs} jobs", flush=True)
    if str(work / "ports") not in sys.path:
        sys.path.insert(0, str(work / "ports"))
    importlib.invalidate_caches()
    records = []
    for k, spec in enumerate(specs):
        modules = {v.label: ports[(spec.name, v.label)] for v in VARIANTS}
        try:
            rec = run_case(torch, ctx.timer, spec, originals[spec.name], modules, ctx.runs, seed=1000 + k)
        except Exception as e:
            rec = {"name": spec.name, "source": spec.source, "origin": spec.origin, "status": "error",
                   "error": f"{type(e).__name__}: {e}"[:3000], "traceback": traceback.format_exc(limit=6)[-2500:],
                   "impls": {}}
        records.append(rec)
        print(f"  [{time.perf_counter() - t0:6.1f} s] " + _line(rec), flush=True)
        if out.exists():  # what is measured so far survives a run cut short
            (out / "ports_partial.json").write_text(json.dumps(records, indent=1, default=str))
    checked = [r["ratio_oxide"] for r in records if r.get("ratio_oxide")]
    unchecked = [r["ratio_oxide_unchecked"] for r in records if r.get("ratio_oxide_unchecked")]
    summary = {
        "cases": len(records), "timed": len(checked),
        "geomean_checked": geomean(checked), "geomean_unchecked": geomean(unchecked),
        "geomean_checked_first": geomean([r["ratio_oxide"] for r in records
                                          if r.get("ratio_oxide") and r["origin"] != "new"]),
        "geomean_checked_new": geomean([r["ratio_oxide"] for r in records
                                        if r.get("ratio_oxide") and r["origin"] == "new"]),
        "below_0_95": sorted((r["name"] for r in records if r.get("ratio_oxide") and r["ratio_oxide"] < 0.95)),
        "build_s": round(build_s, 1), "runs": ctx.runs, "nvcc": nvcc_version(),
    }
    return {"summary": summary, "records": records}


def _line(rec: dict[str, Any]) -> str:
    if rec.get("status") == "error":
        return f"{rec['name']:<24} error: {rec.get('error', '')[:200]}"
    parts = [f"{rec['name']:<24}"]
    for label in ("cuda", "oxide", "oxide_unchecked"):
        e = rec["impls"].get(label, {})
        parts.append(f"{label} {e['median_ms']:.4f} ms" if e.get("status") == "ok" else
                     f"{label} {e.get('status', '?')}: {e.get('error', '')[:160]}")
    for label in ("oxide", "oxide_unchecked"):
        if rec.get(f"ratio_{label}"):
            parts.append(f"{label} {rec[f'ratio_{label}']:.3f}×")
    return "  ".join(parts)


# ---- the table -----------------------------------------------------------------------------------

def _fmt_ms(e: dict[str, Any] | None) -> str:
    if not e or e.get("status") != "ok":
        return (e or {}).get("status", "—")
    v = e["median_ms"]
    return f"{v * 1e3:.1f} µs" if v < 1 else f"{v:.3f} ms"


def ports_table(results: dict[str, Any]) -> tuple[str, list[str], list[list[str]]]:
    section = results.get("ports") or {}
    header = ["Kernel", "Source", "Size", "nvcc", "oxide", "oxide/nvcc", "unchecked/nvcc", "Note"]
    rows = []
    for rec in section.get("records", []):
        impls = rec.get("impls", {})
        note = rec.get("error") or "; ".join(
            f"{lbl}: {e.get('error', '')[:100]}" for lbl, e in impls.items() if e.get("status") == "error")
        if rec.get("fast_math"):
            note = ("oxide fast-math; " + note).strip("; ")
        r1, r2 = rec.get("ratio_oxide"), rec.get("ratio_oxide_unchecked")
        rows.append([rec["name"], rec.get("source", "").split(" (")[0][:70], rec.get("size", ""),
                     _fmt_ms(impls.get("cuda")), _fmt_ms(impls.get("oxide")),
                     f"{r1:.3f}×" if r1 else "—", f"{r2:.3f}×" if r2 else "—", note[:160]])
    s = section.get("summary", {})
    g1, g2 = s.get("geomean_checked"), s.get("geomean_unchecked")
    title = (f"Ports against their nvcc-built originals ({s.get('timed', 0)} of {s.get('cases', 0)} timed; ratio = "
             f"nvcc time / oxide time, > 1: oxide faster; geomean {g1 or 0:.3f}× with bounds checks, "
             f"{g2 or 0:.3f}× without)")
    return title, header, rows


def render_ports_markdown(results: dict[str, Any]) -> str:
    """The ports table of a results.json as Markdown, with the run's date, GPU, driver and the
    geomeans (``python -m benchmarks.ports RESULTS.json``)."""
    meta = results.get("meta", {})
    summary = (results.get("ports") or {}).get("summary", {})
    title, header, rows = ports_table(results)
    lines = [f"{meta.get('date', '?')} · {meta.get('gpu', '?')} ({meta.get('arch', '?')}) · driver "
             f"{meta.get('driver', '?')} · {summary.get('nvcc', 'nvcc ?')} · commit {meta.get('commit', '?')} · "
             f"{summary.get('runs', '?')} timed runs each, medians", "", f"**{title}**", "",
             "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    first, new = summary.get("geomean_checked_first"), summary.get("geomean_checked_new")
    lines += ["", f"Geomean with bounds checks (the default): {summary.get('geomean_checked') or 0:.3f}× "
              f"(the first 42: {first or 0:.3f}×, the new ones: {new or 0:.3f}×); without: "
              f"{summary.get('geomean_unchecked') or 0:.3f}×. Below 0.95× with checks: "
              f"{len(summary.get('below_0_95', []))} of {summary.get('cases', 0)}."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m benchmarks.ports RESULTS.json  (prints the ports table as Markdown)", file=sys.stderr)
        return 2
    print(render_ports_markdown(json.loads(Path(args[0]).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
