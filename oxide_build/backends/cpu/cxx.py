"""CUDA C++ device functions on the CPU device: the ``.cu`` sources of a module's ``@ox.extern``
functions (those without a Python implementation, ``cpu=``) compiled by the host's C++ compiler
into a shared library the JIT-compiled kernels call.

``build_host_cxx(program, include_dirs, defines) -> HostCxx`` compiles each ``.cu`` file once
(C++17, force-including ``cuda_host.py``'s shim and the module's boundary prototypes,
``link/boundary.py``), links those that compiled into one library, cached under
``cache_root()/cpu-cxx/<SHA-256 of everything that goes in>``, and says per extern whether it can
be called, or why not (``HostCxx.refused``: the lowering refuses the functions calling it, naming
it). What cannot run on the host is refused without trying: CUB, cuRAND, cooperative groups and
the other GPU libraries (their headers are GPU code), inline PTX (``asm``), dynamic shared memory
(``extern __shared__``); a file the compiler rejects, or a library the linker cannot complete, is
refused with the compiler's first error.

``load_host_cxx(library, symbols) -> {symbol: address}``: the library loaded, its references to the
scheduler (the thread context, barriers, warp exchange, ...) bound, and the addresses of the
symbols the kernels call, for ``llvm.add_symbol`` (``engine.CpuModule``).

The compiler: ``$CXX`` (as setuptools reads it, flags allowed), else ``c++``, ``g++`` or
``clang++`` on PATH.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...ir import nodes as ir
from ...ir.types import is_half_float
from .cuda_host import SHIM_HEADER, SHIM_NAME, SITE_BASE, SITE_FILE_SHIFT, STAND_IN_HEADERS

__all__ = ["HostCxx", "bind_exports", "build_host_cxx", "host_cxx_compiler", "load_host_cxx", "CPU_HINT", "KERNEL_HINT"]

_CXX_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx")
_VERSION = "1"  # of this module's compile recipe: part of the cache key
_FLAGS = ("-x", "c++", "-std=c++17", "-O2", "-fPIC", "-fno-strict-aliasing", "-ffp-contract=off", "-w")

# what the host cannot compile, found in a .cu file or a header it includes: (pattern, what it is)
_GPU_LIBRARIES = re.compile(
    r'^\s*#\s*include\s*[<"]((cub|thrust|cute|cutlass|cuda|nvshmem)/[^>"]*|curand[^>"]*|cooperative_groups[^>"]*|'
    r'mma\.h|cuda_pipeline[^>"]*|cuda_awbarrier[^>"]*|cublas[^>"]*|cufft[^>"]*|cusparse[^>"]*|'
    r'sm_\d+_intrinsics[^>"]*)[>"]', re.M)
_LIBRARY_NAMES = {"cub": "CUB", "thrust": "Thrust", "cute": "CuTe", "cutlass": "CUTLASS", "cuda": "libcu++",
                  "nvshmem": "NVSHMEM", "curand": "cuRAND", "cooperative_groups": "cooperative groups",
                  "mma.h": "WMMA (tensor cores)", "cuda_pipeline": "the async-copy pipeline",
                  "cuda_awbarrier": "the async-copy pipeline", "cublas": "cuBLAS", "cufft": "cuFFT",
                  "cusparse": "cuSPARSE", "sm_": "GPU intrinsics"}
_INLINE_ASM = re.compile(r"\b(asm|__asm__)\s*(volatile|__volatile__)?\s*\(")
_DYNAMIC_SHARED = re.compile(r"\bextern\s+__shared__\b")
_TEXTURES = re.compile(r"\b(tex[123]D\w*|surf[123]D\w*|cudaTextureObject_t|cudaSurfaceObject_t)\b")
_SYNCS = re.compile(r"\b(__syncthreads\w*|__syncwarp|__shfl\w*|__ballot_sync|__any_sync|__all_sync|__activemask|"
                    r"__match_\w+|__reduce_\w+_sync|__nanosleep)\b")
_SHARED_VARIABLES = re.compile(r"\b__shared__\b")

CPU_HINT = ("give {name}() a Python implementation for the CPU device: a device function of its signature, named "
            "by cpu= in its declaration, @ox.extern(\"{name}\", sources=[...], cpu=...) (docs/interop.md, \"On the "
            "CPU device\"); or run this kernel on a GPU")

KERNEL_HINT = ("give the kernel {name} a Python implementation for the CPU device: a plain function of the stub's "
               "parameters whose body is the kernel's, named by cpu= in the declaration, @ox.extern_kernel(\"{name}\", "
               "sources=[...], cpu=...) (docs/interop.md, \"On the CPU device\"); or launch it on a GPU")

# the library's references to the scheduler, bound at load: the variable, and the scheduler's
# (_fibers.c) or the special math functions' (_special_math.c) symbol it takes the address of
_BOUND = {
    "__oxide_cxx_context": "oxide_cpu_context",
    "__oxide_cxx_barrier": "oxide_cpu_barrier",
    "__oxide_cxx_block_vote": "oxide_cpu_block_vote",
    "__oxide_cxx_warp_exchange": "oxide_cpu_warp_exchange",
    "__oxide_cxx_active_mask": "oxide_cpu_active_mask",
    "__oxide_cxx_yield": "oxide_cpu_yield",
    "__oxide_cxx_trap": "oxide_cpu_trap",
    **{f"__oxide_cxx_{name}{suffix}": f"oxide_cpu_{name}{suffix}"
       for name in ("erfinv", "erfcinv", "erfcx", "normcdfinv", "cyl_bessel_i0", "cyl_bessel_i1")
       for suffix in ("", "f")},
}


@dataclass(frozen=True)
class HostCxx:
    """A module's C++ for the CPU device: the library, and what each extern of it gets."""

    library: str = ""  # the shared library's path; "" when nothing compiled
    symbols: tuple[str, ...] = ()  # the C symbols the kernels call in it (ExternFunction.call_symbol)
    # extern symbol -> (what it is that cannot run, the hint): the lowering's NoCpuForm
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    syncing: frozenset[str] = frozenset()  # externs whose C++ has barriers or warp operations
    shared_variables: frozenset[str] = frozenset()  # externs whose C++ declares __shared__ variables
    exports: tuple[str, ...] = ()  # the Python functions the C++ may call (their trampolines' pointers)
    files: tuple[str, ...] = ()  # the .cu files by index (OXIDE_CXX_FILE: the sites of their barriers)
    dependencies: tuple[Path, ...] = ()  # the files read (the .cu files and their headers)

    def site(self, site: int) -> tuple[str, int, int] | None:
        """The file and line of a C++ barrier or warp operation's site id (None: not C++'s)."""
        if site < SITE_BASE:
            return None
        index, line = (site - SITE_BASE) >> SITE_FILE_SHIFT, (site - SITE_BASE) & ((1 << SITE_FILE_SHIFT) - 1)
        return (self.files[index], line, 0) if index < len(self.files) else None


