"""Link-time optimization of a module with CUDA C++: the Python side compiled to LTO-IR by
libNVVM, each ``.cu`` source compiled to LTO-IR by NVRTC, other inputs taken as they are, all
linked by nvJitLink ``-lto`` into one cubin per arch. Each compile step goes through the
compile cache.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oxide.errors import LinkError

from ..ir import nodes as ir
from .boundary import (
    BOUNDARY_HEADER, EXPORTS_HEADER, BoundaryDecl, boundary_decls, boundary_header, explain_nvrtc_log,
    template_instances,
)
from .cache import CompileCache, cache_key
from .exports import ExportDecl, export_header
from .inputs import InputFile, cudadevrt_path, input_file
from .nvjitlink import LinkInput, UndefinedSymbolError, link_cubin, link_ptx
from .nvrtc import CudaSource, compile_cuda, source_dependencies

__all__ = [
    "LinkSettings",
    "needs_lto",
    "tool_versions",
    "cuda_ltoir",
    "boundary_headers",
    "input_dependencies",
    "link_input_files",
    "module_inputs",
    "inputs_from_files",
    "link_module",
    "link_module_ptx",
    "lto_link_options",
]

# how the Python side's input is named in messages
PYTHON_LTOIR = "(Python, LTO-IR)"
PYTHON_PTX = "(Python, PTX)"

_FORMAT = "oxide-lto-1"  # bump when the key layout changes (the keys hold the NVVM IR libNVVM compiles)


@dataclass(frozen=True)
class LinkSettings:
    """The parts of ``CompileOptions`` that decide the link."""

    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    nvrtc_options: tuple[str, ...] = ()
    link_inputs: tuple[str, ...] = ()
    cudadevrt: bool = False
    opt_level: int = 3
    link_options: tuple[str, ...] = ()  # more nvJitLink options: -lineinfo, -maxrregcount=N
    cache: CompileCache = field(default_factory=lambda: CompileCache(enabled=False))


def needs_lto(program: ir.Program, link_inputs: tuple[str, ...] = ()) -> bool:
    """True when the module calls CUDA C++ or is called by it: it is then linked through LTO-IR."""
    return bool(program.externs or program.extern_kernels or link_inputs
                or any(f.export for f in program.functions))


@functools.lru_cache(maxsize=1)
def tool_versions() -> str:
    """Everything about the toolchain that changes compiled bytes, as one string for keys."""
    import oxide

    parts = [f"oxide={oxide.__version__}", _FORMAT]
    from ..toolchain import bindings

    try:
        nvvm = bindings("NVVM")
        parts.append(f"nvvm={nvvm.version()} ir={nvvm.ir_version()}")
    except Exception:
        parts.append("nvvm=?")
    try:
        parts.append(f"nvrtc={bindings('NVRTC').nvrtcVersion()[1:]}")
    except Exception:
        parts.append("nvrtc=?")
    try:
        parts.append(f"nvjitlink={bindings('nvJitLink').version()}")
    except Exception:
        parts.append("nvjitlink=?")
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("nvidia-cuda-cccl", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-nvvm", "cuda-bindings"):
        try:
            parts.append(f"{dist}={version(dist)}")
        except PackageNotFoundError:
            pass
    from .nvrtc import cuda_include_dirs

    parts.append("headers=" + ";".join(cuda_include_dirs()))
    return "\n".join(parts)


def _cached(cache: CompileCache, key: str, make: Callable[[], bytes]) -> bytes:
    data = cache.get(key)
    if data is None:
        data = make()
        cache.put(key, data)
    return data


def boundary_headers(boundary: tuple[BoundaryDecl, ...], module_name: str) -> tuple[tuple[str, str], ...]:
    """The generated headers every ``.cu`` of a module is compiled with: the prototypes the
    Python side expects (force-included), and the exports for ``#include "oxide_exports.h"``."""
    exports = tuple(ExportDecl(d.symbol, d.python_name, d.file, d.line, d.declaration)
                    for d in boundary if d.role == "export")
    return ((BOUNDARY_HEADER, boundary_header(boundary)), (EXPORTS_HEADER, export_header(exports, module_name)))


def cuda_ltoir(source: CudaSource, arch: str, cache: CompileCache,
               boundary: tuple[BoundaryDecl, ...] = ()) -> bytes:
    """NVRTC's LTO-IR of one ``.cu`` file; the key covers the file, the user headers it
    includes, the generated headers, the options and the toolchain. A C++ declaration that
    disagrees with the Python side's prototype (``boundary``) is a ``LinkError`` naming both."""
    path = Path(source.path)
    try:
        parts: list[bytes | str] = [path.read_bytes()]
    except OSError as exc:
        raise LinkError(f"cannot read the CUDA source {path}: {exc.strerror}") from None
    for dep in source_dependencies(path, source.include_dirs):
        parts += [str(dep), dep.read_bytes()]
    key = cache_key("nvrtc-ltoir", tool_versions(), arch, str(path), "\0".join(source.include_dirs),
                    "\0".join(source.defines), "\0".join(source.options), source.force_include, source.appendix,
                    *[part for h in source.headers for part in h], *parts)

    def compile_checked() -> bytes:
        try:
            return compile_cuda(source, arch, "ltoir")
        except LinkError as exc:
            notes = explain_nvrtc_log(str(exc), boundary)
            if not notes:
                raise
            raise LinkError(f"{notes}\n{exc}") from None

    return _cached(cache, key, compile_checked)


