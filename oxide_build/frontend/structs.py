"""Struct values (``@oxide.struct`` classes; docs/language.md, "Structs"): construction with
positional or keyword fields, field reads ``p.x``, field assignment ``p.x = e`` / ``p.x += e`` on
a local, and the choice between two structs. The type comes from the class's annotations
(``annotations.struct_type``); the value is an LLVM struct, passed by value. What types a value
(construction, a field read or replaced) takes a ``TypingContext``, the translation's or
literal_types.py's walk's: one rule for both."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import StructType, type_name

if TYPE_CHECKING:
    from ..intrinsics.context import TypingContext
    from .translate import FunctionTranslator

__all__ = ["construct", "field", "with_field", "set_field"]


def construct(tr: TypingContext, sty: StructType, node: ast.Call) -> ir.Expr:
    """``Particle(x, y, mass=1.0)``: every field once, by position or keyword."""
    names = [name for name, _ in sty.fields]
    given: dict[str, tuple[ast.expr, ast.AST]] = {}
    if len(node.args) > len(names):
        raise tr.error(node, f"{sty.name}() takes {len(names)} field(s), got {len(node.args)}",
                       f"its fields are {', '.join(names)}")
    for name, arg in zip(names, node.args):
        if isinstance(arg, ast.Starred):
            raise tr.error(arg, "*args in calls is not supported")
        given[name] = (arg, arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise tr.error(kw.value, "**kwargs in calls is not supported")
        if kw.arg not in names:
            raise tr.error(kw, f"{sty.name} has no field {kw.arg!r}", f"its fields are {', '.join(names)}")
        if kw.arg in given:
            raise tr.error(kw, f"field {kw.arg!r} of {sty.name}() is given twice")
        given[kw.arg] = (kw.value, kw)
    missing = [n for n in names if n not in given]
    if missing:
        raise tr.error(node, f"{sty.name}() needs the field(s) {', '.join(missing)}",
                       "structs have no defaults on the device: give every field")
    values = [tr.convert_implicit(tr.expr(given[name][0]), ty, given[name][1], f"field {name!r} of {sty.name}()")
              for name, ty in sty.fields]
    return ir.MakeTuple(values, sty, tr.loc(node))


def _index(tr: TypingContext, sty: StructType, attr: str, node: ast.AST) -> int:
    k = sty.field_index(attr)
    if k is None:
        raise tr.error(node, f"{sty.name} has no field {attr!r}",
                       f"its fields are {', '.join(name for name, _ in sty.fields)}")
    return k


def field(tr: TypingContext, value: ir.Expr, attr: str, node: ast.AST) -> ir.Expr:
    """``p.x``."""
    sty = value.ty
    assert isinstance(sty, StructType)
    k = _index(tr, sty, attr, node)
    return ir.TupleGet(value, k, sty.fields[k][1], tr.loc(node))


def set_field(tr: TypingContext, value: ir.Expr, attr: str, element: ir.Expr, node: ast.AST) -> ir.Expr:
    """``value`` with field ``attr`` replaced by ``element`` (a nested ``q.pos.vel = e``)."""
    sty = value.ty
    assert isinstance(sty, StructType)
    k = _index(tr, sty, attr, node)
    converted = tr.convert_implicit(element, sty.fields[k][1], node, f"field {attr!r} of {sty.name}")
    return ir.TupleSet(value, k, converted, sty, tr.loc(node))


def with_field(tr: FunctionTranslator, target: ast.Attribute, value: ir.Expr, node: ast.AST) -> ir.Stmt:
    """``p.x = e``: the local ``p`` becomes ``p`` with field x replaced."""
    assert isinstance(target.value, ast.Name)
    name = target.value.id
    sty = tr.scope.locals[name]
    assert isinstance(sty, StructType)
    k = _index(tr, sty, target.attr, target)
    element = tr.convert_implicit(value, sty.fields[k][1], node, f"field {target.attr!r} of {name!r} ({type_name(sty)})")
    loc = tr.loc(node)
    return ir.Assign(name, ir.TupleSet(ir.Var(name, sty, loc), k, element, sty, loc), loc)
