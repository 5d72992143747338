"""Vector access, the view methods ``x.load2(k)`` / ``x.load4(k)`` / ``x.load8(k)`` (elements
width·k … width·k + width - 1 in one access of up to 16 bytes, or two 16-byte accesses for 32
bytes: ``load4`` of ``f64``, CUDA's ``double4``) and ``out.store2(k, a, b)`` / ``out.store4(k, a,
b, c, d)`` / ``out.store8(k, v)``. They are methods of a view, not names in the oxide namespace (``method=True``): the
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

__all__ = ["ENTRIES", "MAX_VECTOR_BYTES"]

MAX_VECTOR_BYTES = 32  # the widest vector access: two 16-byte accesses (ld.global.v2.f64 twice for a double4)
ACCESS_BYTES = 16  # the widest single access before sm_100



def _type_vector(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    func = node.func
    assert isinstance(func, ast.Attribute)
    view = tr.expr(func.value)
    assert isinstance(view.ty, ViewType)
    loc = tr.loc(node)
    width = int(info.op[-1])
    if not isinstance(view.ty.elem, ScalarType):
        vector = isinstance(view.ty.elem, VectorType)
        held = f"{view.ty.elem.name} {'vectors' if vector else 'records'}"
        raise tr.error(func, f"{func.attr} reads scalar elements; {ast.unparse(func.value)!r} holds {held}",
                       f"x[i] is one {view.ty.elem.name} (one access)" if vector else "index the records one at a time: x[i]")
    if view.ty.elem.bits * width > 8 * MAX_VECTOR_BYTES or view.ty.elem.kind == "bool":
        smaller = [w for w in (4, 2) if w < width and view.ty.elem.bits * w <= 8 * MAX_VECTOR_BYTES]
        raise tr.error(func, f"{func.attr} of {view.ty.elem.name} elements is {view.ty.elem.itemsize * width} bytes, more "
                       f"than a 32-byte vector (two 16-byte accesses)" if view.ty.elem.kind != "bool" else
                       f"{func.attr} of bool elements: bool has no vector access",
                       f"use load{smaller[0]}/store{smaller[0]} twice" if smaller and view.ty.elem.kind != "bool" else "")
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
    first = b.mul(k, ll.Constant(ll.IntType(64), width))
    ptr = b.gep(view.ptr, [first], source_etype=elem_t)
    # a 32-byte vector is two 16-byte accesses (chunks of `part` lanes), each 16-byte aligned
    part = min(width, ACCESS_BYTES // view.elem.itemsize)
    part_t = ll.VectorType(elem_t, part)
    align = view.elem.itemsize * part
    chunks = []
    for c in range(width // part):
        cptr = ptr if c == 0 else b.gep(ptr, [ll.Constant(ll.IntType(64), c * part)], source_etype=elem_t)
        chunks.append(b.bitcast(cptr, ll.PointerType(part_t, ptr.type.addrspace)))
    if e.check_site is not None:
        fl.bounds_check(fl.expr(e.args[2]), view.length, e.check_site)
    if info.op.startswith("load"):
        pieces = []
        for vptr in chunks:
            piece = b.load(vptr, typ=part_t, align=align)
            fl.mark_invariant(piece, view)
            # `freeze` keeps instcombine from splitting the load into scalar loads, which would
            # lose the invariant mark (and so ld.global.nc) when the backend re-vectorizes them
            pieces.append(fl.freeze(piece))
        vec = pieces[0] if len(pieces) == 1 else b.shuffle_vector(
            pieces[0], pieces[1], ll.Constant(ll.VectorType(ll.IntType(32), width), list(range(width))))
        if isinstance(e.ty, VectorType):
            return vec
        assert isinstance(e.ty, TupleType)
        st = ll.LiteralStructType([elem_t] * width)
        result: ll.Value = ll.Constant(st, None)
        for i in range(width):
            result = b.insert_value(result, b.extract_element(vec, ll.Constant(ll.IntType(32), i)), i)
        return result
    for c, vptr in enumerate(chunks):
        packed: ll.Value = ll.Constant(part_t, None)
        for i, a in enumerate(e.args[3 + c * part:3 + (c + 1) * part]):
            packed = b.insert_element(packed, fl.expr(a), ll.Constant(ll.IntType(32), i))
        b.store(packed, vptr, align=align)
    return ll.Constant(ll.IntType(32), 0)


ENTRIES = [IntrinsicInfo(f"view.{op}", _type_vector, _lower_vector, method=True, vector_lanes=int(op[-1]))
           for op in ("load2", "load4", "load8", "store2", "store4", "store8")]
