"""NVVM IR → PTX or LTO-IR with libNVVM (``cuda.bindings.nvvm``, wheel ``nvidia-nvvm``).

libNVVM reads the NVVM IR dialect (LLVM 7 era IR with typed pointers). The lowering writes
that dialect itself (``lower/dialect.py``: ``nvvm_dialect(nvvm_ir_version(), arch)``), so this
module only compiles: it adds libdevice when the module calls it and asks for line tables when
told to (``lineinfo``).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from oxide.errors import CompileError, ToolchainError

from ..lower.dialect import NVVM_DATA_LAYOUT
from .libdevice import libdevice_bytes

__all__ = [
    "NVVM_DATA_LAYOUT",
    "NVVMOutput",
    "compile_nvvm",
    "nvvm_ir_version",
    "nvvm_versions",
    "emit_ptx",
    "emit_ltoir",
]

_PIP_HINT = "pip install nvidia-nvvm (or pip install 'oxide-cuda[build]')"

_lock = threading.Lock()


def _nvvm():  # type: ignore[no-untyped-def]
    from ..toolchain import bindings

    nvvm = bindings("NVVM")
    try:
        nvvm.version()
    except Exception as exc:  # the library loaded but is not usable
        raise ToolchainError(f"libNVVM could not be used ({exc}): {_PIP_HINT}") from None
    return nvvm


def nvvm_versions() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(libNVVM version, NVVM IR version it reads), e.g. ((2, 0), (2, 0, 3, 2))."""
    nvvm = _nvvm()
    return tuple(nvvm.version()), tuple(nvvm.ir_version())


def nvvm_ir_version() -> tuple[int, ...]:
    """The NVVM IR version libNVVM reads (major, minor, debug major, debug minor): the
    ``!nvvmir.version`` of the modules the lowering writes for it."""
    return tuple(_nvvm().ir_version())


@dataclass(frozen=True)
class NVVMOutput:
    data: bytes  # PTX text (encoded) or LTO-IR
    log: str  # libNVVM's warnings, if any


# ---- compiling -----------------------------------------------------------------------------

def compile_nvvm(ir_text: str, arch: str, options: tuple[str, ...] = (), name: str = "module",
                 libdevice: bool = False) -> NVVMOutput:
    """Compiles NVVM IR text for ``arch`` ("sm_90" or "compute_90"); ``options`` are libNVVM's
    (``-gen-lto``, ``-opt=3``)."""
    nvvm = _nvvm()
    compute = arch.replace("sm_", "compute_")
    opts = [f"-arch={compute}", *options]
    with _lock:  # libNVVM programs are independent, but be conservative about its globals
        prog = nvvm.create_program()
        try:
            data = ir_text.encode()
            nvvm.add_module_to_program(prog, data, len(data), name)
            if libdevice:
                bc = libdevice_bytes()
                nvvm.lazy_add_module_to_program(prog, bc, len(bc), "libdevice")
            try:
                nvvm.compile_program(prog, len(opts), opts)
            except nvvm.nvvmError as exc:
                log = _program_log(nvvm, prog)
                raise CompileError(
                    f"libNVVM rejected the module {name} for {compute} ({exc}):\n{log}".rstrip(),
                    hint="this is a bug in oxide's lowering for libNVVM; the nvptx backend (the default) may work",
                ) from None
            size = nvvm.get_compiled_result_size(prog)
            buf = bytearray(size)
            nvvm.get_compiled_result(prog, buf)
            log = _program_log(nvvm, prog)
        finally:
            nvvm.destroy_program(prog)
    return NVVMOutput(bytes(buf).rstrip(b"\0") if "-gen-lto" not in options else bytes(buf), log)


def _program_log(nvvm, prog) -> str:  # type: ignore[no-untyped-def]
    try:
        size = nvvm.get_program_log_size(prog)
        buf = bytearray(size)
        nvvm.get_program_log(prog, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""


_LIBDEVICE_CALL_RE = re.compile(r'^declare\b[^@]*@"?__nv_', re.M)


def _uses_libdevice(llvm_ir: str) -> bool:
    return _LIBDEVICE_CALL_RE.search(llvm_ir) is not None


def emit_ptx(nvvm_ir: str, arch: str, opt_level: int = 3, name: str = "module", fma: bool = True,
             lineinfo: bool = False) -> str:
    """NVVM IR (lowered for ``arch`` in ``nvvm_dialect``) → PTX text for ``arch``. ``fma``:
    libNVVM's ``-fma=1`` (its default, nvcc's ``--fmad=true``) or ``-fma=0``; ``lineinfo``:
    the line table of a module lowered with one (libNVVM writes ``.loc`` only when asked)."""
    opts = (f"-opt={3 if opt_level > 0 else 0}", *_line_info(lineinfo), *_fma(fma))
    out = compile_nvvm(nvvm_ir, arch, opts, name, _uses_libdevice(nvvm_ir))
    return out.data.decode()


def _fma(fma: bool) -> tuple[str, ...]:
    return () if fma else ("-fma=0",)


def _line_info(lineinfo: bool) -> tuple[str, ...]:
    return ("-generate-line-info",) if lineinfo else ()


def emit_ltoir(nvvm_ir: str, arch: str, opt_level: int = 3, name: str = "module", fma: bool = True,
               lineinfo: bool = False) -> bytes:
    """NVVM IR (lowered for ``arch`` in ``nvvm_dialect``) → LTO-IR for ``arch`` (``-gen-lto``),
    for nvJitLink ``-lto``; the libdevice functions it calls are compiled into it."""
    opts = ("-gen-lto", f"-opt={3 if opt_level > 0 else 0}", *_line_info(lineinfo), *_fma(fma))
    return compile_nvvm(nvvm_ir, arch, opts, name, _uses_libdevice(nvvm_ir)).data
