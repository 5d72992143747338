"""Memory intrinsics: ``shared.array``, ``shared.dynamic``, ``local.array`` (lowered by the
function's lowering, which allocates them; a shared array may be declared ``swizzle=`` 32, 64 or
128, the layout wgmma reads), the fences (``fence.proxy_async``: sm_90), and volatile access
``volatile.load(x, i)`` / ``volatile.store(x, i, v)`` (CUDA's ``volatile T*``: every access
reaches memory, in program order, none merged or hoisted; ``ld.volatile`` / ``st.volatile``)."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from oxide.abi.views import ViewKind

from ..ir.types import ArrayType, ThreadIndexType, ViewType, VoidType, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "FENCES"]

FENCES = {"block": "llvm.nvvm.membar.cta", "device": "llvm.nvvm.membar.gl", "system": "llvm.nvvm.membar.sys"}


SWIZZLES = (32, 64, 128)  # the row widths in bytes a shared array may be swizzled by (wgmma, TMA)


def _swizzle(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> int:
    """``swizzle=`` of ``shared.array`` / ``shared.dynamic``: 0 (none), 32, 64 or 128."""
    swizzle = 0
    for k in node.keywords:
        if k.arg != "swizzle":
            raise tr.error(k.value, f"{info.name}() has no keyword {k.arg!r}", "keywords: swizzle")
        if info.name != "shared.array" and info.name != "shared.dynamic":
            raise tr.error(k.value, f"{info.name}() takes no swizzle; only shared arrays are swizzled")
        value = tr.const_int(k.value)
        if value not in (0, *SWIZZLES):
            raise tr.error(k.value, f"swizzle= is 32, 64 or 128 (bytes per swizzled row), got {ast.unparse(k.value)}",
                           "wgmma and TMA read rows of that many bytes whose 16-byte chunks are XORed with the row")
        swizzle = value
    return swizzle


def _type_array(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    swizzle = _swizzle(tr, info, node)
    shape_node = node.args[0]
    dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
    shape: list[int] = []
    for d in dims:
        value = tr.const_int(d)
        if value is None or value <= 0:
            raise tr.error(d, f"array dimensions must be positive compile-time integers, got {ast.unparse(d)}",
                           (f"{tr.not_constant_hint(d)}; " if value is None else "")
                           + "use shared.dynamic for launch-time sizes")
        shape.append(value)
    elem = tr.array_element_type(node.args[1])
    if swizzle and shape[-1] * elem.itemsize % swizzle:
        raise tr.error(node.args[0], f"a shared array swizzled by {swizzle} bytes holds whole rows of {swizzle} bytes; "
                       f"its last dimension ({shape[-1]} {elem.name}) is not a multiple of "
                       f"{swizzle // elem.itemsize if swizzle >= elem.itemsize else 1}")
    return ir.Intrinsic(info.name, [], ArrayType(info.group, elem, tuple(shape), swizzle=swizzle),  # type: ignore[arg-type]
                        tr.loc(node))


def _type_dynamic(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    swizzle = _swizzle(tr, info, node)
    elem = tr.array_element_type(node.args[0])
    return ir.Intrinsic(info.name, [], ArrayType("shared", elem, None, swizzle=swizzle),  # type: ignore[arg-type]
                        tr.loc(node))


def _lower_allocation(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    # an array is a statement's value (``buf = shared.array(...)``), which lower/llvm.py allocates
    raise AssertionError(f"{info.name} is allocated by its assignment, not lowered as a value")


def _type_fence(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_fence(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return fl.b.call(fl.intrinsic(FENCES[info.op], ll.VoidType(), []), [])


def _cpu_fence(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: a sequentially consistent fence (the host's threads are the device's)."""
    fl.b.fence("seq_cst")
    return ll.Constant(ll.IntType(32), 0)


