"""The builtins that choose between their arguments: ``min(a, b, ...)``, ``max(a, b, ...)``
and ``abs(x)`` on numbers.

``max(a, b)`` is ``a if a > b else b`` (``min`` with ``<``; ``abs(x)`` is ``-x if x < 0 else
x``). Where every operand is pure (names, constants and arithmetic on them) the typing gives
exactly that ``Select`` of a ``Compare``, which the bounds prover reads (``min(i, n - 1)`` is
below ``n``). An operand with an effect or a cost (a load, a call, a shuffle, an atomic) must
be evaluated once: as a ``Select`` it was evaluated for the comparison and again for the chosen
side, in a branch. For ``max(v, warp.shfl_xor(v, 1))`` that second shuffle ran in only the
lanes that took the branch, which hangs the warp or reads undefined values; for
``max(x, ox.atomic.add(...))`` it added twice. Such calls become the intrinsic
``builtin.min`` / ``builtin.max`` / ``builtin.abs``, whose lowering evaluates each argument once
and selects between the values (no branch).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import CompareOp
from ..ir.types import BOOL, as_scalar, literal_type, type_name
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]


def _type_minmax(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    which = info.op
    if len(node.args) < 2 or node.keywords:
        raise tr.error(node, f"{which}() takes two or more numbers")
    loc = tr.loc(node)
    values = [tr.expr(a) for a in node.args]
    result = values[0]
    for v in values[1:]:
        for side in (result, v):
            if as_scalar(side.ty) is None:
                raise tr.error(node, f"{which}() needs numbers, got {type_name(side.ty)}")
        if isinstance(result, ir.Const) and isinstance(v, ir.Const) and result.weak and v.weak:
            result = ir.Const(min(result.value, v.value) if which == "min" else max(result.value, v.value),
                              literal_type(result.value), loc, weak=True)
            continue
        a, b, ty = tr.unify(result, v, node, which)
        if ir.is_pure(a) and ir.is_pure(b):
            op = CompareOp.LT if which == "min" else CompareOp.GT
            result = ir.Select(ir.Compare(op, a, b, ty, BOOL, loc), a, b, ty, loc)
        else:
            result = ir.Intrinsic(info.name, [a, b], ty, loc)
    return result


def _type_abs(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if len(node.args) != 1 or node.keywords:
        raise tr.error(node, "abs() takes one argument")
    loc = tr.loc(node)
    value = tr.materialize(tr.expr(node.args[0]))
    st = as_scalar(value.ty)
    if st is None or st.kind == "bool":
        raise tr.error(node, f"abs() needs a number, got {type_name(value.ty)}")
    tr.refuse_fp8(node, "abs()", st)
    value = tr.convert(value, st, node)
    if st.kind == "uint":
        return value
    if not ir.is_pure(value):
        return ir.Intrinsic(info.name, [value], st, loc)
    zero = ir.Const(0, st, loc)
    return ir.Select(ir.Compare(CompareOp.LT, value, zero, st, BOOL, loc), ir.Neg(value, st, loc), value, st, loc)


def _less(fl: LoweringContext, ty: ScalarType, left: ll.Value, right: ll.Value) -> ll.Value:
    """``left < right`` as ``ir.Compare`` lowers it (ordered for floats: false with a NaN)."""
    b = fl.b
    if ty.kind == "float":
        return b.fcmp_ordered("<", left, right)
    if ty.kind == "int":
        return b.icmp_signed("<", left, right)
    return b.icmp_unsigned("<", left, right)


def _lower_minmax(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ty = as_scalar(e.ty)
    assert ty is not None
    a, b = fl.expr(e.args[0]), fl.expr(e.args[1])  # each evaluated once, in order
    chose_a = _less(fl, ty, a, b) if info.op == "min" else _less(fl, ty, b, a)
    return fl.b.select(chose_a, a, b)


def _lower_abs(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ty = as_scalar(e.ty)
    assert ty is not None
    x = fl.expr(e.args[0])
    b = fl.b
    zero = ll.Constant(x.type, 0.0 if ty.kind == "float" else 0)
    negated = fl.fneg(x) if ty.kind == "float" else b.neg(x)
    return b.select(_less(fl, ty, x, zero), negated, x)


ENTRIES = [
    IntrinsicInfo("builtin.min", _type_minmax, _lower_minmax, builtin=True),
    IntrinsicInfo("builtin.max", _type_minmax, _lower_minmax, builtin=True),
    IntrinsicInfo("builtin.abs", _type_abs, _lower_abs, builtin=True),
]
