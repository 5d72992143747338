"""LLVM IR → PTX with llvmlite's NVPTX target (LLVM's own optimizer runs first)."""
from __future__ import annotations

import threading

from oxide.errors import ToolchainError

from ..targets import arch_number
from .libdevice import libdevice_bytes

__all__ = ["optimize_and_emit_ptx", "llvm_version"]

_init_lock = threading.Lock()
_initialized = False
_emit_lock = threading.Lock()  # the FMA level is a process-wide LLVM option
_fma_level: int | None = None
SCEV_EXPANSION_BUDGET = 12
UNROLL_MAX_COUNT = 4


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
            # runtime unrolling as NVVM does it: a strided loop's trip count (from the thread, by
            # 256, to a run-time stop: a max and a divide) costs more than SCEV's default budget
            # of 4 instructions, so LLVM refused to unroll the row loops nvcc unrolls by 4; and no
            # runtime or partial unroll by more than 4, which NVVM does not either (by 8 the
            # unrolled row loops held more registers than they saved: measured in BENCHMARKS.md,
            # sixteenth session)
            llvm.set_option("oxide", f"-scev-cheap-expansion-budget={SCEV_EXPANSION_BUDGET}")
            llvm.set_option("oxide", f"-unroll-max-count={UNROLL_MAX_COUNT}")
            _initialized = True
    return llvm


def llvm_version() -> str:
    return ".".join(map(str, _llvm().llvm_version_info))


# intrinsics of sm_90 that need PTX ISA 8.0, while LLVM emits 7.8 for a plain sm_90 (sm_90a
# gets 8.0): LLVM cannot select them there and aborts the process
PTX80_INTRINSICS = ("llvm.nvvm.fence.proxy.async", "llvm.nvvm.cp.async.bulk", "llvm.nvvm.barrier.cluster.arrive.relaxed")
# and PTX 8.0 instructions the lowering writes as inline PTX (mbarrier.py, cluster.py), which ptxas refuses
# under .version 7.8: looked for in the module's text
PTX80_INLINE = ("mbarrier.arrive.expect_tx", "mbarrier.expect_tx", "mbarrier.try_wait", "mbarrier.complete_tx",
                "fence.mbarrier_init", "mbarrier.arrive.release.cluster")


# fp8 intrinsics (by name prefix) and the PTX ISA they need, newer than LLVM 22's default for
# sm_89 / sm_90 (7.8) and sm_90a (8.0): fp8 to f16x2 8.1, the fp8 mma 8.4
PTX_ISA_OF_FP8_INTRINSIC = (
    ("llvm.nvvm.e4m3x2.to.f16x2", 81), ("llvm.nvvm.e5m2x2.to.f16x2", 81),
    ("llvm.nvvm.mma.m16n8k32.row.col.f32.e", 84),
)


def _ptx_features(module: object, llvm_ir: str, arch: str) -> str:
    """``+ptxNN`` where the module needs PTX ISA NN, newer than the arch's default: an sm_90
    module that calls an intrinsic of ``PTX80_INTRINSICS`` or holds inline PTX of
    ``PTX80_INLINE`` (8.0), a module converting or multiplying fp8 (8.1, 8.4); "" otherwise, so
    the PTX of every other module stays what it was. sm_100 and newer default to 8.6 or later."""
    if arch_number(arch) >= 100:
        return ""
    names = [f.name for f in module.functions if f.is_declaration]  # type: ignore[attr-defined]
    needed = [isa for name in names for prefix, isa in PTX_ISA_OF_FP8_INTRINSIC if name.startswith(prefix)]
    if arch == "sm_90" and (any(name.startswith(PTX80_INTRINSICS) for name in names)
                            or any(marker in llvm_ir for marker in PTX80_INLINE)):
        needed.append(80)
    return f"+ptx{max(needed)}" if needed else ""


