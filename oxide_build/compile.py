"""The compiler driver: one source module in, PTX and cubins per arch out.

The driver is ``STAGES``, a table of named stages run in order over one ``ModuleBuild`` (the
plain data that crosses between them). Each stage is one function that reads the fields the
stages before it set and sets its own; the work itself is in the stage's modules (scan,
frontend, passes, lower, backends, link). ``build_ir`` runs the table up to ``passes``,
``compile_module`` runs all of it. How the device code is made, NVPTX or libNVVM, PTX or
LTO-IR into the link, is decided once, by ``code_path``.

A new backend (another device) is one more ``Stage`` in the table, reading
``build.program`` / ``build.llvm_ir`` and setting a field of its own: docs/architecture.md
"A new backend".
"""
from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oxide.abi.manifest import Precondition, entry_param_starts
from oxide.abi.preconditions import compile_expression
from oxide.errors import CompileError, SourceLocation
from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleArrayRecord

from .backends import nvvm as nvvm_backend
from .backends.nvptx import optimize_and_emit_ptx
from .config import CompileOptions
from .frontend import FrontendResult, build_program, located_error
from .frontend.module_memory import module_array_records
from .ir import nodes as ir
from .ir.types import ArrayType, ScalarType, StructType, TensorMapType, TupleType, Type, VectorType, ViewType
from .ir.verify import IRError
from .link.boundary import BoundaryDecl, boundary_decls
from .link.cache import CompileCache, cache_key
from .link.exports import ExportDecl, export_decls
from .link.fatbin import make_fatbin
from .link.lto import (
    LinkSettings,
    input_dependencies,
    link_input_files,
    link_module,
    link_module_ptx,
    module_inputs,
    needs_lto,
    tool_versions,
)
from .link.ptxas import ptx_cubin
from .lower.dialect import Dialect, nvvm_dialect
from .lower.index32 import index32_twins
from .passes import PIPELINE, configured, run_pipeline
from .passes.arch_requirements import MissingArch
from .scan import ProjectIndex
from .targets import BACKENDS, DEFAULT_ARCHS, SUPPORTED_ARCHS, newest_arch

if TYPE_CHECKING:
    from .backends.cpu.codegen import HostCode

DEVICES = ("cuda", "cpu")  # CompileOptions.device

__all__ = ["DEFAULT_ARCHS", "SUPPORTED_ARCHS", "BACKENDS", "ArchRequirementError", "CodePath", "CompileOptions",
           "CompiledModule", "DeviceCode", "ModuleBuild", "STAGES", "Stage", "build_ir", "code_path", "compile_module",
           "ptxas_options", "run_stages"]


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
    # with lto: the Python side entered the link as its PTX (``ptx``), not as LTO-IR (bf16: CodePath)
    lto_from_ptx: bool = False
    arrays: tuple[ModuleArrayRecord, ...] = ()  # the module's own constant/global memory arrays
    # kernel entry symbol -> the bytes of the parameter block it declares (lower/entry_params.py)
    param_bytes: dict[str, int] = field(default_factory=dict)
    host: HostCode | None = None  # options.device "cpu": the host code (backends/cpu/), no GPU code


# ---- how the device code is made: the one decision -------------------------------------------

@dataclass(frozen=True)
class CodePath:
    """How a module's device code is made, decided once (``code_path``) for every stage.

    ``cpu``: host code for the CPU device (``options.device``), made by the ``cpu`` stage; the
    GPU stages (ptx, ltoir, link, package) skip. ``lto``: linked with CUDA C++ (or exported to
    it) by nvJitLink ``-lto``. ``libnvvm``:
    libNVVM compiles the Python side (the lowering then writes the forms libNVVM reads:
    inline PTX for the intrinsics it lacks); otherwise LLVM's NVPTX does. ``python_ltoir``:
    the Python side enters the link as LTO-IR (libNVVM's; cross-language inlining), otherwise as
    NVPTX's PTX, compiled by the linker on its own (a module with bf16, which libNVVM cannot read).
    """

    lto: bool
    libnvvm: bool
    python_ltoir: bool
    cpu: bool = False