@functools.cache
def host_cxx_compiler() -> tuple[str, ...] | None:
    """The host's C++ compiler command: ``$CXX`` (split as a shell would), else the first of
    ``c++``, ``g++``, ``clang++`` on PATH; None when there is none."""
    env = os.environ.get("CXX", "").strip()
    if env:
        return tuple(shlex.split(env))
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return (found,)
    return None


@functools.cache
def _compiler_identity(command: tuple[str, ...]) -> str:
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"
    return done.stdout.strip()


def _display(path: str) -> str:
    """``path`` relative to the working directory where it is below it, else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _scan(path: Path, text: str) -> tuple[str | None, bool, bool]:
    """What in ``text`` (of ``path``, a .cu file or a header it includes) the host cannot compile
    (None: nothing found), and whether it has barriers or warp operations, and __shared__ variables."""
    name = _display(str(path))
    lines = text.splitlines()

    def line_of(m: re.Match[str]) -> int:
        return text.count("\n", 0, m.start()) + 1

    m = _GPU_LIBRARIES.search(text)
    if m:
        header = m.group(1)
        library = next((v for k, v in _LIBRARY_NAMES.items() if header.startswith(k)), "a GPU library")
        return (f"{name}:{line_of(m)} includes <{header}> ({library}), GPU code the host's C++ compiler cannot "
                "compile"), False, False
    code = "\n".join(line.split("//", 1)[0] for line in lines)
    for pattern, what in ((_INLINE_ASM, "inline PTX assembly (asm)"),
                          (_DYNAMIC_SHARED, "dynamic shared memory (extern __shared__)"),
                          (_TEXTURES, "textures and surfaces")):
        m = pattern.search(code)
        if m:
            return f"{name}:{line_of(m)} uses {what}, which has no host form", False, False
    return None, bool(_SYNCS.search(code)), bool(_SHARED_VARIABLES.search(code))


def _first_errors(log: str) -> str:
    """The compiler's (or linker's) first two errors."""
    errors = [line.strip() for line in log.splitlines()
              if ("error" in line or "undefined reference" in line) and "ld returned" not in line]
    return "; ".join(errors[:2]) or (log.strip().splitlines() or ["(no message)"])[-1]


_build_lock = threading.Lock()


def build_host_cxx(program: ir.Program, include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (),
                   link_inputs: tuple[str, ...] = (), module_name: str = "") -> HostCxx:
    """The C++ of ``program``'s externs, built for the host (see the module's docstring);
    ``link_inputs``: ``[tool.oxide] link``, whose C++ files define externs as their sources do
    (the other inputs, LTO-IR, PTX, libraries, are GPU code)."""
    from ...link.boundary import (BOUNDARY_HEADER, EXPORTS_HEADER, boundary_decls, boundary_header, c_argument_names,
                                  c_params, c_type, template_instances)
    from ...link.exports import export_decls, export_header
    from ...link.nvrtc import source_dependencies

    externs = [*program.externs, *program.extern_kernels]
    if not externs:
        return HostCxx()
    kernels = {ext.symbol for ext in program.extern_kernels}

    def what(ext: ir.ExternFunction) -> str:
        where = f"{Path(ext.file).name}:{ext.line}"
        if ext.symbol in kernels:
            return f"the CUDA C++ kernel {ext.symbol} (an @extern_kernel, declared at {where}"
        return f"the CUDA C++ function {ext.symbol}() (an @extern, declared at {where}"
    sources: dict[str, None] = {}
    for ext in externs:
        for src in ext.sources:
            sources.setdefault(src, None)
    linked = [str(Path(f).resolve()) for f in link_inputs if Path(f).suffix in _CXX_SUFFIXES]
    for src in linked:
        sources.setdefault(src, None)
    files = [Path(s) for s in sources]
    refused: dict[str, tuple[str, str]] = {}
    hint = {ext.symbol: (KERNEL_HINT if ext.symbol in kernels else CPU_HINT).format(name=ext.symbol)
            for ext in externs}
    command = host_cxx_compiler()
    if command is None:
        return HostCxx(refused={e.symbol: (f"{what(e)}; no C++ compiler on this host compiles it for the CPU "
                                           "device: set CXX, or install g++)", hint[e.symbol])
                                for e in externs})
    decls = boundary_decls(program)
    boundary = boundary_header(decls)
    # the Python functions the C++ may call (@device(export=...)): a trampoline each, through a
    # pointer bound to the JIT's function once the module is compiled (engine.CpuModule)
    exports = [fn for fn in program.functions if fn.export]
    exports_header = export_header(export_decls(program), module_name)
    trampolines = "".join(
        f'extern "C" {{ __attribute__((visibility("default"))) {c_type(fn.ret)} (*__oxide_export_{fn.symbol})'
        f'({c_params(fn.params)}) = 0; }}\n'
        f'extern "C" {c_type(fn.ret)} {fn.symbol}({c_params(fn.params)}) {{ return __oxide_export_{fn.symbol}('
        f'{", ".join(c_argument_names(fn.params))}); }}\n' for fn in exports)
    first_cu = next((f for f in files if f.suffix == ".cu"), None)
    problems: dict[int, str] = {}  # file index -> why it cannot run
    syncing_files: set[int] = set()
    shared_files: set[int] = set()
    dependencies: list[Path] = []
    h = hashlib.sha256()
    for part in (_VERSION, *command, _compiler_identity(command), *_FLAGS, SHIM_HEADER, *STAND_IN_HEADERS.values(),
                 boundary, exports_header, trampolines, *include_dirs, *defines):
        h.update(part.encode() + b"\0")
    units: list[tuple[int, Path, str]] = []  # (index, file, the translation unit's text)
    for k, path in enumerate(files):
        if path.suffix not in _CXX_SUFFIXES:
            problems[k] = f"{_display(str(path))} is not C++ source (GPU code the CPU device cannot run)"
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            problems[k] = f"cannot read {_display(str(path))}: {exc.strerror}"
            continue
        dependencies.append(path)
        scanned = [(path, text)]
        for dep in source_dependencies(path, include_dirs):
            dependencies.append(dep)
            try:
                scanned.append((dep, dep.read_text(errors="replace")))
            except OSError:
                continue
        for p, t in scanned:
            problem, syncs, shared = _scan(p, t)
            if problem is not None:
                problems[k] = problem
                break
            if syncs:
                syncing_files.add(k)
            if shared:
                shared_files.add(k)
        if k in problems:
            continue
        appendix = template_instances(decls, str(path), path == first_cu)
        quoted = str(path).replace("\\", "\\\\").replace('"', '\\"')
        unit = f'#line 1 "{quoted}"\n{text}\n{appendix}\n'
        units.append((k, path, unit))
        h.update(f"{k}\0{path}\0".encode() + unit.encode())
        for _, t in scanned[1:]:
            h.update(t.encode(errors="replace") + b"\0")
    library = ""
    if units:
        from ...cache_location import cache_root

        directory = cache_root() / "cpu-cxx" / h.hexdigest()[:40]
        with _build_lock:
            result = _cached(directory)
            if result is None:
                result = _compile(directory, command, units, {BOUNDARY_HEADER: boundary, EXPORTS_HEADER: exports_header},
                                  include_dirs, defines, trampolines)
        for index, message in result["problems"].items():
            problems[int(index)] = message
        if result["library"]:
            library = str(directory / result["library"])
    defined: set[str] = set()
    if library:
        handle = ctypes.CDLL(library)
        for ext in externs:
            if hasattr(handle, ext.call_symbol):
                defined.add(ext.call_symbol)
    symbols: list[str] = []
    inputs = {ext.symbol: [*ext.sources, *linked] for ext in externs}  # the files that may define each
    for ext in externs:
        # a file that failed may be the one defining it: its problem is the reason then
        bad = [problems[files.index(Path(s))] for s in inputs[ext.symbol] if files.index(Path(s)) in problems]
        if ext.symbol in kernels and any(is_half_float(p.ty) for p in ext.params):
            refused[ext.symbol] = (f"{what(ext)}; an f16/bf16 parameter, which C++ takes as a struct (__half) where "
                                   "the CPU device's launch passes a scalar)", hint[ext.symbol])
        elif bad and ext.call_symbol not in defined:
            refused[ext.symbol] = (f"{what(ext)}; {bad[0]})", hint[ext.symbol])
        elif ext.call_symbol not in defined:
            searched = ", ".join(_display(s) for s in inputs[ext.symbol]) or "no sources= given"
            qualifier = "__global__ void" if ext.symbol in kernels else "__device__"
            refused[ext.symbol] = (f"{what(ext)}), which none of its sources defines for the host ({searched})",
                                   f"define it as extern \"C\" {qualifier} in one of its sources; or "
                                   + hint[ext.symbol])
        else:
            symbols.append(ext.call_symbol)
    indices = {ext.symbol: [files.index(Path(s)) for s in inputs[ext.symbol]] for ext in externs}
    return HostCxx(
        library=library if symbols else "",
        symbols=tuple(symbols),
        refused=refused,
        syncing=frozenset(s for s, ks in indices.items() if syncing_files & set(ks)),
        shared_variables=frozenset(s for s, ks in indices.items() if shared_files & set(ks)),
        exports=tuple(fn.symbol for fn in exports),
        files=tuple(_display(str(f)) for f in files),
        dependencies=tuple(dict.fromkeys(dependencies)),
    )


def _cached(directory: Path) -> dict | None:  # type: ignore[type-arg]
    try:
        result: dict = json.loads((directory / "result.json").read_text())  # type: ignore[type-arg]
    except (OSError, ValueError):
        return None
    if result.get("library") and not (directory / result["library"]).is_file():
        return None
    return result


def _compile(directory: Path, command: tuple[str, ...], units: list[tuple[int, Path, str]], headers: dict[str, str],
             include_dirs: tuple[str, ...], defines: tuple[str, ...], trampolines: str) -> dict:  # type: ignore[type-arg]
    """Compiles ``units`` (each with the first of ``headers``, the boundary, force-included; all of
    them #include-able) and links those that compiled, with the glue (the scheduler's pointers,
    the exports' ``trampolines``), in a fresh folder moved to ``directory`` when done; the result
    (the library's name, each failed file's message) also in result.json."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=directory.parent))
    shim = work / "include"
    boundary_name = next(iter(headers))
    for name, text in {SHIM_NAME: SHIM_HEADER, **headers, **STAND_IN_HEADERS}.items():
        (shim / name).parent.mkdir(parents=True, exist_ok=True)
        (shim / name).write_text(text)
    common = [*command, *_FLAGS, f"-I{shim}", *(f"-I{d}" for d in include_dirs), *(f"-D{d}" for d in defines),
              f"-DOXIDE_CXX_SITE_BASE={SITE_BASE}", f"-DOXIDE_CXX_SITE_SHIFT={SITE_FILE_SHIFT}",
              "-include", str(shim / SHIM_NAME), "-include", str(shim / boundary_name)]
    problems: dict[str, str] = {}
    objects: dict[int, Path] = {}
    for k, path, unit in units:
        tu = work / f"unit{k}.cpp"
        tu.write_text(unit)
        obj = work / f"unit{k}.o"
        done = _run([*common, f"-I{path.parent}", f"-DOXIDE_CXX_FILE={k}", "-c", str(tu), "-o", str(obj)])
        if done is None:
            objects[k] = obj
        else:
            problems[str(k)] = (f"the host's C++ compiler ({Path(command[0]).name}) cannot compile "
                                f"{_display(str(path))}: {_first_errors(done.replace(str(shim) + os.sep, ''))}")
    glue = work / "glue.cpp"
    glue.write_text(f'#define OXIDE_CXX_GLUE 1\n#include "{shim / SHIM_NAME}"\n#include "{shim / boundary_name}"\n'
                    + trampolines)
    glue_obj = work / "glue.o"
    library = ""
    if objects and _run([*common[:len(command) + len(_FLAGS)], f"-I{shim}", "-c", str(glue), "-o",
                         str(glue_obj)]) is None:
        while objects:
            lib = work / "libcuda_host.so"
            log = _run([*command, "-shared", "-o", str(lib), *(str(o) for o in objects.values()), str(glue_obj),
                        "-Wl,--no-undefined", "-lm"])
            if log is None:
                library = lib.name
                break
            # the files the linker names lose; the others are linked again
            named = [k for k, o in objects.items() if o.name in log] or list(objects)
            for k in named:
                path = next(p for i, p, _ in units if i == k)
                problems[str(k)] = (f"the host's linker cannot complete {_display(str(path))} for the CPU device: "
                                    f"{_first_errors(log.replace(str(work) + os.sep, ''))}")
                del objects[k]
    (work / "result.json").write_text(json.dumps({"library": library, "problems": problems}))
    try:
        os.replace(work, directory)
    except OSError:  # another process built it first: take ours from where it is
        return {"library": library and str(work / library), "problems": problems} if library else \
            {"library": "", "problems": problems}
    return {"library": library, "problems": problems}


def _run(argv: list[str]) -> str | None:
    """None when ``argv`` succeeded, else its output (the compiler's messages)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr + done.stdout)


_loaded: dict[str, ctypes.CDLL] = {}


def load_host_cxx(library: str, symbols: tuple[str, ...]) -> dict[str, int]:
    """``library`` loaded (once per process), its scheduler references bound; the addresses of
    ``symbols``."""
    from .jit import scheduler, special_math_symbols

    handle = _loaded.get(library)
    if handle is None:
        handle = ctypes.CDLL(library)
        known = {**scheduler().symbols(), **special_math_symbols()}
        for variable, target in _BOUND.items():
            if target in known:
                ctypes.c_void_p.in_dll(handle, variable).value = int(known[target])
        _loaded[library] = handle
    return {s: int(ctypes.cast(getattr(handle, s), ctypes.c_void_p).value or 0) for s in symbols}


def bind_exports(library: str, addresses: dict[str, int]) -> None:
    """Points ``library``'s trampolines of the exported Python functions at the JIT's code."""
    handle = _loaded[library]
    for symbol, address in addresses.items():
        ctypes.c_void_p.in_dll(handle, f"__oxide_export_{symbol}").value = address
