"""LLVM IR → PTX with llvmlite's NVPTX target (LLVM's own optimizer runs first)."""
from __future__ import annotations

import threading

from oxide.errors import ToolchainError

__all__ = ["optimize_and_emit_ptx", "llvm_version"]

_init_lock = threading.Lock()
_initialized = False


def _llvm():  # type: ignore[no-untyped-def]
    global _initialized
    try:
        import llvmlite.binding as llvm
    except ImportError:
        raise ToolchainError("llvmlite is not installed: pip install 'oxide-cuda[build]' (or pip install llvmlite)") from None
    with _init_lock:
        if not _initialized:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _initialized = True
    return llvm


def llvm_version() -> str:
    return ".".join(map(str, _llvm().llvm_version_info))


def optimize_and_emit_ptx(llvm_ir: str, arch: str, opt_level: int = 3) -> str:
    """Parses, verifies and optimizes ``llvm_ir`` for ``arch`` ("sm_90") and returns PTX text."""
    llvm = _llvm()
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    if any(f.is_declaration and f.name.startswith("__nv_") for f in module.functions):
        _link_libdevice(llvm, module)
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    tm = target.create_target_machine(cpu=arch, opt=opt_level, codemodel="default")
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        mpm = pb.getModulePassManager()
        mpm.run(module, pb)
    return str(tm.emit_assembly(module))


_libdevice_bytes: bytes | None = None


def _link_libdevice(llvm, module) -> None:  # type: ignore[no-untyped-def]
    """Links CUDA's libdevice (math functions) into ``module`` and keeps only what it uses."""
    global _libdevice_bytes
    if _libdevice_bytes is None:
        try:
            from cuda.pathfinder import find_bitcode_lib

            path = find_bitcode_lib("device")
        except Exception as exc:
            raise ToolchainError(f"libdevice was not found ({exc}): pip install nvidia-nvvm") from None
        with open(path, "rb") as f:
            _libdevice_bytes = f.read()
    lib = llvm.parse_bitcode(_libdevice_bytes)
    lib.triple = module.triple
    lib.data_layout = module.data_layout
    module.link_in(lib)
    for f in module.functions:
        if f.name.startswith("__nv_") and not f.is_declaration:
            f.linkage = "internal"