def _lower_proxy_fence(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """``fence.proxy.async.shared::cta``: this thread's ordinary shared-memory writes become
    visible to the async proxy (wgmma, TMA) that reads them after the next barrier."""
    if fl.libnvvm:  # libNVVM has no such intrinsic
        return asm_call(fl, "fence.proxy.async.shared::cta;", "~{memory}", ll.VoidType(), [])
    return fl.b.call(fl.intrinsic("llvm.nvvm.fence.proxy.async.shared_cta", ll.VoidType(), []), [])


def _type_volatile(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    is_store = info.op == "store"
    check_arg_count(tr, node, 3 if is_store else 2, info.name)
    target = tr.expr(node.args[0])
    text = ast.unparse(node.args[0])
    if not isinstance(target.ty, (ViewType, ArrayType)) or isinstance(target.ty, ViewType) and (
            target.ty.is_tensor or target.ty.kind == ViewKind.PTR):
        raise tr.error(node.args[0], f"{info.name} needs a 1-D view (Slice, DisjointSlice, MutSlice) or an array, "
                       f"got {type_name(target.ty)}")
    index = tr.index_expr(node.args[1], target.ty)
    if is_store and isinstance(target.ty, ViewType):
        kind = target.ty.kind
        if kind == ViewKind.SLICE:
            raise tr.error(node.args[0], f"{info.name} cannot write the read-only Slice {text!r}",
                           "declare the parameter MutSlice[T] (or DisjointSlice[T])")
        if kind == ViewKind.DISJOINT_SLICE and not (isinstance(index.ty, ThreadIndexType) and index.ty.axis == "1d"):
            raise tr.error(node.args[1], "a DisjointSlice can only be written at the calling thread's ThreadIndex; "
                           f"{ast.unparse(node.args[1])!r} is {type_name(index.ty)}",
                           "index with the value of thread.index_1d(), or use MutSlice inside `with oxide.unsafe():`")
        if kind == ViewKind.MUT_SLICE and tr.unsafe_depth == 0:
            raise tr.error(node, f"writing the MutSlice {text!r} needs `with oxide.unsafe():`",
                           "wrap the store in `with oxide.unsafe():`")
    elem = target.ty.elem
    site = tr.check_site(node, target, index, f"{text}[{ast.unparse(node.args[1])}]")
    if is_store:
        value = tr.convert_implicit(tr.expr(node.args[2]), elem, node.args[2], f"the {info.name} value")
        return ir.Intrinsic(info.name, [target, index, value], VoidType(), tr.loc(node), site)
    return ir.Intrinsic(info.name, [target, index], elem, tr.loc(node), site)


def _lower_volatile(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    view = fl.view(e.args[0])
    idx = fl.index(e.args[1])
    if e.check_site is not None:
        fl.bounds_check(idx, view.length, e.check_site)
    ptr = fl.element_address(view, idx)
    align = view.elem.itemsize
    if info.op == "store":
        value = fl.expr(e.args[2])
        if view.elem.kind == "bool":
            value = fl.b.zext(value, ll.IntType(8))
        fl.volatile_store(value, ptr, align)
        return ll.Constant(ll.IntType(32), 0)
    load = fl.volatile_load(ptr, fl.elem_type(view.elem), align)
    if view.elem.kind == "bool":
        return fl.b.icmp_unsigned("!=", load, ll.Constant(ll.IntType(8), 0))
    return load


ENTRIES = [
    IntrinsicInfo("shared.array", _type_array, _lower_allocation, parameters=("shape", "dtype"), keywords=("swizzle",)),
    IntrinsicInfo("shared.dynamic", _type_dynamic, _lower_allocation, parameters=("dtype",), keywords=("swizzle",)),
    IntrinsicInfo("local.array", _type_array, _lower_allocation, parameters=("shape", "dtype")),
    *(IntrinsicInfo(f"fence.{scope}", _type_fence, _lower_fence, cpu_lowering=_cpu_fence) for scope in FENCES),
    IntrinsicInfo("fence.proxy_async", _type_fence, _lower_proxy_fence, min_arch="sm_90",
                  roles=frozenset({Role.MBARRIER_INIT_FENCE})),
    # a volatile load sees what other threads write while the kernel runs
    IntrinsicInfo("volatile.load", _type_volatile, _lower_volatile, thread_dependent=True),
    IntrinsicInfo("volatile.store", _type_volatile, _lower_volatile),
]
