"""llvmlite's MCJIT for the host: optimizes host code (``codegen.py``) with LLVM's new pass
manager at -O3 for this machine's CPU and gives the addresses of its entry points and globals.

The scheduler's functions and context (``_fibers.c``) and the special math functions C's library
lacks (``_special_math.c``: erfinv, erfcx, the Bessel I0/I1, ...) are made known to the JIT by
name (``llvm.add_symbol``); libm and libc (``printf``) resolve from the process."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import llvmlite.binding as llvm

from oxide.errors import OxideError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["CpuUnavailable", "JitModule", "SPECIAL_MATH", "scheduler", "special_math_symbols", "target_machine"]

# the functions _special_math.c defines, each as oxide_cpu_<name> (f64) and oxide_cpu_<name>f (f32)
SPECIAL_MATH = ("erfinv", "erfcinv", "erfcx", "normcdfinv", "cyl_bessel_i0", "cyl_bessel_i1")


class CpuUnavailable(OxideError):
    """The CPU device cannot run here (its scheduler extension was not built)."""


_FLUSHING_FEATURES = ("avx512bf16", "avxneconvert")


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The host's target machine, for its triple and data layout (an engine takes one of its own:
    MCJIT owns and frees the one it is given)."""
    return new_target_machine()


def new_target_machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    features = llvm.get_host_cpu_features()
    # the host's f32 -> bf16 instructions (AVX512-BF16's, AVX-NE-CONVERT's vcvtneps2bf16) flush
    # subnormals to zero, which the GPU's cvt.rn.bf16.f32 does not: LLVM then rounds with
    # integer code, or calls __truncsfbf2 (_fibers.c)
    for feature in _FLUSHING_FEATURES:
        if feature in features:
            features[feature] = False
    features = features.flatten()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3,
                                        reloc="default", codemodel="jitdefault")


@functools.cache
def scheduler() -> ModuleType:
    """The scheduler extension, its symbols registered with the JIT once."""
    try:
        from . import _fibers  # type: ignore[attr-defined]
    except ImportError as e:
        raise CpuUnavailable(
            "the CPU device's scheduler (oxide_build/backends/cpu/_fibers.c) is not built in this installation: "
            f"{e}; if this is a source checkout of oxide on sys.path (python run in its root), it shadows the "
            "installed oxide-cuda: run from another directory, or install the checkout with `pip install -e .`",
        ) from None
    for name, address in _fibers.symbols().items():
        llvm.add_symbol(name, address)
    for name, address in special_math_symbols().items():
        llvm.add_symbol(name, address)
    module: ModuleType = _fibers
    return module


@functools.cache
def special_math_symbols() -> dict[str, int]:
    """The addresses of ``_special_math.c``'s functions by name (none where it is not built: a
    module that calls one then fails to load, saying so)."""
    try:
        from . import _special_math  # type: ignore[attr-defined]
    except ImportError:
        return {}
    symbols: dict[str, int] = _special_math.symbols()
    return symbols


def _check_scheduler_symbols(mod: llvm.ModuleRef) -> None:
    """Every scheduler function or variable the code names is one the built extension has: MCJIT
    would resolve a missing one to address 0 (an extension built from an older _fibers.c)."""
    known = {**scheduler().symbols(), **special_math_symbols()}
    names = [f.name for f in mod.functions if f.is_declaration] + [g.name for g in mod.global_variables
                                                                   if g.is_declaration]
    missing = sorted(n for n in names if n.startswith("oxide_cpu_") and n not in known)
    if missing and all(n.removeprefix("oxide_cpu_").rstrip("f") in SPECIAL_MATH for n in missing):
        raise CpuUnavailable(
            f"the CPU device's special math functions (oxide_build/backends/cpu/_special_math.c: "
            f"{', '.join(missing)}) are not built in this installation: rebuild it (pip install -e . in a checkout)")
    if missing:
        raise CpuUnavailable(
            f"the CPU device's scheduler extension (oxide_build/backends/cpu/_fibers.c) lacks {', '.join(missing)}: "
            "it was built from an older source; rebuild it (pip install -e . in a checkout)")


def _check_host_symbols(mod: llvm.ModuleRef, registered: frozenset[str]) -> None:
    """Every other function the code calls is one the process defines (the C library's, libm's)
    or one registered with the JIT: MCJIT would resolve a missing one to address 0, a crash at
    the first call (a libdevice function whose host form names a function C lacks)."""
    import ctypes

    process = ctypes.CDLL(None)
    missing = sorted(f.name for f in mod.functions if f.is_declaration and not f.name.startswith(("llvm.", "oxide_cpu_"))
                     and f.name not in registered and not hasattr(process, f.name))
    if missing:
        raise CpuUnavailable(f"the CPU device's code calls {', '.join(missing)}, which this process does not define: "
                             "please report this at the oxide issue tracker with the kernel source")


class JitModule:
    """One host-code module, compiled; kept alive as long as its code may run. ``registered``:
    the names given to the JIT besides the scheduler's (a module's C++ library, ``cxx.py``)."""

    def __init__(self, llvm_ir: str, opt_level: int = 3, registered: frozenset[str] = frozenset()) -> None:
        scheduler()
        tm = new_target_machine()
        mod = llvm.parse_assembly(llvm_ir)
        mod.triple = tm.triple
        mod.verify()
        _check_scheduler_symbols(mod)
        _check_host_symbols(mod, registered | {*scheduler().symbols(), *special_math_symbols()})
        if opt_level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
            pass_builder = llvm.create_pass_builder(tm, pto)
            pass_builder.getModulePassManager().run(mod, pass_builder)
        self._engine: Any = llvm.create_mcjit_compiler(mod, tm)
        self._engine.finalize_object()
        self._module = mod

    def function_address(self, name: str) -> int:
        address = int(self._engine.get_function_address(name))
        if not address:
            raise KeyError(name)
        return address

    def global_address(self, name: str) -> int:
        address = int(self._engine.get_global_value_address(name))
        if not address:
            raise KeyError(name)
        return address

    def global_size(self, name: str) -> int:
        g = self._module.get_global_variable(name)
        return int(self._engine.target_data.get_abi_size(g.global_value_type))

    def optimized_ir(self) -> str:
        return str(self._module)