def _has_bf16(ty: Type) -> bool:
    """Whether a value of ``ty`` is or holds bf16 (a view: its elements)."""
    if isinstance(ty, ScalarType):
        return ty.name == "bf16"
    if isinstance(ty, (VectorType, ViewType, ArrayType, TensorMapType)):
        return _has_bf16(ty.elem)
    if isinstance(ty, StructType):
        return any(_has_bf16(t) for _, t in ty.fields)
    if isinstance(ty, TupleType):
        return any(_has_bf16(t) for t in ty.elems)
    return False


def _bf16_user(program: ir.Program) -> ir.Function | None:
    """The first function whose values are bf16 (libNVVM's IR has no ``bfloat``)."""
    for fn in program.functions:
        if any(_has_bf16(t) for t in [*(p.ty for p in fn.params), *fn.locals.values(), fn.ret]):
            return fn
        for s in ir.statements(fn.body):
            if isinstance(s, ir.ArrayDecl) and _has_bf16(s.ty):
                return fn
            for root in ir.statement_roots(s):
                if any(_has_bf16(t) for e in ir.subexpressions(root) if (t := getattr(e, "ty", None)) is not None):
                    return fn
    return None


def code_path(program: ir.Program, options: CompileOptions) -> CodePath:
    """NVPTX or libNVVM, PTX or LTO-IR: the module's ``CodePath``. A module with bf16 values
    is refused where only libNVVM can do what is asked (``--backend nvvm``, ``emit_ltoir``)."""
    if options.device == "cpu":
        return CodePath(lto=False, libnvvm=False, python_ltoir=False, cpu=True)
    lto = needs_lto(program, options.link_inputs)
    bf16 = _bf16_user(program)
    if bf16 is not None and (options.backend == "nvvm" or options.emit_ltoir):
        raise CompileError(
            f"{bf16.python_name}() uses bf16, which libNVVM (the nvvm backend, and the LTO-IR of the Python side) "
            "cannot compile", SourceLocation(bf16.file, bf16.line, 1),
            "use the nvptx backend (the default) for this module, or compute in f16/f32")
    if bf16 is not None and lto and options.embed_ptx and options.link_cubins:
        raise CompileError(
            f"{bf16.python_name}() uses bf16 in a module linked with CUDA C++, which cannot ship PTX "
            "([tool.oxide] ptx = true): libNVVM cannot compile bf16 into LTO-IR, and nvJitLink makes the "
            "PTX of a linked module only from LTO-IR", SourceLocation(bf16.file, bf16.line, 1),
            "set ptx = false (the cubins are linked all the same), or keep the bf16 kernels in a module "
            "without C++")
    libnvvm = options.backend == "nvvm" or options.emit_ltoir or (lto and bf16 is None)
    return CodePath(lto=lto, libnvvm=libnvvm, python_ltoir=lto and bf16 is None)


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


def _lowering() -> ModuleType:
    """``lower/llvm.py``, imported by the stages after ``passes`` only: it loads llvmlite,
    which ``build_ir`` (scan, frontend, passes) does not need (tests/test_imports.py)."""
    from .lower import llvm

    return llvm


# ---- what crosses between the stages --------------------------------------------------------

@dataclass
class DeviceCode:
    """What the code generation and link stages make."""

    ptx: dict[str, str] = field(default_factory=dict)  # arch -> the Python side's PTX
    ltoir: dict[str, bytes] = field(default_factory=dict)  # arch -> the Python side's LTO-IR
    cubins: dict[str, bytes] = field(default_factory=dict)
    fallback: dict[str, str] = field(default_factory=dict)  # arch -> PTX shipped for the JIT
    fatbin: bytes | None = None
    link_inputs: tuple[str, ...] = ()
    dependencies: list[Path] = field(default_factory=list)


