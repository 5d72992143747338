"""The compiler driver: one source module in, PTX and cubins per arch out.

scan → frontend → passes → lower → backend → link, each stage its own module; this file only
sequences them and carries plain data between them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from oxide.errors import CompileError, SourceLocation
from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleArrayRecord

from .config import CompileOptions
from .link.boundary import BoundaryDecl
from .link.exports import ExportDecl
from .targets import BACKENDS, DEFAULT_ARCHS, SUPPORTED_ARCHS, newest_arch

if TYPE_CHECKING:
    from .frontend import FrontendResult
    from .scan import ProjectIndex

__all__ = ["DEFAULT_ARCHS", "SUPPORTED_ARCHS", "BACKENDS", "ArchRequirementError", "CompileOptions", "CompiledModule",
           "compile_module", "build_ir"]


class ArchRequirementError(CompileError):
    """A kernel uses an instruction an arch it is built for lacks; ``required`` is the arch the
    instruction needs (the JIT compiles for it when it is the device's own arch-specific one)."""

    def __init__(self, message: str, location: SourceLocation | None = None, hint: str = "", *,
                 required: str) -> None:
        self.required = required
        super().__init__(message, location, hint)


@dataclass(frozen=True)
class CompiledModule:
    module_name: str
    source_path: Path
    source_sha256: str
    kernels: tuple[KernelSpec, ...]
    llvm_ir: str
    ptx: dict[str, str]  # arch -> PTX text
    cubins: dict[str, bytes] = field(default_factory=dict)  # arch -> cubin
    ptx_fallback: dict[str, str] = field(default_factory=dict)  # arch -> PTX shipped in the wheel
    error_sites: tuple[ErrorSite, ...] = ()
    ltoir: dict[str, bytes] = field(default_factory=dict)  # arch -> LTO-IR of the Python side
    fatbin: bytes | None = None  # every cubin + PTX of the newest arch (options.fatbin)
    exports: tuple[ExportDecl, ...] = ()  # @device(export=) functions, for the C++ header
    boundary: tuple[BoundaryDecl, ...] = ()  # every C symbol shared with C++, as Python declares it
    link_inputs: tuple[str, ...] = ()  # the C++ / binary inputs linked into the cubins
    # the other files the kernels' code was made from: the tree modules it was read from, the
    # C++ / binary link inputs and the user headers the .cu files include; file -> sha256
    # (the runtime compares them to find stale code)
    dependencies: dict[Path, str] = field(default_factory=dict)
    lto: bool = False  # linked with C++ (or exported to it) through LTO-IR
    arrays: tuple[ModuleArrayRecord, ...] = ()  # the module's own constant/global memory arrays


def ptxas_options(options: CompileOptions) -> tuple[str, ...]:
    """nvJitLink options that the build options imply (opt level, line info, register cap)."""
    # nvJitLink accepts -O0 and -O3 only (ERROR_UNRECOGNIZED_OPTION for -O1/-O2): opt-level 1
    # and 2 lower LLVM's effort, ptxas still optimizes
    out = ["-O0" if options.opt_level <= 0 else "-O3"]
    if options.lineinfo:
        out.append("-lineinfo")
    if options.max_registers is not None:
        out.append(f"-maxrregcount={options.max_registers}")
    if not options.fma:
        # the code generation of an LTO link (Python with CUDA C++) happens here, and would
        # contract again; for PTX input the backends already wrote add.rn/mul.rn
        out.append("-fma=0")
    return tuple(out)


def source_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compile_module(
    source_path: Path,
    module_name: str,
    options: CompileOptions = CompileOptions(),
    root: Path | None = None,
    print_after: str | None = None,
) -> CompiledModule:
    """Compiles every kernel of ``source_path`` (and the device functions they reach, also in
    other modules under ``root``) for every arch of ``options``.

    Raises ``oxide.CompileError`` (source problems), ``oxide.LinkError`` and
    ``oxide.ToolchainError`` (a missing component; the message names the pip package).
    ``print_after``: see ``build_ir``.
    """
    from .frontend.module_memory import module_array_records
    from .lower.llvm import lower_program, module_text

    source_path = Path(source_path)
    index, frontend = build_ir(source_path, module_name, options, root, print_after)
    data = source_path.read_bytes()
    from .link.lto import needs_lto

    libnvvm = options.backend == "nvvm" or options.emit_ltoir or needs_lto(frontend.program, options.link_inputs)
    llvm_module = lower_program(frontend.program, module_name, fast_math=options.fast_math, lineinfo=options.lineinfo,
                                libnvvm=libnvvm)
    llvm_ir = module_text(llvm_module)
    _check_libnvvm_types(frontend.program, llvm_ir, options)
    nvvm_ir = _nvvm_ir_of(frontend.program, module_name, options)
    from oxide.abi.manifest import entry_param_starts

    # each kernel entry point and the number of parameters the runtime's slot layout gives it
    defined = {fn.symbol for fn in frontend.program.functions if fn.is_kernel}  # not @extern_kernel's C++
    entries = {symbol: len(entry_param_starts(k.params))
               for k in frontend.kernels if k.symbol in defined for symbol in (k.symbol, k.index32_symbol) if symbol}
    device = _compile_device_code(frontend.program, llvm_ir, nvvm_ir, module_name, bool(frontend.kernels), options,
                                  entries)
    kernels = _with_param_slots(frontend.kernels, device.kept_params)
    from .link.boundary import boundary_decls
    from .link.exports import export_decls

    own = source_path.resolve()
    dependencies = {
        path: source_sha256(path.read_bytes())
        for path in [*index.parsed_files(), *device.dependencies] if path.resolve() != own
    }
    return CompiledModule(
        module_name=module_name,
        source_path=source_path,
        source_sha256=source_sha256(data),
        kernels=kernels,
        llvm_ir=llvm_ir,
        ptx=device.ptx,
        cubins=device.cubins,
        ptx_fallback=device.fallback,
        error_sites=tuple(frontend.error_sites),
        arrays=module_array_records(frontend.program, module_name),
        ltoir=device.ltoir,
        fatbin=device.fatbin,
        exports=export_decls(frontend.program),
        boundary=boundary_decls(frontend.program),
        link_inputs=device.link_inputs,
        dependencies=dependencies,
        lto=device.lto,
    )


def build_ir(
    source_path: Path, module_name: str, options: CompileOptions = CompileOptions(), root: Path | None = None,
    print_after: str | None = None,
) -> tuple[ProjectIndex, FrontendResult]:
    """Scan, frontend and passes: the IR of every kernel of ``source_path`` and what it calls
    (what ``oxide compile --emit ir`` prints), with the index of the source files it read.
    ``print_after``: a pass name (or "all") whose output goes to stderr."""
    from .frontend import build_program, located_error
    from .ir.verify import IRError
    from .passes import run_pipeline
    from .passes.arch_requirements import MissingArch, check_arch_requirements
    from .passes.fp8_arch import check_fp8_archs
    from .scan import ProjectIndex

    for arch in options.archs:
        if arch not in SUPPORTED_ARCHS:
            from oxide.errors import CompileError

            raise CompileError(f"unknown arch {arch!r}; supported: {', '.join(SUPPORTED_ARCHS)}")
    if options.backend not in BACKENDS:
        from oxide.errors import CompileError

        raise CompileError(f"unknown backend {options.backend!r}; supported: {', '.join(BACKENDS)}")
    index = ProjectIndex(root if root is not None else Path(source_path).parent)
    module = index.add_file(Path(source_path), module_name)
    frontend = build_program(index, module, bounds_check=options.bounds_check)
    frontend.program.fma_contraction = options.fma
    try:
        # the arch first: a module that cannot be built for its archs says so before any lint
        check_arch_requirements(frontend.program, options.archs)
        frontend.program = run_pipeline(frontend.program, print_after=print_after)
        check_fp8_archs(frontend.program, options.archs)
    except MissingArch as e:
        located = located_error(index, e.file, e.loc, e.message, e.hint)
        raise ArchRequirementError(located.message, located.location, located.hint, required=e.required) from None
    except IRError as e:
        raise located_error(index, e.file, e.loc, e.message, e.hint) from None
    # the manifest's kernel specs take the preconditions and the launch kind the passes settled
    # on, and the entry point of the index32 instance the lowering makes (lower/index32.py)
    from .lower.index32 import index32_twins

    settled = {f.symbol: f for f in frontend.program.functions if f.is_kernel}
    twins = index32_twins(frontend.program)
    frontend.kernels = [k._replace(preconditions=tuple(settled[k.symbol].preconditions),
                                   cooperative=settled[k.symbol].cooperative,
                                   index32_symbol=twins.get(k.symbol, ""))
                        if k.symbol in settled else k for k in frontend.kernels]
    return index, frontend


def _with_param_slots(kernels: list[KernelSpec], kept: dict[str, list[int]]) -> tuple[KernelSpec, ...]:
    """The kernel specs with the parameters each entry point still declares
    (``KernelSpec.param_slots``, backends/entry_params.py), as the slots where they begin."""
    from oxide.abi.manifest import entry_param_starts

    def slots(k: KernelSpec, symbol: str) -> tuple[int, ...] | None:
        if symbol not in kept:
            return None
        starts = entry_param_starts(k.params)
        return tuple(starts[i] for i in kept[symbol])

    return tuple(k._replace(param_slots=slots(k, k.symbol), index32_param_slots=slots(k, k.index32_symbol))
                 for k in kernels)


def _check_libnvvm_types(program: Any, llvm_ir: str, options: CompileOptions) -> None:
    """libNVVM's dialect of LLVM IR has no ``bfloat``: refuse bf16 where libNVVM compiles the
    Python side (--backend nvvm, LTO-IR, modules linked with CUDA C++), at the first function
    that uses it, instead of passing libNVVM's parse error on."""
    from .link.lto import needs_lto

    if "bfloat" not in llvm_ir or not (options.backend == "nvvm" or options.emit_ltoir
                                       or needs_lto(program, options.link_inputs)):
        return
    from oxide.errors import CompileError, SourceLocation

    user = next((f for f in program.functions if "bf16" in repr((f.params, f.locals, f.body))), program.functions[0])
    raise CompileError(
        f"{user.python_name}() uses bf16, which libNVVM (the nvvm backend, LTO-IR and modules linked with "
        "CUDA C++) cannot compile", SourceLocation(user.file, user.line, 1),
        "use the nvptx backend (the default) for this module, or compute in f16/f32")


def _nvvm_ir_of(program: Any, module_name: str, options: CompileOptions
                ) -> Callable[[str, dict[str, frozenset[int]] | None], str]:
    """(arch, dropped) -> the program lowered as NVVM IR for libNVVM (``lower/dialect.py``),
    lowered when first asked for (only the nvvm backend and LTO-IR need it), once per form;
    ``dropped``: kernel entry -> the parameters it does not declare (``lower_program``)."""
    from .lower.dialect import Dialect, nvvm_dialect
    from .lower.llvm import lower_program, module_text

    lowered: dict[tuple[Dialect, frozenset[tuple[str, frozenset[int]]]], str] = {}

    def nvvm_ir(arch: str, dropped: dict[str, frozenset[int]] | None = None) -> str:
        from .backends.nvvm import nvvm_ir_version

        dialect = nvvm_dialect(nvvm_ir_version(), arch)
        key = (dialect, frozenset((dropped or {}).items()))
        if key not in lowered:
            lowered[key] = module_text(lower_program(
                program, module_name, fast_math=options.fast_math, lineinfo=options.lineinfo, dialect=dialect,
                dropped=dropped))
        return lowered[key]
    return nvvm_ir


@dataclass
class _DeviceCode:
    ptx: dict[str, str] = field(default_factory=dict)
    cubins: dict[str, bytes] = field(default_factory=dict)
    fallback: dict[str, str] = field(default_factory=dict)
    ltoir: dict[str, bytes] = field(default_factory=dict)
    fatbin: bytes | None = None
    link_inputs: tuple[str, ...] = ()
    dependencies: list[Path] = field(default_factory=list)
    lto: bool = False
    # entry point -> the indices of the parameters it still declares, for those that lost some
    # (backends/entry_params.py)
    kept_params: dict[str, list[int]] = field(default_factory=dict)


def _compile_device_code(
    program: Any, llvm_ir: str, nvvm_ir: Callable[[str, dict[str, frozenset[int]] | None], str], module_name: str,
    has_kernels: bool,
    options: CompileOptions, entries: dict[str, int] | None = None,
) -> _DeviceCode:
    """Backend and link: PTX per arch, then cubins, LTO-IR and the fatbin as the module needs.

    A module that neither calls nor is called by CUDA C++ takes the short path: PTX from the
    backend, one nvJitLink call per arch. Otherwise the Python side becomes LTO-IR and is
    linked with the C++ inputs by nvJitLink -lto.
    """
    from .link.cache import CompileCache
    from .link.lto import (
        LinkSettings,
        input_dependencies,
        link_input_files,
        link_module,
        link_module_ptx,
        module_inputs,
        needs_lto,
        nvvm_ltoir,
        nvvm_ptx,
    )

    out = _DeviceCode()
    cache = CompileCache(enabled=options.cache)
    if options.backend == "nvvm":
        out.ptx = {arch: nvvm_ptx(nvvm_ir(arch, None), arch, options.opt_level, module_name, cache, options.fma)
                   for arch in options.archs}
    else:
        from .backends.nvptx import optimize_and_emit_ptx

        out.ptx = {arch: optimize_and_emit_ptx(llvm_ir, arch, options.opt_level, options.fma) for arch in options.archs}
    lto = needs_lto(program, options.link_inputs)
    # Kernel entry points declare only the parameters their code reads (backends/entry_params.py).
    # Without C++ the cubins are made from this PTX, which loses the others' declarations. With
    # C++ they are made from LTO-IR: the module is lowered again without them (they read as
    # zero). The PTX analysed is the module's own, its externs left undefined, so a parameter it
    # never reads is read by no linked code either: the Python code passes C++ values, not slots.
    dropped: dict[str, frozenset[int]] | None = None
    if entries:
        from .backends.entry_params import drop_unread_params

        pruned, out.kept_params = drop_unread_params(out.ptx, entries)
        if not lto:
            out.ptx = pruned
        elif out.kept_params:
            dropped = {entry: frozenset(range(entries[entry])) - frozenset(kept)
                       for entry, kept in out.kept_params.items()}
    newest = newest_arch(options.archs) if options.archs else None
    if options.emit_ltoir and program.functions:
        # with C++ the LTO-IR the cubins are linked from: without the dropped parameters
        out.ltoir = {arch: nvvm_ltoir(nvvm_ir(arch, dropped), arch, options.opt_level, module_name, cache, options.fma)
                     for arch in options.archs}
    if not lto:
        if options.link_cubins and has_kernels:
            from .link.ptxas import ptx_cubin

            for arch in options.archs:  # a whole program: setmaxnreg holds (link/ptxas.py)
                out.cubins[arch] = ptx_cubin(out.ptx[arch], arch, ptxas_options(options), module_name)
        if options.embed_ptx and newest is not None:
            out.fallback[newest] = out.ptx[newest]
    else:
        settings = LinkSettings(
            include_dirs=options.include_dirs, defines=options.defines, nvrtc_options=options.nvrtc_options,
            link_inputs=options.link_inputs, cudadevrt=options.cudadevrt, opt_level=options.opt_level,
            link_options=ptxas_options(options), cache=cache,
        )
        has_python_code = bool(program.functions)
        files = link_input_files(program, settings)
        out.lto = True
        out.link_inputs = tuple(f.name for f in files)
        out.dependencies = input_dependencies(files, options.include_dirs)
        for arch in options.archs:
            if has_python_code and arch not in out.ltoir:
                out.ltoir[arch] = nvvm_ltoir(nvvm_ir(arch, dropped), arch, options.opt_level, module_name, cache,
                                             options.fma)
        if options.link_cubins and has_kernels:
            for arch in options.archs:
                inputs = module_inputs(program, out.ltoir.get(arch), module_name, arch, settings)
                out.cubins[arch] = link_module(program, inputs, arch, settings)
            if options.embed_ptx and newest is not None:
                inputs = module_inputs(program, out.ltoir.get(newest), module_name, newest, settings)
                out.fallback[newest] = link_module_ptx(program, inputs, newest, settings)
    if options.fatbin and out.cubins:
        from .link.fatbin import make_fatbin

        out.fatbin = make_fatbin(out.cubins, out.fallback, module_name)
    return out
