"""The compiler driver: one source module in, PTX and cubins per arch out.

scan → frontend → passes → lower → backend → link, each stage its own module; this file only
sequences them and carries plain data between them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from oxide.runtime.manifest import ErrorSite, KernelSpec

__all__ = ["DEFAULT_ARCHS", "SUPPORTED_ARCHS", "CompileOptions", "CompiledModule", "compile_module"]

DEFAULT_ARCHS: tuple[str, ...] = ("sm_80", "sm_90")
SUPPORTED_ARCHS: tuple[str, ...] = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


@dataclass(frozen=True)
class CompileOptions:
    archs: tuple[str, ...] = DEFAULT_ARCHS
    opt_level: int = 3
    bounds_check: bool = True
    embed_ptx: bool = False  # also ship PTX of the newest arch for forward compatibility
    link_cubins: bool = True  # False: stop after PTX (oxide compile --emit llvm/ptx)


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


def source_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compile_module(
    source_path: Path,
    module_name: str,
    options: CompileOptions = CompileOptions(),
    root: Path | None = None,
) -> CompiledModule:
    """Compiles every kernel of ``source_path`` (and the device functions they reach, also in
    other modules under ``root``) for every arch of ``options``.

    Raises ``oxide.CompileError`` (source problems), ``oxide.LinkError`` and
    ``oxide.ToolchainError`` (a missing component; the message names the pip package).
    """
    from .backends.nvptx import optimize_and_emit_ptx
    from .frontend import build_program
    from .link.nvjitlink import LinkInput, link_cubin
    from .lower.llvm import lower_program, module_text
    from .scan import ProjectIndex

    source_path = Path(source_path)
    for arch in options.archs:
        if arch not in SUPPORTED_ARCHS:
            from oxide.errors import CompileError

            raise CompileError(f"unknown arch {arch!r}; supported: {', '.join(SUPPORTED_ARCHS)}")
    data = source_path.read_bytes()
    index = ProjectIndex(root if root is not None else source_path.parent)
    module = index.add_file(source_path, module_name)
    frontend = build_program(index, module, bounds_check=options.bounds_check)
    llvm_module = lower_program(frontend.program, module_name)
    llvm_ir = module_text(llvm_module, typed_pointers=False)
    ptx = {arch: optimize_and_emit_ptx(llvm_ir, arch, options.opt_level) for arch in options.archs}
    cubins: dict[str, bytes] = {}
    if options.link_cubins and frontend.kernels:
        for arch in options.archs:
            cubins[arch] = link_cubin([LinkInput(f"{module_name}.ptx", "ptx", ptx[arch].encode())], arch)
    fallback: dict[str, str] = {}
    if options.embed_ptx and options.archs:
        newest = max(options.archs, key=lambda a: int(a.split("_")[1]))
        fallback[newest] = ptx[newest]
    return CompiledModule(
        module_name=module_name,
        source_path=source_path,
        source_sha256=source_sha256(data),
        kernels=tuple(frontend.kernels),
        llvm_ir=llvm_ir,
        ptx=ptx,
        cubins=cubins,
        ptx_fallback=fallback,
        error_sites=tuple(frontend.error_sites),
    )
