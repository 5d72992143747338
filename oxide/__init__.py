"""oxide: CUDA kernels in typed Python, compiled ahead of time into the wheel.

Importing oxide does no CUDA work; the driver is touched on the first launch.
"""
from __future__ import annotations

import gc as _gc


class _CollectorPaused:
    """``with _CollectorPaused():`` runs its body with the cycle collector off, and turns it back
    on afterwards if it was on. Used for oxide's own one-time work of a process's cold start
    (this package's import, the runtime's import under the first ``@kernel``, a kernel's first
    launch: modules, classes and the manifest's records, a few thousand objects that all live on),
    where the collector otherwise ran a dozen young-generation collections and older ones that walk
    every object the process has (issue 28 item 5). Reference counting still frees everything at
    once; the first collection afterwards looks at the paused work's objects once. A thread that
    turns the collector off itself while another thread's cold start is under way finds it on
    again afterwards."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = _gc.isenabled()
        _gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            _gc.enable()


with _CollectorPaused():
    from typing import TYPE_CHECKING

    from .errors import CompileError, CudaError, KernelError, LinkError, OxideError, ToolchainError
    from . import lang
    from .lang import (
        SCALAR_TYPES,
        Constexpr,
        DisjointSlice,
        MutSlice,
        Ptr,
        MutTensor,
        DisjointTensor,
        Tensor,
        ScalarType,
        Slice,
        ThreadIndex,
        TypeVar,
        acc_type,
        bf16,
        asm,
        atomic,
        bits,
        cp_async,
        cluster,
        mbarrier,
        mma,
        wgmma,
        warpgroup,
        block,
        fence,
        local,
        math,
        shared,
        static_range,
        timer,
        unroll,
        volatile,
        cache,
        warp,
        boolean,
        device,
        extern,
        extern_kernel,
        f8e4m3,
        f8e5m2,
        f16,
        f32,
        f64,
        grid,
        i8,
        i16,
        i32,
        i64,
        kernel,
        thread,
        u8,
        u16,
        u32,
        u64,
        unsafe,
    )

if TYPE_CHECKING:
    from .lang import (VECTOR_TYPES, ModuleArray, VectorType, bf16x2, bf16x4, bf16x8, constant, f16x2, f16x4, f16x8,
                       f32x2, f32x4, f32x8, f64x2, f64x4, global_memory, i8x4, i16x2, i32x2, i32x4, i64x2, struct,
                       struct_dtype, u8x4, u16x2, u32x2, u32x4, u64x2)

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``oxide.tma`` (TMA descriptors on the host, the kernel language's ``ox.tma.*`` copies), the
    vector types, module arrays and ``ox.struct`` (``oxide.lang.LAZY``) are imported on first use:
    importing a package of kernels stays cheap (its cold start, issue 28)."""
    if name == "tma":
        import importlib

        return importlib.import_module("oxide.tma")  # also binds oxide.tma: the next access is direct
    if name in lang.LAZY:
        value = getattr(lang, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'oxide' has no attribute {name!r}")


__all__ = [
    "CompileError", "CudaError", "KernelError", "LinkError", "OxideError", "ToolchainError",
    "kernel", "device", "extern", "extern_kernel", "thread", "block", "grid", "warp", "shared", "local", "atomic", "math", "fence", "bits", "timer", "volatile", "cache", "static_range", "unroll", "unsafe",
    "asm", "mma", "cp_async", "wgmma", "warpgroup", "mbarrier", "tma", "cluster",
    "constant", "global_memory", "ModuleArray", "struct", "struct_dtype",
    "VectorType", "VECTOR_TYPES", "f32x2", "f32x4", "f64x2", "i32x2", "i32x4", "u32x2", "u32x4", "i64x2", "u64x2",
    "i16x2", "u16x2", "i8x4", "u8x4", "f16x2", "bf16x2", "f16x4", "bf16x4", "f16x8", "bf16x8", "f32x8", "f64x4",
    "ScalarType", "SCALAR_TYPES", "TypeVar", "acc_type", "Constexpr", "Slice", "DisjointSlice", "MutSlice", "Tensor", "MutTensor", "DisjointTensor", "Ptr",
    "ThreadIndex", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
    "f64", "boolean", "f8e4m3", "f8e5m2", "__version__",
]
