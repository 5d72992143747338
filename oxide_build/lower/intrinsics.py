"""Lowering of ``ir.Intrinsic``: the language's intrinsics through their registry entries
(``oxide_build/intrinsics/``), and the IR's own (checked and flat indices, vector access)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..intrinsics import INTRINSICS
from ..ir import nodes as ir
from ..ir.types import TupleType

if TYPE_CHECKING:
    from .llvm import FunctionLowering

__all__ = ["lower_intrinsic"]

I32, I64 = ll.IntType(32), ll.IntType(64)


def lower_intrinsic(fl: FunctionLowering, e: ir.Intrinsic) -> ll.Value:
    info = INTRINSICS.get(e.name)
    if info is not None:
        return info.lowering(fl, info, e)
    if e.name == "checked_index":
        value = fl.expr(e.args[0])
        if e.check_site is not None:
            fl.bounds_check(value, fl.expr(e.args[1]), e.check_site)
        return value
    if e.name == "flat_index":
        return fl.expr(e.args[0])
    group, _, op = e.name.partition(".")
    if group == "view":
        return _vector(fl, op, e)
    raise TypeError(f"cannot lower intrinsic {e.name}")


def _vector(fl: FunctionLowering, op: str, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    view = fl.view(e.args[0])
    width = int(op[-1])
    k = fl.expr(e.args[1])
    elem_t = fl.elem_type(view.elem)
    vec_t = ll.VectorType(elem_t, width)
    first = b.mul(k, ll.Constant(I64, width))
    ptr = b.gep(view.ptr, [first], source_etype=elem_t)
    vptr = b.bitcast(ptr, ll.PointerType(vec_t, ptr.type.addrspace))
    if e.check_site is not None:
        fl.bounds_check(fl.expr(e.args[2]), view.length, e.check_site)
    align = view.elem.itemsize * width
    if op.startswith("load"):
        vec = b.load(vptr, typ=vec_t, align=align)
        fl.mark_invariant(vec, view)
        # `freeze` keeps instcombine from splitting the load into scalar loads, which would
        # lose the invariant mark (and so ld.global.nc) when the backend re-vectorizes them
        frozen = ll.instructions.Instruction(b.block, vec_t, "freeze", [vec])
        b._insert(frozen)
        vec = frozen
        assert isinstance(e.ty, TupleType)
        st = ll.LiteralStructType([elem_t] * width)
        result: ll.Value = ll.Constant(st, None)
        for i in range(width):
            result = b.insert_value(result, b.extract_element(vec, ll.Constant(I32, i)), i)
        return result
    packed: ll.Value = ll.Constant(vec_t, None)
    for i, a in enumerate(e.args[3:]):
        packed = b.insert_element(packed, fl.expr(a), ll.Constant(I32, i))
    b.store(packed, vptr, align=align)
    return ll.Constant(I32, 0)

