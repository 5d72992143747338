"""Which LLVM IR the lowering writes: the forms LLVM's NVPTX backend reads, or NVVM IR for
libNVVM.

libNVVM reads the NVVM IR dialect: LLVM 7 era IR with typed pointers, its own data layout, a
``!nvvmir.version`` and no newer instructions. Rather than rewriting printed IR, the lowering
asks its ``Dialect`` at each place where the two differ and builds the form the backend
accepts (``lower/llvm.py``'s ``FunctionLowering.fneg``/``freeze``/``branch_weights``,
``intrinsics/atomic.py``, ``ModuleLowering.finish_nvvm``):

==========================  ====================================  ==========================================
construct                   NVPTX (LLVM 22)                       NVVM IR (libNVVM)
==========================  ====================================  ==========================================
target                      NVPTX triple and data layout          the same triple, NVVM's data layout
float negation              ``fneg``                              ``fsub -0.0, x``
float atomic add            ``atomicrmw fadd``                    ``llvm.nvvm.atomic.load.add.f32/f64``
wrapping inc/dec            ``atomicrmw uinc_wrap/udec_wrap``     ``llvm.nvvm.atomic.load.inc/dec.32``
``freeze``                  ``freeze``                            a no-op ``bitcast`` (LLVM 7 has none)
branch weights              kept                                  dropped from sm_100 on (libNVVM 13.5
                                                                  crashes on some modules for compute_120)
subprogram flags            ``spFlags:``                          ``isDefinition:``, ``isOptimized:``
entry points                ``!nvvm.annotations``                 also listed in ``@llvm.used``: with
                                                                  ``-gen-lto`` the LTO link drops them
                                                                  otherwise, and folds the runtime's
                                                                  globals to their initializers
version                     none                                  ``!nvvmir.version`` (``nvvm.ir_version()``)
==========================  ====================================  ==========================================

A third dialect, ``cpu_dialect``, is host code for the CPU device (see there).

Both print typed pointers (``float addrspace(1)*``): libNVVM needs them, and LLVM ≥ 17 still
parses them, reading every pointer as opaque. Fences are ``llvm.nvvm.membar.*`` in both (what
``__threadfence()`` compiles to), and the function attributes the lowering sets are all ones
libNVVM's parser knows (tests/test_backends_nvvm_dialect.py checks both).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..targets import arch_number

__all__ = ["Dialect", "NVPTX", "NVPTX_TRIPLE", "NVPTX_DATA_LAYOUT", "NVVM_DATA_LAYOUT", "cpu_dialect", "nvvm_dialect"]

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
NVVM_DATA_LAYOUT = (
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64"
    "-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
)


@dataclass(frozen=True)
class Dialect:
    """The forms of LLVM IR one backend reads (see the module's table)."""

    name: str  # "nvptx" or "nvvm"
    triple: str
    data_layout: str
    nvvm_ir_version: tuple[int, int, int, int] | None = None  # libNVVM's (major, minor, debug major, debug minor)
    branch_weights: bool = True

    @property
    def is_nvvm(self) -> bool:
        return self.nvvm_ir_version is not None

    @property
    def is_cpu(self) -> bool:
        """Host code for the CPU device (``oxide_build/backends/cpu/``)."""
        return self.name == "cpu"


NVPTX = Dialect("nvptx", NVPTX_TRIPLE, NVPTX_DATA_LAYOUT)


def cpu_dialect(triple: str, data_layout: str) -> Dialect:
    """Host code for the CPU device: the host's triple and data layout. The lowering writes the
    same IR as for NVPTX except where the GPU has hardware the host lacks (``lower/llvm.py``
    asks ``is_cpu`` there: special registers, ``bar.sync``, shared memory, the failure path), and
    each intrinsic's CPU form (``IntrinsicInfo.cpu_lowering``); address spaces 1, 3 and 4 are
    plain host memory there."""
    return Dialect("cpu", triple, data_layout, branch_weights=True)


def nvvm_dialect(ir_version: tuple[int, ...], arch: str) -> Dialect:
    """NVVM IR for ``arch`` ("sm_90", "compute_120"), read by a libNVVM whose
    ``nvvm.ir_version()`` is ``ir_version``."""
    major, minor, debug_major, debug_minor = (int(v) for v in ir_version[:4])
    return Dialect("nvvm", NVPTX_TRIPLE, NVVM_DATA_LAYOUT, (major, minor, debug_major, debug_minor),
                   branch_weights=arch_number(arch) < 100)