@dataclass
class ModuleBuild:
    """One module on its way through ``STAGES``: the request, then each stage's result."""

    source_path: Path
    module_name: str
    options: CompileOptions
    root: Path
    print_after: str | None = None
    source_text: str | None = None  # the text to compile instead of the file's (a module part)
    index: ProjectIndex | None = None  # frontend
    result: FrontendResult | None = None  # frontend, passes
    path: CodePath | None = None  # lower
    llvm_ir: str = ""  # lower: the NVPTX form
    # lower: entry symbol -> the parameter positions it declares, for those whose code does not
    # read every one (lower/entry_params.py; every form of the module declares the same), and
    # entry symbol -> the bytes of its parameter block
    kept_params: dict[str, tuple[int, ...]] = field(default_factory=dict)
    param_bytes: dict[str, int] = field(default_factory=dict)
    device: DeviceCode = field(default_factory=DeviceCode)  # ptx, ltoir, link, package
    host: HostCode | None = None  # cpu
    cache: CompileCache = field(default_factory=CompileCache)
    _nvvm_ir: dict[Dialect, str] = field(default_factory=dict)

    @property
    def frontend(self) -> FrontendResult:
        assert self.result is not None, "the frontend stage has not run"
        return self.result

    @property
    def program(self) -> ir.Program:
        return self.frontend.program

    @property
    def code(self) -> CodePath:
        assert self.path is not None, "the lower stage has not run"
        return self.path

    def nvvm_ir(self, arch: str) -> str:
        """The program lowered as NVVM IR for libNVVM (``lower/dialect.py``), when first asked
        for, once per form."""
        o = self.options
        dialect = nvvm_dialect(nvvm_backend.nvvm_ir_version(), arch)
        if dialect not in self._nvvm_ir:
            lowered = _lowering().lower_program(self.program, self.module_name, fast_math=o.fast_math,
                                                lineinfo=o.lineinfo, dialect=dialect, fma=o.fma)
            if lowered.kept_params != self.kept_params:  # the manifest records one parameter list per entry
                raise CompileError(
                    f"internal compiler error: the NVVM IR of {self.module_name} for {arch} keeps other kernel "
                    f"parameters ({lowered.kept_params}) than its NVPTX form ({self.kept_params})",
                    hint="please report this with the module's source")
            self._nvvm_ir[dialect] = lowered.text()
        return self._nvvm_ir[dialect]


# ---- the stages ------------------------------------------------------------------------------

def _frontend(build: ModuleBuild) -> None:
    """Scan and frontend: the IR of every kernel of the module and what it calls."""
    o = build.options
    for arch in o.archs:
        if arch not in SUPPORTED_ARCHS:
            raise CompileError(f"unknown arch {arch!r}; supported: {', '.join(SUPPORTED_ARCHS)}")
    if o.backend not in BACKENDS:
        raise CompileError(f"unknown backend {o.backend!r}; supported: {', '.join(BACKENDS)}")
    if o.device not in DEVICES:
        raise CompileError(f"unknown device {o.device!r}; supported: {', '.join(DEVICES)}")
    texts = {build.source_path.resolve(): build.source_text} if build.source_text is not None else None
    build.index = ProjectIndex(build.root, texts)
    module = build.index.add_file(build.source_path, build.module_name)
    build.result = build_program(build.index, module, bounds_check=o.bounds_check, device=o.device)


def _passes(build: ModuleBuild) -> None:
    """``PIPELINE``, each pass given its options; the kernel specs take what the passes settled."""
    assert build.index is not None
    frontend = build.frontend
    try:
        frontend.program = run_pipeline(frontend.program, configured(PIPELINE, build.options),
                                        print_after=build.print_after)
    except MissingArch as e:
        located = located_error(build.index, e.file, e.loc, e.message, e.hint)
        raise ArchRequirementError(located.message, located.location, located.hint, required=e.required) from None
    except IRError as e:
        raise located_error(build.index, e.file, e.loc, e.message, e.hint) from None
    # the manifest's kernel specs take the preconditions and the launch kind the passes settled
    # on, and the entry point of the index32 instance the lowering makes (lower/index32.py)
    # and the fast instance the launch-instances pass split off (passes/launch_instances.py)
    settled = {f.symbol: f for f in frontend.program.functions if f.is_kernel}
    twins = index32_twins(frontend.program)

    def fast_fields(fn: ir.Function) -> dict[str, Any]:
        if not fn.fast_symbol:
            return {}
        assert fn.fast_condition is not None
        return dict(fast_symbol=fn.fast_symbol, fast_condition=tuple(compile_expression(fn.fast_condition)),
                    fast_index32_symbol=twins.get(fn.fast_symbol, ""))

    frontend.kernels = [k._replace(preconditions=tuple(Precondition(c.site, tuple(compile_expression(c.expr)))
                                                       for c in settled[k.symbol].preconditions),
                                   cooperative=settled[k.symbol].cooperative,
                                   index32_symbol=twins.get(k.symbol, ""), **fast_fields(settled[k.symbol]))
                        if k.symbol in settled else k for k in frontend.kernels]


