"""Canonical control flow for the lowering: an ``if`` without ``else`` whose test is made of
integer comparisons becomes ``if <negated test>: pass / else: <body>``.

The lowering emits an ``if`` with an empty ``then`` as one conditional branch past its
``else`` (to the end of the ``if`` when the test holds), so the body is the fall-through, as
nvcc lays it out: no extra jump around the body. The negation is pushed into the comparisons
(``<`` becomes ``>=``, De Morgan over ``and`` / ``or``, a ``not`` is dropped); a float
comparison stays as it is, because NaN makes ``not a < b`` differ from ``a >= b``.

It runs last: the other passes read the conditions as the source wrote them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir

__all__ = ["Canonicalize", "negated"]


@dataclass(frozen=True)
class Canonicalize:
    name: str = "canonicalize"

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            fn.body = _block(fn.body)
        return program


def _block(stmts: list[ir.Stmt]) -> list[ir.Stmt]:
    return [_stmt(s) for s in stmts]


def _stmt(s: ir.Stmt) -> ir.Stmt:
    if isinstance(s, ir.If):
        then, orelse = _block(s.then), _block(s.orelse)
        inverse = negated(s.cond) if not orelse else None
        if inverse is not None:
            return ir.If(inverse, [], then, s.loc)
        s.then, s.orelse = then, orelse
    elif isinstance(s, ir.While):
        s.body, s.step = _block(s.body), _block(s.step)
    return s


def negated(e: ir.Expr) -> ir.Expr | None:
    """``not e`` with the negation pushed into integer comparisons, or None where it cannot be
    (float comparisons: NaN makes ``not a < b`` differ from ``a >= b``)."""
    if isinstance(e, ir.Compare) and e.operand_ty.kind in ("int", "uint", "bool"):
        return ir.Compare(e.op.inverse, e.left, e.right, e.operand_ty, e.ty, e.loc)
    if isinstance(e, ir.BoolOp):
        parts = [negated(v) for v in e.values]
        if any(p is None for p in parts):
            return None
        return ir.BoolOp(e.op.dual, parts, e.ty, e.loc)  # type: ignore[arg-type]
    if isinstance(e, ir.Not):
        return e.operand
    return None
