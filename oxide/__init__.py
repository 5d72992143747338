"""oxide: CUDA kernels in typed Python, compiled ahead of time into the wheel.

Importing oxide does no CUDA work; the driver is touched on the first launch.
"""
from __future__ import annotations

from .errors import CompileError, CudaError, KernelError, LinkError, OxideError, ToolchainError
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
    atomic,
    bits,
    block,
    constant,
    fence,
    global_memory,
    ModuleArray,
    local,
    math,
    shared,
    static_range,
    timer,
    unroll,
    volatile,
    warp,
    boolean,
    device,
    extern,
    extern_kernel,
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

__version__ = "0.1.0"

__all__ = [
    "CompileError", "CudaError", "KernelError", "LinkError", "OxideError", "ToolchainError",
    "kernel", "device", "extern", "extern_kernel", "thread", "block", "grid", "warp", "shared", "local", "atomic", "math", "fence", "bits", "timer", "volatile", "static_range", "unroll", "unsafe",
    "constant", "global_memory", "ModuleArray",
    "ScalarType", "SCALAR_TYPES", "TypeVar", "acc_type", "Constexpr", "Slice", "DisjointSlice", "MutSlice", "Tensor", "MutTensor", "DisjointTensor", "Ptr",
    "ThreadIndex", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
    "f64", "boolean", "__version__",
]