def _lower(build: ModuleBuild) -> None:
    """The code path, and the LLVM IR in NVPTX's form (the NVVM form is lowered on demand),
    whose kernel entries declare only the parameters their code reads (lower/entry_params.py)."""
    o = build.options
    build.path = code_path(build.program, o)
    lowered = _lowering().lower_program(build.program, build.module_name, fast_math=o.fast_math,
                                        lineinfo=o.lineinfo, libnvvm=build.path.libnvvm, fma=o.fma)
    build.llvm_ir = lowered.text()
    build.kept_params, build.param_bytes = lowered.kept_params, lowered.param_bytes


def _ptx(build: ModuleBuild) -> None:
    """PTX per arch, by NVPTX or libNVVM."""
    if build.code.cpu:
        return
    o, out = build.options, build.device
    if o.backend == "nvvm":
        out.ptx = {arch: _nvvm_ptx(build, arch) for arch in o.archs}
    else:
        out.ptx = {arch: optimize_and_emit_ptx(build.llvm_ir, arch, o.opt_level, o.fma) for arch in o.archs}


def _ltoir(build: ModuleBuild) -> None:
    """The Python side's LTO-IR (libNVVM ``-gen-lto``), where it is linked with C++ through it
    or asked for."""
    o = build.options
    if build.code.cpu:
        return
    if build.program.functions and (o.emit_ltoir or build.code.python_ltoir):
        build.device.ltoir = {arch: _nvvm_ltoir(build, arch) for arch in o.archs}


def _link(build: ModuleBuild) -> None:
    """Cubins (and the PTX fallback): ptxas over the module's PTX as a whole program, or, with
    C++, nvJitLink ``-lto`` over the Python side (LTO-IR or PTX) and the C++ inputs."""
    o, out, program = build.options, build.device, build.program
    if build.code.cpu:
        return
    newest = newest_arch(o.archs) if o.archs else None
    link_cubins = o.link_cubins and bool(build.frontend.kernels)
    if not build.code.lto:
        if link_cubins:
            for arch in o.archs:  # a whole program: setmaxnreg holds (link/ptxas.py)
                out.cubins[arch] = ptx_cubin(out.ptx[arch], arch, ptxas_options(o), build.module_name)
        if o.embed_ptx and newest is not None:
            out.fallback[newest] = out.ptx[newest]
        return
    settings = LinkSettings(
        include_dirs=o.include_dirs, defines=o.defines, nvrtc_options=o.nvrtc_options, link_inputs=o.link_inputs,
        cudadevrt=o.cudadevrt, opt_level=o.opt_level, link_options=ptxas_options(o), cache=build.cache,
    )
    files = link_input_files(program, settings)
    out.link_inputs = tuple(f.name for f in files)
    out.dependencies = input_dependencies(files, o.include_dirs)
    if not link_cubins:
        return

    def python_side(arch: str) -> tuple[bytes | None, str | None]:
        if build.code.python_ltoir:
            return out.ltoir.get(arch), None
        return None, out.ptx[arch] if program.functions else None

    for arch in o.archs:
        ltoir, ptx = python_side(arch)
        out.cubins[arch] = link_module(program, module_inputs(program, ltoir, build.module_name, arch, settings, ptx),
                                       arch, settings)
    if o.embed_ptx and newest is not None:
        ltoir, ptx = python_side(newest)
        inputs = module_inputs(program, ltoir, build.module_name, newest, settings, ptx)
        out.fallback[newest] = link_module_ptx(program, inputs, newest, settings)