def optimize_and_emit_ptx(llvm_ir: str, arch: str, opt_level: int = 3, fma: bool = True) -> str:
    """Parses, verifies and optimizes ``llvm_ir`` for ``arch`` ("sm_90") and returns PTX text.

    ``fma``: contract every ``a * b + c`` the code generator sees, also in the libdevice
    functions (which carry no ``contract`` flags), and leave the other adds and multiplies
    plain (``add.f32``, which ptxas may fuse further) rather than ``add.rn.f32``: nvcc's
    ``--fmad=true``. Off, only what carries ``contract`` is fused (the lowering sets none then),
    and every add and multiply is ``.rn``, which ptxas does not fuse (``--fmad=false``).
    """
    llvm = _llvm()
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    if any(f.is_declaration and f.name.startswith("__nv_") for f in module.functions):
        _link_libdevice(llvm, module)
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    tm = target.create_target_machine(cpu=arch, opt=opt_level, codemodel="default",
                                      features=_ptx_features(module, llvm_ir, arch))
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        mpm = pb.getModulePassManager()
        mpm.run(module, pb)
    with _emit_lock:
        _set_fma_level(llvm, 2 if fma and opt_level > 0 else 0)
        return str(tm.emit_assembly(module))


def _set_fma_level(llvm, level: int) -> None:  # type: ignore[no-untyped-def]
    """NVPTX's FMA contraction (``-nvptx-fma-level``: 0 none beyond ``contract`` flags, 2 every
    multiply-add, as clang's CUDA default ``-ffp-contract=fast``); llvmlite's target machine
    has no fusion setting of its own."""
    global _fma_level
    if _fma_level != level:
        llvm.set_option("oxide", f"-nvptx-fma-level={level}")
        _fma_level = level


_subsets: dict[tuple[str, ...], str] = {}


def _libdevice_subset(llvm, names: tuple[str, ...], declarations: list[str]) -> str:  # type: ignore[no-untyped-def]
    """LLVM IR of just the libdevice functions ``names`` need. Parsing all of libdevice takes
    ~60 ms, so subsets are kept in memory and in the user cache dir."""
    if names in _subsets:
        return _subsets[names]
    import hashlib

    from ..link.cache import CompileCache, cache_key

    lib_bytes = libdevice_bytes()
    # through the compile cache: its entries are checksummed and its directory checked
    cache = CompileCache()
    key = cache_key("libdevice-subset", hashlib.sha256(lib_bytes).hexdigest(), "\0".join(names), llvm_version())
    cached = cache.get(key)
    if cached is not None:
        text = cached.decode()
        _subsets[names] = text
        return text
    used = ", ".join(f"ptr @{n}" for n in names)
    stub = llvm.parse_assembly(
        'target triple = "nvptx64-nvidia-cuda"\n' + "\n".join(declarations) + "\n"
        f'@llvm.used = appending global [{len(names)} x ptr] [{used}], section "llvm.metadata"\n')
    lib = llvm.parse_bitcode(lib_bytes)
    stub.data_layout = lib.data_layout
    lib.triple = stub.triple
    stub.link_in(lib)
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    tm = target.create_target_machine(cpu="sm_80", opt=0)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_internalize_pass()  # everything but @llvm.used's members...
    mpm.add_global_dead_code_eliminate_pass()  # ...and then what they do not reach goes
    mpm.run(stub, pb)
    text = "\n".join(line for line in str(stub).splitlines() if not line.startswith("@llvm.used"))
    _subsets[names] = text
    cache.put(key, text.encode())
    return text


def _link_libdevice(llvm, module) -> None:  # type: ignore[no-untyped-def]
    """Links the libdevice (math) functions ``module`` calls, as internal functions."""
    decls = sorted((f.name, str(f).strip()) for f in module.functions if f.is_declaration and f.name.startswith("__nv_"))
    names = tuple(n for n, _ in decls)
    sub = llvm.parse_assembly(_libdevice_subset(llvm, names, [d for _, d in decls]))
    sub.triple = module.triple
    sub.data_layout = module.data_layout
    defined = [f.name for f in sub.functions if not f.is_declaration]
    module.link_in(sub)
    for name in defined:
        module.get_function(name).linkage = "internal"