def link_input_files(program: ir.Program, settings: LinkSettings) -> list[InputFile]:
    """Every C++ / binary input of the module: the externs' and extern kernels' sources, then
    the extra inputs, each once, in a stable order."""
    seen: dict[str, None] = {}
    for ext in [*program.externs, *program.extern_kernels]:
        for src in ext.sources:
            seen.setdefault(src, None)
    for extra in settings.link_inputs:
        seen.setdefault(str(Path(extra).resolve()), None)
    files: list[InputFile] = []
    for name in seen:
        try:
            files.append(input_file(name))
        except LinkError as exc:
            users = [f"{Path(e.file).name}:{e.line}" for e in [*program.externs, *program.extern_kernels]
                     if name in e.sources]
            where = f" (named by the declaration at {', '.join(users)})" if users else ""
            raise LinkError(f"{exc}{where}") from None
    return files


def input_dependencies(files: list[InputFile], include_dirs: tuple[str, ...]) -> list[Path]:
    """The files the link reads from the project: the inputs, and the user headers each
    ``.cu`` includes (found next to it or in ``include_dirs``), each once."""
    out: dict[Path, None] = {}
    for f in files:
        out.setdefault(f.path, None)
        if f.kind == "cu":
            for dep in source_dependencies(f.path, include_dirs):
                out.setdefault(dep, None)
    return list(out)


def module_inputs(
    program: ir.Program, python_ltoir: bytes | None, module_name: str, arch: str, settings: LinkSettings,
    python_ptx: str | None = None,
) -> list[LinkInput]:
    return inputs_from_files(link_input_files(program, settings), python_ltoir, module_name, arch, settings,
                             boundary_decls(program), python_ptx)


def inputs_from_files(
    files: list[InputFile], python_ltoir: bytes | None, module_name: str, arch: str, settings: LinkSettings,
    boundary: tuple[BoundaryDecl, ...] = (), python_ptx: str | None = None,
) -> list[LinkInput]:
    """The linker inputs: the Python side's LTO-IR (or, for a module libNVVM cannot compile,
    its PTX: ``compile.CodePath``), each ``.cu`` compiled by NVRTC to LTO-IR against the
    module's ``boundary`` prototypes, the other files as they are, and libcudadevrt when asked
    for."""
    headers = boundary_headers(boundary, module_name)
    inputs: list[LinkInput] = []
    if python_ltoir is not None:
        inputs.append(LinkInput(f"{module_name} {PYTHON_LTOIR}", "ltoir", python_ltoir))
    elif python_ptx is not None:
        inputs.append(LinkInput(f"{module_name} {PYTHON_PTX}", "ptx", python_ptx.encode()))
    first_cu = next((f for f in files if f.kind == "cu"), None)
    for d in boundary:
        if d.definition and not d.defined_in and first_cu is None:
            raise LinkError(f"{d.file}:{d.line}: @extern {d.python_name!r} passes or returns an f16/bf16 value: "
                            "oxide calls it through a small C++ shim, which needs a .cu file to go into; "
                            "add the .cu that defines it to sources=")
    for f in files:
        if f.kind == "cu":
            src = CudaSource(f.path, settings.include_dirs, settings.defines, settings.nvrtc_options,
                             headers, BOUNDARY_HEADER, template_instances(boundary, str(f.path), f is first_cu))
            inputs.append(LinkInput(f.name, "ltoir", cuda_ltoir(src, arch, settings.cache, boundary)))
        else:
            inputs.append(LinkInput(f.name, f.kind, f.path.read_bytes()))
    if settings.cudadevrt:
        lib = cudadevrt_path()
        inputs.append(LinkInput(str(lib), "library", lib.read_bytes()))
    return inputs


def link_module(
    program: ir.Program, inputs: list[LinkInput], arch: str, settings: LinkSettings,
    kernel_symbols: tuple[str, ...] = (),
) -> bytes:
    """One cubin for ``arch``; an extern nothing defines, or an extern kernel missing from the
    result, is a ``LinkError`` that names the Python declaration and the inputs searched.
    Where no input can hold LTO-IR (the Python side as PTX, for bf16, beside PTX and cubin link
    inputs only: an export with no C++), the link is without ``-lto``, which nvJitLink refuses
    then (NVVM_ERROR_NO_MODULE_IN_PROGRAM)."""
    opts = lto_link_options(settings)
    if all(i.kind in ("ptx", "cubin") for i in inputs):
        opts = tuple(o for o in opts if o != "-lto")
    key = cache_key("nvjitlink-cubin", tool_versions(), arch, *opts,
                    *[part for i in inputs for part in (i.name, i.kind, i.data)])
    cubin = settings.cache.get(key)
    if cubin is not None:
        return cubin
    try:
        cubin = link_cubin(inputs, arch, opts)
    except UndefinedSymbolError as exc:
        raise LinkError(_undefined_message(program, exc, inputs, arch)) from None
    except LinkError as exc:
        raise _explain_clash(program, exc, inputs) from None
    for ext in program.extern_kernels:
        if not _defines_symbol(cubin, ext.symbol):
            raise LinkError(
                f"the extern kernel {ext.symbol!r} declared at {ext.file}:{ext.line} is not defined "
                f"by any linker input for {arch}\n  searched: {_searched(inputs)}\n"
                f"  define it as extern \"C\" __global__ void {ext.symbol}(...) in one of its sources"
            )
    settings.cache.put(key, cubin)
    return cubin