def _cpu(build: ModuleBuild) -> None:
    """Host code for the CPU device (``backends/cpu/codegen.py``), where ``options.device`` asks
    for it: the same IR lowered in the CPU dialect, with each kernel's entry points for the
    scheduler. Its kernels declare the parameters the GPU code's do (the runtime packs one
    parameter list per entry)."""
    if not build.code.cpu:
        return
    from .backends.cpu.codegen import lower_for_cpu
    from .backends.cpu.cxx import build_host_cxx

    o = build.options
    cxx = build_host_cxx(build.program, o.include_dirs, o.defines, o.link_inputs, build.module_name)
    build.device.dependencies = list(cxx.dependencies)  # an edited .cu recompiles the module
    build.host = lower_for_cpu(build.program, build.module_name, fast_math=o.fast_math, fma=o.fma, sanitize=o.sanitize,
                               cxx=cxx)
    refused = build.host.refused  # their bodies are traps: they read no parameter
    if ({k: v for k, v in build.host.kept_params.items() if k not in refused}
            != {k: v for k, v in build.kept_params.items() if k not in refused}):
        raise CompileError(
            f"internal compiler error: the host code of {build.module_name} keeps other kernel parameters "
            f"({build.host.kept_params}) than its GPU code ({build.kept_params})",
            hint="please report this with the module's source")


def _package(build: ModuleBuild) -> None:
    """One fatbin of every cubin and the PTX fallback, when asked for."""
    out = build.device
    if build.options.fatbin and out.cubins:
        out.fatbin = make_fatbin(out.cubins, out.fallback, build.module_name)


# the backends' compiles through the compile cache (libNVVM's results; NVPTX's are not kept)

def _fma_key(fma: bool) -> tuple[str, ...]:
    return () if fma else ("fma=0",)


def _nvvm_ptx(build: ModuleBuild, arch: str) -> str:
    o, text = build.options, build.nvvm_ir(arch)
    key = cache_key("nvvm-ptx", tool_versions(), arch, str(o.opt_level), text, *_fma_key(o.fma))
    data = build.cache.get(key)
    if data is None:
        data = nvvm_backend.emit_ptx(text, arch, o.opt_level, build.module_name, o.fma, o.lineinfo).encode()
        build.cache.put(key, data)
    return data.decode()


def _nvvm_ltoir(build: ModuleBuild, arch: str) -> bytes:
    o, text = build.options, build.nvvm_ir(arch)
    key = cache_key("nvvm-ltoir", tool_versions(), arch, str(o.opt_level), text, *_fma_key(o.fma))
    data = build.cache.get(key)
    if data is None:
        data = nvvm_backend.emit_ltoir(text, arch, o.opt_level, build.module_name, o.fma, o.lineinfo)
        build.cache.put(key, data)
    return data


@dataclass(frozen=True)
class Stage:
    """One step of the driver: ``run`` reads the ``ModuleBuild`` fields earlier stages set and
    sets its own."""

    name: str
    run: Callable[[ModuleBuild], None]


STAGES: tuple[Stage, ...] = (
    Stage("frontend", _frontend),  # source -> IR (scan, names, types, kernel specs)
    Stage("passes", _passes),  # IR -> IR (PIPELINE: checks, bounds elimination, fma, ...)
    Stage("lower", _lower),  # IR -> CodePath, LLVM IR
    Stage("ptx", _ptx),  # LLVM IR -> PTX per arch (NVPTX or libNVVM), entry parameters
    Stage("ltoir", _ltoir),  # NVVM IR -> LTO-IR per arch (libNVVM), where the link takes it
    Stage("link", _link),  # PTX / LTO-IR + C++ -> cubins, PTX fallback
    Stage("package", _package),  # cubins -> fatbin
    Stage("cpu", _cpu),  # IR -> host code for the CPU device (options.device "cpu"; the GPU stages skip)
)


