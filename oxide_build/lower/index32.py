"""Which functions get a second instance whose tensor index arithmetic is 32-bit.

A tensor element's offset ``Σ index·stride`` is computed in i64 (shapes and strides are i64
parameters), which costs a 64-bit multiply-add chain per access; CUDA C++ extensions compute it
in ``int`` when every tensor is small enough (PyTorch's ``canUse32BitIndexMath``). So a kernel
with a tensor parameter is compiled twice: as written, and as an *index32* instance (entry point
``<symbol>__index32``) in which the offset of every tensor access is computed modulo 2**32 and
sign-extended (``FunctionLowering.index``). That is exact whenever the true offset lies in
``[-2**31, 2**31)``, which holds for every in-bounds element of a tensor whose span
``1 + Σ (shape[k] - 1)·|stride[k]|`` is at most ``2**31 - 1`` elements. The index32 kernel also
declares each tensor's shape and strides as i32 parameters (``abi_params``): the low halves of
the same 8-byte slots, so the runtime packs both instances alike, and the block the launch copies
is smaller. The runtime launches the index32 instance only when every tensor argument's span,
extents and |strides| are at most ``oxide.abi.launcher.INDEX32_LIMIT`` and its last axis is
contiguous (stride 1, or one element, or the tensor empty), else the one as written. The
instance reads the last axis's stride as the constant 1 (its parameter is not declared), and
adds that axis's index to the sign-extended 32-bit sum of the other terms in 64 bits (exact for
an element in bounds): a loop along a row then steps its address by a constant, as a C++
kernel's raw pointer does, where a 32-bit offset of a 64-bit loop variable would be truncated,
multiplied and extended on every trip (``FunctionLowering.index``).
A kernel declared ``@kernel(index32=False)`` has none (its tensors are small parameter
tables, say, whose offsets cost nothing: the second instance would only double its compile
time). Device functions that take a tensor get an index32 twin too (internal), which the index32
instances call. The manifest names the second instance in ``KernelSpec.index32_symbol``.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import ViewType

__all__ = ["INDEX32_SUFFIX", "takes_tensor", "index32_twins"]

INDEX32_SUFFIX = "__index32"


def takes_tensor(fn: ir.Function) -> bool:
    return any(isinstance(p.ty, ViewType) and p.ty.is_tensor for p in fn.params)


def index32_twins(program: ir.Program) -> dict[str, str]:
    """symbol -> the symbol of its index32 instance, for every function that gets one: kernels
    with a tensor parameter, and (when there is such a kernel) device functions with one. A
    kernel whose instance's name is taken (a function of that name exists) has none."""
    taken = {fn.symbol for fn in program.functions} | {e.symbol for e in program.externs}
    kernels = {fn.symbol: fn.symbol + INDEX32_SUFFIX for fn in program.functions
               if fn.is_kernel and fn.index32 and takes_tensor(fn) and fn.symbol + INDEX32_SUFFIX not in taken}
    if not kernels:
        return {}
    devices = {fn.symbol: fn.symbol + INDEX32_SUFFIX for fn in program.functions
               if not fn.is_kernel and takes_tensor(fn) and fn.symbol + INDEX32_SUFFIX not in taken}
    return {**kernels, **devices}
