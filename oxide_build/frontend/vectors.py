"""Vector values (``f32x4``, ``i32x2``, ``u8x4``, …; docs/language.md, "Vector types"):
construction, lanes ``.x .y .z .w`` (read, assigned, unpacked), element-wise arithmetic with
vectors of the same type or with scalars (broadcast to every lane), and the choice between
two vectors. Views hand them out and take them through ``x.load2/load4(k)`` and
``x.store2/store4(k, v)`` (intrinsics/vector.py)."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import VectorType, type_name

if TYPE_CHECKING:
    from ..intrinsics.context import TypingContext
    from .semantics import Semantics
    from .translate import FunctionTranslator

__all__ = ["LANES", "construct", "lane", "component", "with_component", "set_lane", "vector_binop", "vector_neg",
           "elements", "indexed_lane", "with_indexed_lane"]

LANES = "xyzw"
ELEMENTWISE = {"+", "-", "*", "/", "&", "|", "^"}


def construct(tr: FunctionTranslator, vty: VectorType, node: ast.Call) -> ir.Expr:
    """``f32x4(a, b, c, d)``, or ``f32x4(s)``: every lane ``s``."""
    if node.keywords:
        raise tr.error(node.keywords[0].value, f"{vty.name}() takes its lanes by position")
    if len(node.args) not in (1, vty.lanes):
        raise tr.error(node, f"{vty.name}() takes 1 or {vty.lanes} values, got {len(node.args)}",
                       f"write {vty.name}({', '.join(lane_name(k) for k in range(vty.lanes))}) or {vty.name}(v) for "
                       "every lane v")
    values = [tr.expr(a) for a in node.args]
    if len(values) == 1 and isinstance(values[0].ty, VectorType):
        src = values[0].ty
        if src.lanes != vty.lanes:
            raise tr.error(node.args[0], f"{vty.name}() of a {type_name(src)}: the lane counts differ ({src.lanes} and {vty.lanes})",
                           f"convert a vector of {vty.lanes} lanes, or build it from lanes: "
                           f"{vty.name}({vty.elem.name}(v[0]), ...)")
        # lane by lane, as the scalar conversion does (bf16 → f32 exactly, f32 → bf16 to nearest even):
        # CUDA's __bfloat1622float2 / __float22bfloat162_rn over every lane
        loc = tr.loc(node)
        whole = values[0]
        if src == vty:
            return whole
        return ir.MakeVector([tr.convert(ir.VectorGet(whole, k, src.elem, loc), vty.elem, node)
                              for k in range(vty.lanes)], vty, loc)
    lanes = [tr.convert_implicit(v, vty.elem, a, f"lane {lane_name(k)} of {vty.name}()")
             for k, (v, a) in enumerate(zip(values, node.args))]
    if len(lanes) == 1:
        lanes = lanes * vty.lanes
    return ir.MakeVector(lanes, vty, tr.loc(node))


def lane_name(k: int) -> str:
    """``x``, ``y``, ``z``, ``w`` for the first four lanes, the number past them (``v[5]``)."""
    return LANES[k] if k < len(LANES) else str(k)


def indexed_lane(tr: FunctionTranslator, value: ir.Expr, index: ast.expr, node: ast.AST) -> int:
    """The lane ``k`` of ``v[k]``: a compile-time integer (a literal, a constant, a static_range
    variable) in range, as registers cannot be indexed at run time."""
    vty = value.ty
    assert isinstance(vty, VectorType)
    k = tr.const_int(index)
    if k is None:
        raise tr.error(index, f"a lane of {vty.name} is chosen at compile time; {ast.unparse(index)!r} is not a constant",
                       "index with a literal or a loop variable of ox.static_range(...)")
    if not 0 <= k < vty.lanes:
        raise tr.error(index, f"{vty.name} has lanes 0 to {vty.lanes - 1}, not {k}")
    return k


def with_indexed_lane(tr: FunctionTranslator, target: ast.Subscript, value: ir.Expr, node: ast.AST) -> ir.Stmt:
    """``v[k] = e`` of a local vector ``v``: ``v`` becomes ``v`` with lane k replaced."""
    if not isinstance(target.value, ast.Name) or not isinstance(tr.scope.locals.get(target.value.id), VectorType):
        raise tr.error(target, f"cannot assign to {ast.unparse(target)!r}",
                       f"change a copy and store it back: v = {ast.unparse(target.value)}; v[k] = ...")
    name = target.value.id
    vty = tr.scope.locals[name]
    assert isinstance(vty, VectorType)
    loc = tr.loc(node)
    current = ir.Var(name, vty, loc)
    k = indexed_lane(tr, current, target.slice, target)
    element = tr.convert_implicit(value, vty.elem, node, f"lane {k} of {name!r}")
    return ir.Assign(name, ir.VectorSet(current, k, element, vty, loc), loc)


def lane(tr: TypingContext, vty: VectorType, attr: str, node: ast.AST) -> int:
    k = LANES.find(attr) if len(attr) == 1 else -1
    if not 0 <= k < vty.lanes:
        raise tr.error(node, f"{vty.name} has no lane {attr!r}", f"its lanes are {', '.join(LANES[:vty.lanes])}")
    return k


def component(tr: TypingContext, value: ir.Expr, attr: str, node: ast.AST) -> ir.Expr:
    """``v.x``."""
    vty = value.ty
    assert isinstance(vty, VectorType)
    return ir.VectorGet(value, lane(tr, vty, attr, node), vty.elem, tr.loc(node))


def with_component(tr: FunctionTranslator, target: ast.Attribute, value: ir.Expr, node: ast.AST) -> ir.Stmt:
    """``v.y = e``: ``v`` becomes ``v`` with lane y replaced."""
    if not isinstance(target.value, ast.Name) or not isinstance(tr.scope.locals.get(target.value.id), VectorType):
        of_element = isinstance(target.value, ast.Subscript)
        raise tr.error(target, f"cannot assign to {ast.unparse(target)!r}",
                       f"change a copy and store it back: v = {ast.unparse(target.value)}; v.{target.attr} = ...; "
                       f"{ast.unparse(target.value)} = v" if of_element else
                       "assign to a local name, a lane of a local vector (v.x = ...), a field of a local struct, "
                       "or a view element")
    name = target.value.id
    vty = tr.scope.locals[name]
    assert isinstance(vty, VectorType)
    k = lane(tr, vty, target.attr, target)
    element = tr.convert_implicit(value, vty.elem, node, f"lane {target.attr} of {name!r}")
    loc = tr.loc(node)
    return ir.Assign(name, ir.VectorSet(ir.Var(name, vty, loc), k, element, vty, loc), loc)


def set_lane(tr: TypingContext, value: ir.Expr, attr: str, element: ir.Expr, node: ast.AST) -> ir.Expr:
    """``value`` with lane ``attr`` replaced by ``element`` (a nested ``q.vel.y = e``)."""
    vty = value.ty
    assert isinstance(vty, VectorType)
    k = lane(tr, vty, attr, node)
    lane_value = tr.convert_implicit(element, vty.elem, node, f"lane {attr} of {vty.name}")
    return ir.VectorSet(value, k, lane_value, vty, tr.loc(node))


def elements(value: ir.Expr) -> list[ir.Expr]:
    """The lanes of a vector, for ``a, b, c, d = v``."""
    vty = value.ty
    assert isinstance(vty, VectorType)
    return [ir.VectorGet(value, k, vty.elem, value.loc) for k in range(vty.lanes)]


def _broadcast(tr: Semantics, scalar: ir.Expr, vty: VectorType, node: ast.AST) -> ir.Expr:
    lane_value = tr.convert_implicit(scalar, vty.elem, node, f"a scalar operand of {vty.name} arithmetic")
    return ir.MakeVector([lane_value] * vty.lanes, vty, scalar.loc)


def vector_binop(tr: Semantics, op: BinaryOp, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
    """Element-wise ``+ - * /`` (and ``& | ^`` of integer vectors); a scalar operand applies to
    every lane."""
    vty = left.ty if isinstance(left.ty, VectorType) else right.ty
    assert isinstance(vty, VectorType)
    for side in (left, right):
        if isinstance(side.ty, VectorType) and side.ty != vty:
            raise tr.error(node, f"operator {op} takes vectors of one type, got {type_name(left.ty)} and {type_name(right.ty)}",
                           "convert the lanes of one of them")
    if op not in ELEMENTWISE or op in ("&", "|", "^") and vty.kind == "float":
        raise tr.error(node, f"operator {op} is not defined on {vty.name}",
                       "vectors take + - * / (and & | ^ for integers), lane by lane; for others, compute per lane (v.x, ...)")
    if op == "/" and vty.kind != "float":
        raise tr.error(node, f"/ of {vty.name} would be true division (a float result)",
                       "divide lane by lane (v.x // w.x, ...), or build a float vector from converted lanes")
    if not isinstance(left.ty, VectorType):
        left = _broadcast(tr, left, vty, node)
    if not isinstance(right.ty, VectorType):
        right = _broadcast(tr, right, vty, node)
    return ir.BinOp(op, left, right, vty, tr.loc(node))  # type: ignore[arg-type]


def vector_neg(tr: FunctionTranslator, value: ir.Expr, node: ast.AST) -> ir.Expr:
    vty = value.ty
    assert isinstance(vty, VectorType)
    if vty.kind == "uint":
        raise tr.error(node, f"-{vty.name}: negating unsigned lanes", "subtract from a vector instead")
    return ir.Neg(value, vty, tr.loc(node))  # type: ignore[arg-type]
