"""Vector access, the view methods ``x.load2(k)`` / ``x.load4(k)`` (elements width·k … width·k +
width - 1 in one access of up to 16 bytes) and ``out.store2(k, a, b)`` / ``out.store4(k, a, b, c,
d)``. They are methods of a view, not names in the oxide namespace (``method=True``): the
frontend types ``x.load4(...)`` through the entry ``view.load4``."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import I64, ScalarType, VECTOR_TYPES, ThreadIndexType, TupleType, VectorType, ViewType, VoidType
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]



def _type_vector(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    func = node.func
    assert isinstance(func, ast.Attribute)
    view = tr.expr(func.value)
    assert isinstance(view.ty, ViewType)
    loc = tr.loc(node)
    width = int(info.op[-1])
    if not isinstance(view.ty.elem, ScalarType):
        raise tr.error(func, f"{func.attr} reads scalar elements; {ast.unparse(func.value)!r} holds {view.ty.elem.name} records",
                       "index the records one at a time: x[i]")
    if view.ty.elem.bits * width > 128 or view.ty.elem.kind == "bool":
        raise tr.error(func, f"{func.attr} of {view.ty.elem.name} elements exceeds a 16-byte vector access")
    is_store = info.op.startswith("store")
    nargs = 1 + (width if is_store else 0)
    vty = VECTOR_TYPES.get(f"{view.ty.elem.name}x{width}")
    if len(node.args) != nargs and not (is_store and len(node.args) == 2 and vty is not None):
        raise tr.error(node, f"{func.attr}() takes {nargs} argument(s), got {len(node.args)}",
                       f"pass the index and {width} values" + (f", or the index and one {vty.name}" if vty and is_store else ""))
    index = tr.index_expr(node.args[0])
    if is_store:
        tr.refuse_vector_store(func, node, view.ty, index)
    scalar_index = tr.convert(tr.materialize(index), I64, node.args[0]) if not isinstance(index.ty, ThreadIndexType) else ir.Cast(index, I64, loc)
    last = ir.BinOp(BinaryOp.ADD, ir.BinOp(BinaryOp.MUL, scalar_index, ir.Const(width, I64, loc), I64, loc), ir.Const(width - 1, I64, loc), I64, loc)
    site = None
    if tr.bounds_check:  # the bounds-elimination pass removes it where it is proven
        site = tr.bounds_site(node, f"{ast.unparse(func.value)}.{func.attr}({ast.unparse(node.args[0])})")
    elem = view.ty.elem
    if is_store:
        if len(node.args) == 2:  # x.store4(k, v) with v an f32x4
            assert vty is not None
            whole = tr.convert_implicit(tr.expr(node.args[1]), vty, node.args[1], f"{func.attr} value")
            values: list[ir.Expr] = [ir.VectorGet(whole, lane, elem, loc) for lane in range(width)]
        else:
            values = [tr.convert_implicit(tr.expr(a), elem, a, f"{func.attr} value") for a in node.args[1:]]
        return ir.Intrinsic(info.name, [view, scalar_index, last, *values], VoidType(), loc, site)
    # a vector where the language has one (f32x4, i32x2, ...: it unpacks like the tuple it replaces)
    result = vty if vty is not None else TupleType((elem,) * width)
    return ir.Intrinsic(info.name, [view, scalar_index, last], result, loc, site)


def _lower_vector(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    view = fl.view(e.args[0])
    width = int(info.op[-1])
    k = fl.expr(e.args[1])
    elem_t = fl.elem_type(view.elem)
    vec_t = ll.VectorType(elem_t, width)
    first = b.mul(k, ll.Constant(ll.IntType(64), width))
    ptr = b.gep(view.ptr, [first], source_etype=elem_t)
    vptr = b.bitcast(ptr, ll.PointerType(vec_t, ptr.type.addrspace))
    if e.check_site is not None:
        fl.bounds_check(fl.expr(e.args[2]), view.length, e.check_site)
    align = view.elem.itemsize * width
    if info.op.startswith("load"):
        vec = b.load(vptr, typ=vec_t, align=align)
        fl.mark_invariant(vec, view)
        # `freeze` keeps instcombine from splitting the load into scalar loads, which would
        # lose the invariant mark (and so ld.global.nc) when the backend re-vectorizes them
        vec = fl.freeze(vec)
        if isinstance(e.ty, VectorType):
            return vec
        assert isinstance(e.ty, TupleType)
        st = ll.LiteralStructType([elem_t] * width)
        result: ll.Value = ll.Constant(st, None)
        for i in range(width):
            result = b.insert_value(result, b.extract_element(vec, ll.Constant(ll.IntType(32), i)), i)
        return result
    packed: ll.Value = ll.Constant(vec_t, None)
    for i, a in enumerate(e.args[3:]):
        packed = b.insert_element(packed, fl.expr(a), ll.Constant(ll.IntType(32), i))
    b.store(packed, vptr, align=align)
    return ll.Constant(ll.IntType(32), 0)


ENTRIES = [IntrinsicInfo(f"view.{op}", _type_vector, _lower_vector, method=True)
           for op in ("load2", "load4", "store2", "store4")]