def run_stages(build: ModuleBuild, stages: tuple[Stage, ...] = STAGES, until: str | None = None) -> ModuleBuild:
    """Runs ``stages`` in order over ``build``, through the one named ``until`` (all by default)."""
    with _cyclic_gc_paused():
        for stage in stages:
            stage.run(build)
            if stage.name == until:
                break
    return build


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off while one module compiles, as it was before after it.

    A compile allocates millions of objects that live until it ends (the AST, the IR, llvmlite's
    instructions): each full collection the allocations trigger walks all of them again, and a
    flash-attention module spent 4 of its 13 s of CPU in 9 of them. Paused, the objects stay
    in the youngest generation, and the first collection after the compile frees the cycles it
    left (llvmlite's instructions and blocks point at each other) in one walk. Reference counting
    still frees everything else at once, so memory grows only by those cycles of one module."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---- the entry points ------------------------------------------------------------------------

def _request(source_path: Path, module_name: str, options: CompileOptions, root: Path | None,
             print_after: str | None, source_text: str | None = None) -> ModuleBuild:
    source_path = Path(source_path)
    return ModuleBuild(source_path, module_name, options, root if root is not None else source_path.parent,
                       print_after, source_text, cache=CompileCache(enabled=options.cache))


def compile_module(
    source_path: Path,
    module_name: str,
    options: CompileOptions = CompileOptions(),
    root: Path | None = None,
    print_after: str | None = None,
    source_text: str | None = None,
) -> CompiledModule:
    """Compiles every kernel of ``source_path`` (and the device functions they reach, also in
    other modules under ``root``) for every arch of ``options``. ``source_text``: the text to
    compile in place of the file's (a part of the module, ``oxide_build.package.module_parts``);
    the manifest still records the file's SHA-256.

    Raises ``oxide.CompileError`` (source problems), ``oxide.LinkError`` and
    ``oxide.ToolchainError`` (a missing component; the message names the pip package).
    ``print_after``: see ``build_ir``.
    """
    build = run_stages(_request(source_path, module_name, options, root, print_after, source_text))
    assert build.index is not None
    device, program = build.device, build.program
    own = build.source_path.resolve()
    dependencies = {
        path: source_sha256(path.read_bytes())
        for path in [*build.index.parsed_files(), *device.dependencies] if path.resolve() != own
    }
    return CompiledModule(
        module_name=module_name,
        source_path=build.source_path,
        source_sha256=source_sha256(build.source_path.read_bytes()),
        kernels=_with_param_slots(build.frontend.kernels, build.kept_params),
        llvm_ir=build.llvm_ir,
        ptx=device.ptx,
        cubins=device.cubins,
        ptx_fallback=device.fallback,
        error_sites=tuple(build.frontend.error_sites),
        arrays=module_array_records(program, module_name),
        param_bytes=build.param_bytes,
        ltoir=device.ltoir,
        fatbin=device.fatbin,
        exports=export_decls(program),
        boundary=boundary_decls(program),
        link_inputs=device.link_inputs,
        dependencies=dependencies,
        lto=build.code.lto,
        lto_from_ptx=build.code.lto and not build.code.python_ltoir and bool(program.functions),
        host=build.host,
    )


def build_ir(
    source_path: Path, module_name: str, options: CompileOptions = CompileOptions(), root: Path | None = None,
    print_after: str | None = None,
) -> tuple[ProjectIndex, FrontendResult]:
    """Scan, frontend and passes: the IR of every kernel of ``source_path`` and what it calls
    (what ``oxide compile --emit ir`` prints), with the index of the source files it read.
    ``print_after``: a pass name (or "all") whose output goes to stderr."""
    build = run_stages(_request(source_path, module_name, options, root, print_after), until="passes")
    assert build.index is not None
    return build.index, build.frontend


def _with_param_slots(kernels: list[KernelSpec], kept: dict[str, tuple[int, ...]]) -> tuple[KernelSpec, ...]:
    """The kernel specs with the parameters each entry point still declares
    (``KernelSpec.param_slots``, lower/entry_params.py), as the slots where they begin."""

    def slots(k: KernelSpec, symbol: str) -> tuple[int, ...] | None:
        if symbol not in kept:
            return None
        starts = entry_param_starts(k.params)
        return tuple(starts[i] for i in kept[symbol])

    return tuple(k._replace(param_slots=slots(k, k.symbol), index32_param_slots=slots(k, k.index32_symbol),
                            fast_param_slots=slots(k, k.fast_symbol),
                            fast_index32_param_slots=slots(k, k.fast_index32_symbol))
                 for k in kernels)
