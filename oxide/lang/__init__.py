"""The kernel language: types, intrinsics and decorators."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .decorators import device, extern, extern_kernel, kernel
from .intrinsics import (AtomicScope, asm, atomic, bits, block, cluster, cp_async, fence, grid, local, math, mbarrier, mma,
                         shared, static_range, thread, timer, unroll, unsafe, volatile, cache, warp, warpgroup, wgmma)
from .types import (
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
    boolean,
    f8e4m3,
    f8e5m2,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
)

if TYPE_CHECKING:
    from .module_memory import ModuleArray, constant, global_memory
    from .structs import struct, struct_dtype
    from .vectors import (VECTOR_TYPES, VectorType, bf16x2, bf16x4, bf16x8, f16x2, f16x4, f16x8, f32x8, f64x4, f32x2,
                          f32x4, f64x2, i8x4, i16x2, i32x2, i32x4, i64x2, u8x4, u16x2, u32x2, u32x4, u64x2)

# Imported on first use (module __getattr__): a package of kernels that names no vector type,
# module array or struct does not pay for their modules when it is imported (issue 28, cold start).
LAZY: dict[str, str] = {
    **dict.fromkeys(("ModuleArray", "constant", "global_memory"), "module_memory"),
    **dict.fromkeys(("struct", "struct_dtype"), "structs"),
    **dict.fromkeys(("VECTOR_TYPES", "VectorType", "bf16x2", "bf16x4", "bf16x8", "f16x2", "f16x4", "f16x8", "f32x8",
                     "f64x4", "f32x2", "f32x4", "f64x2", "i8x4", "i16x2", "i32x2", "i32x4", "i64x2", "u8x4", "u16x2",
                     "u32x2", "u32x4", "u64x2"), "vectors"),
}


def __getattr__(name: str) -> Any:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next access is direct
    return value


__all__ = [
    "kernel", "device", "extern", "extern_kernel", "thread", "block", "grid", "warp", "shared", "local", "atomic", "math", "fence", "bits", "timer", "volatile", "cache", "static_range", "unroll", "unsafe",
    "asm", "mma", "cp_async", "wgmma", "warpgroup", "mbarrier", "cluster",
    "AtomicScope", "constant", "global_memory", "ModuleArray", "struct", "struct_dtype",
    "VectorType", "VECTOR_TYPES", "f32x2", "f32x4", "f64x2", "i32x2", "i32x4", "u32x2", "u32x4", "i64x2", "u64x2",
    "i16x2", "u16x2", "i8x4", "u8x4", "f16x2", "bf16x2", "f16x4", "bf16x4", "f16x8", "bf16x8", "f32x8", "f64x4",
    "ScalarType", "SCALAR_TYPES", "TypeVar", "acc_type", "Constexpr", "Slice", "DisjointSlice", "MutSlice", "Tensor", "MutTensor", "DisjointTensor", "Ptr",
    "ThreadIndex", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
    "f64", "boolean", "f8e4m3", "f8e5m2",
]