def link_module_ptx(program: ir.Program, inputs: list[LinkInput], arch: str, settings: LinkSettings) -> str:
    """The PTX of the whole LTO-linked module (nvJitLink ``-ptx``): the forward-compatible
    fallback, and a way to see what was inlined."""
    try:
        return link_ptx(inputs, arch, lto_link_options(settings))
    except UndefinedSymbolError as exc:
        raise LinkError(_undefined_message(program, exc, inputs, arch)) from None
    except LinkError as exc:
        raise _explain_clash(program, exc, inputs) from None


def lto_link_options(settings: LinkSettings) -> tuple[str, ...]:
    opts = ["-lto", *settings.link_options]
    if not any(o.startswith("-O") for o in opts):
        opts.append(f"-O{min(max(settings.opt_level, 0), 3)}")
    return tuple(opts)


def _defines_symbol(cubin: bytes, symbol: str) -> bool:
    return b"\0" + symbol.encode() + b"\0" in cubin


def _searched(inputs: list[LinkInput]) -> str:
    return ", ".join(i.name for i in inputs) or "(no inputs)"


def _undefined_message(program: ir.Program, exc: UndefinedSymbolError, inputs: list[LinkInput], arch: str) -> str:
    by_symbol = {e.symbol: e for e in program.externs}
    lines: list[str] = []
    for sym in exc.symbols:
        ext = by_symbol.get(sym)
        if ext is None:
            lines.append(f"undefined symbol {sym!r} (needed by a linker input) for {arch}")
            continue
        call = f"{ext.call_file}:{ext.call_line}" if ext.call_line else f"{ext.file}:{ext.line}"
        sources = ", ".join(ext.sources) or "(the @extern names no sources)"
        lines.append(
            f"{call}: undefined symbol {sym!r}: the @extern declared at {ext.file}:{ext.line} "
            f"is called here, but no linker input defines it (arch {arch})\n"
            f"  its sources: {sources}"
        )
    lines.append(f"  searched: {_searched(inputs)}")
    lines.append("  define it as extern \"C\" __device__ in one of the sources (C linkage: no name mangling)")
    lines.append(f"nvJitLink said:\n{exc.log.strip()}")
    return "\n".join(lines)


_MULTIPLY_DEFINED = re.compile(r"Linking globals named '([^']+)': symbol multiply defined")


def _explain_clash(program: ir.Program, exc: LinkError, inputs: list[LinkInput]) -> LinkError:
    """A symbol defined twice (a Python export or kernel and a C++ function of the same name,
    or two C++ files): the message names every place that defines it."""
    names = list(dict.fromkeys(_MULTIPLY_DEFINED.findall(str(exc))))
    if not names:
        return exc
    lines: list[str] = []
    for sym in names:
        places = [f"{fn.file}:{fn.line} (Python {'kernel' if fn.is_kernel else 'device function'} "
                  f"{fn.python_name!r})" for fn in program.functions if fn.symbol == sym and (fn.export or fn.is_kernel)]
        prebuilt: list[str] = []
        for inp in inputs:
            path = Path(inp.name)
            if path.suffix in (".cu", ".cuh") and path.is_file():
                places += [f"{where} (C++)" for where in cpp_definitions(path, sym)]
            elif not inp.name.endswith((PYTHON_LTOIR, PYTHON_PTX)):
                prebuilt.append(f"{inp.name} (prebuilt, perhaps: its source lines are unknown)")
        if len(places) < 2:
            places += prebuilt
        lines.append(f"the device symbol {sym!r} is defined more than once:\n  "
                     + "\n  ".join(dict.fromkeys(places) or ["(the places could not be found)"])
                     + "\n  rename one of them (C linkage has one namespace for both languages)")
    return LinkError("\n".join(lines) + f"\n{exc}")


def cpp_definitions(path: Path, symbol: str) -> list[str]:
    """``file:line`` of each definition of the C function ``symbol`` in a CUDA C++ file (a
    name followed by a parameter list and a body, not a ``;``)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    pattern = re.compile(r"\b" + re.escape(symbol) + r"\s*\([^;{}]*\)\s*(?:const\s*)?\{")
    return [f"{path}:{text.count(chr(10), 0, m.start()) + 1}" for m in pattern.finditer(text)]
