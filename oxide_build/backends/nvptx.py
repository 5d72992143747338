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
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    tm = target.create_target_machine(cpu=arch, opt=opt_level, codemodel="default")
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        mpm = pb.getModulePassManager()
        mpm.run(module, pb)
    return str(tm.emit_assembly(module))
