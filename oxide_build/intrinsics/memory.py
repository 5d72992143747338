"""Memory intrinsics: ``shared.array``, ``shared.dynamic``, ``local.array`` (lowered by the
function's lowering, which allocates them; a shared array may be declared ``swizzle=`` 32, 64 or
128, the layout wgmma reads), the fences (``fence.proxy_async``: sm_90), and volatile access
``volatile.load(x, i)`` / ``volatile.store(x, i, v)`` (CUDA's ``volatile T*``: every access
reaches memory, in program order, none merged or hoisted; ``ld.volatile`` / ``st.volatile``), and
cache-hinted access ``cache.load(x, i, "cs")`` / ``cache.store(x, i, v, "cs")`` (CUDA's ``__ldcs``,
``__stcs`` and their kin: ``ld.global.cs``, ...)."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from oxide.abi.views import ViewKind

from ..ir.types import ArrayType, ScalarType, ThreadIndexType, ViewType, VoidType, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweredView, LoweringContext, TypingContext
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
        _refuse_store(tr, info, node, target.ty, index, text)
    elem = target.ty.elem
    site = tr.check_site(node, target, index, f"{text}[{ast.unparse(node.args[1])}]")
    if is_store:
        value = tr.convert_implicit(tr.expr(node.args[2]), elem, node.args[2], f"the {info.name} value")
        return ir.Intrinsic(info.name, [target, index, value], VoidType(), tr.loc(node), site)
    return ir.Intrinsic(info.name, [target, index], elem, tr.loc(node), site)


def checked_element(fl: LoweringContext, e: ir.Intrinsic) -> tuple[ll.Value, LoweredView]:
    """The address of element ``e.args[1]`` of the view or array ``e.args[0]`` (checked against
    its length where ``e`` keeps its check site), and the view: volatile, cache-hinted and
    ordered (atomic.py) accesses of one element."""
    view = fl.view(e.args[0])
    idx = fl.index(e.args[1])
    if e.check_site is not None:
        fl.bounds_check(idx, view.length, e.check_site)
    return fl.element_address(view, idx), view


def _lower_volatile(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ptr, view = checked_element(fl, e)
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


# cache hints of a global load / store (CUDA's __ldcs, __ldcg, __ldca, __ldlu, __ldcv and
# __stcs, __stcg, __stwb, __stwt): the PTX qualifier of ld.global / st.global
LOAD_HINTS = {"cs": "streaming: read once, evicted first", "cg": "cached in L2, not in L1",
              "ca": "cached at every level", "lu": "last use: the line may be dropped after",
              "cv": "not cached: fetched again on every read"}
STORE_HINTS = {"cs": "streaming: written once, evicted first", "cg": "cached in L2, not in L1",
               "wb": "write-back (a plain store)", "wt": "write-through to system memory"}
HINTED_BITS = (16, 32, 64)  # the element sizes a hinted access moves (b16, b32, b64)


def _type_hinted(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """``cache.load(x, i, hint)`` / ``cache.store(x, i, v, hint)``: an element of a 1-D view,
    checked like ``x[i]``, with the hint a compile-time string."""
    is_store = info.op == "store"
    hints = STORE_HINTS if is_store else LOAD_HINTS
    spelled = ", ".join(f'"{h}"' for h in hints)
    check_arg_count(tr, node, 4 if is_store else 3, info.name)
    target = tr.expr(node.args[0])
    text = ast.unparse(node.args[0])
    if not isinstance(target.ty, ViewType) or target.ty.is_tensor or target.ty.kind == ViewKind.PTR:
        raise tr.error(node.args[0], f"{info.name} needs a 1-D view of global memory (Slice, MutSlice, DisjointSlice), "
                       f"got {type_name(target.ty)}", "cache hints are for global memory; index a shared array plainly")
    hint_node = node.args[-1]
    hint = tr.const_str(hint_node)
    if hint is None or hint not in hints:
        raise tr.error(hint_node, f"the hint of {info.name} is one of {spelled}, got {ast.unparse(hint_node)}",
                       "; ".join(f'"{h}": {what}' for h, what in hints.items()))
    elem = target.ty.elem
    if not isinstance(elem, ScalarType) or elem.bits not in HINTED_BITS or elem.kind == "bool":
        raise tr.error(node.args[0], f"{info.name} moves elements of 2, 4 or 8 bytes; {text!r} holds "
                       f"{type_name(elem)}", "read or write it plainly: x[i]")
    index = tr.index_expr(node.args[1], target.ty)
    if is_store:
        _refuse_store(tr, info, node, target.ty, index, text)
    site = tr.check_site(node, target, index, f"{text}[{ast.unparse(node.args[1])}]")
    if is_store:
        value = tr.convert_implicit(tr.expr(node.args[2]), elem, node.args[2], f"the {info.name} value")
        return ir.Intrinsic(info.name, [target, index, value], VoidType(), tr.loc(node), site, options=(hint,))
    return ir.Intrinsic(info.name, [target, index], elem, tr.loc(node), site, options=(hint,))


def _refuse_store(tr: TypingContext, info: IntrinsicInfo, node: ast.Call, vt: ViewType, index: ir.Expr, text: str) -> None:
    """The rules of ``x[i] = v`` for a store through an intrinsic."""
    kind = vt.kind
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


def _lower_hinted(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """``ld.global.<hint>.b<bits>`` / ``st.global.<hint>.b<bits>`` as inline PTX. A load of a
    read-only view reads memory nothing writes while the kernel runs: no clobber, so LLVM may
    schedule, merge or hoist it like a plain ``ld.global.nc``; any other load and every store
    clobbers memory, so they stay in order with the thread's other accesses."""
    ptr, view = checked_element(fl, e)
    bits = view.elem.bits
    ity = ll.IntType(bits)
    space = ".global" if ptr.type.addrspace == 1 else ""  # a generic address: the hint applies where it is global
    iptr = fl.b.bitcast(ptr, ll.PointerType(ity, ptr.type.addrspace))
    reg = {16: "h", 32: "r", 64: "l"}[bits]
    hint = e.options[0]
    if info.op == "store":
        value = fl.b.bitcast(fl.expr(e.args[2]), ity) if view.elem.kind == "float" else fl.expr(e.args[2])
        fnty = ll.FunctionType(ll.VoidType(), [iptr.type, ity])
        fl.b.call(ll.InlineAsm(fnty, f"st{space}.{hint}.b{bits} [$0], $1;", f"l,{reg},~{{memory}}", side_effect=True),
                  [iptr, value])
        return ll.Constant(ll.IntType(32), 0)
    clobber = "" if view.read_only else ",~{memory}"
    fnty = ll.FunctionType(ity, [iptr.type])
    raw = fl.b.call(ll.InlineAsm(fnty, f"ld{space}.{hint}.b{bits} $0, [$1];", f"={reg},l{clobber}",
                                 side_effect=not view.read_only), [iptr])
    return fl.b.bitcast(raw, fl.elem_type(view.elem)) if view.elem.kind == "float" else raw


def _cpu_hinted(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: a plain load or store (the host has no such hint)."""
    ptr, view = checked_element(fl, e)
    align = view.elem.itemsize
    if info.op == "store":
        fl.b.store(fl.expr(e.args[2]), ptr, align=align)
        return ll.Constant(ll.IntType(32), 0)
    return fl.b.load(ptr, typ=fl.elem_type(view.elem), align=align)


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
    IntrinsicInfo("cache.load", _type_hinted, _lower_hinted, cpu_lowering=_cpu_hinted),
    IntrinsicInfo("cache.store", _type_hinted, _lower_hinted, cpu_lowering=_cpu_hinted),
]
