"""Optional views (``Optional[Tensor[f32, 2]]``, ``Slice[f32] | None``): parameters the caller
may pass None for, and the flow typing that lets a function use one only where a test proved it
present (docs/language.md, "Optional views").

A parameter ``x`` of such a type is two IR parameters: the view ``x`` and a bool beside it,
``present_name("x")`` (the ABI's flag slot, oxide.abi.params). ``x is None`` / ``x is not None``
read the flag. The scope keeps the names proven present where the translation stands
(``Scope.present``): the body of ``if x is not None:`` (and the ``else`` of ``if x is None:``),
the operands after ``x is not None and ...`` (``x is None or ...``), the rest of a block after
``if x is None: return`` (or ``continue``, ``break``). A use anywhere else is a located error
naming the test to write; an ``assert`` about such a view holds only where it is present (its
condition becomes ``x is None or (...)``), so a launch precondition on its shape is checked only
when an array was passed.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.ops import LogicOp
from ..ir.types import BOOL, PRESENT_SUFFIX, ViewType, is_present_name, present_name

if TYPE_CHECKING:
    from oxide.errors import CompileError

    from ..scan import ModuleSource
    from .scope import Scope
    from .translate import FunctionTranslator

__all__ = ["PRESENT_SUFFIX", "present_name", "is_present_name", "none_test", "proven_where", "proven",
           "always_exits", "may_be_none_error", "unproven_uses", "present_flag", "guard_absent"]

def _optional(scope: Scope, name: str) -> ViewType | None:
    ty = scope.locals.get(name)
    return ty if isinstance(ty, ViewType) and ty.optional else None


def none_test(scope: Scope, node: ast.expr) -> tuple[str, bool] | None:
    """``(x, True)`` for ``x is not None``, ``(x, False)`` for ``x is None`` (either side), ``x``
    an optional view; None for any other expression."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if not (isinstance(right, ast.Constant) and right.value is None and isinstance(left, ast.Name)):
        return None
    if _optional(scope, left.id) is None:
        return None
    return left.id, isinstance(node.ops[0], ast.IsNot)


def present_flag(tr: FunctionTranslator, name: str, node: ast.AST) -> ir.Expr:
    """The flag of the optional view ``name``: true where an array was passed."""
    return ir.Var(present_name(name), BOOL, tr.loc(node))


def proven_where(scope: Scope, node: ast.expr, truth: bool) -> set[str]:
    """The optional views that are present wherever ``node`` evaluates to ``truth``."""
    test = none_test(scope, node)
    if test is not None:
        return {test[0]} if test[1] == truth else set()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return proven_where(scope, node.operand, not truth)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) == truth:
        # all of `a and b` true, or all of `a or b` false
        out: set[str] = set()
        for v in node.values:
            out |= proven_where(scope, v, truth)
        return out
    return set()


@contextmanager
def proven(scope: Scope, names: set[str]) -> Iterator[None]:
    """``names`` proven present while the block runs (and no longer after it)."""
    added = names - scope.present
    scope.present |= added
    try:
        yield
    finally:
        scope.present -= added


def always_exits(body: list[ast.stmt]) -> bool:
    """Whether control never falls out of the end of ``body`` (it returns, continues or breaks)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.If):
        return always_exits(last.body) and always_exits(last.orelse)
    return False


def unproven_uses(scope: Scope, node: ast.expr) -> set[str]:
    """The optional views ``node`` reads that are not proven present here and that no test of
    None inside ``node`` speaks of (an ``assert`` about them then holds only where present)."""
    tested = {t[0] for n in ast.walk(node) if isinstance(n, ast.expr) for t in [none_test(scope, n)] if t}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and _optional(scope, n.id) is not None
            and n.id not in scope.present and n.id not in tested}


def guard_absent(tr: FunctionTranslator, names: set[str], cond: ir.Expr, node: ast.AST) -> ir.Expr:
    """``x is None or ... or cond``: ``cond`` required only where each of ``names`` is present."""
    absent: list[ir.Expr] = [ir.Not(present_flag(tr, n, node), BOOL, tr.loc(node)) for n in sorted(names)]
    return ir.BoolOp(LogicOp.OR, [*absent, cond], BOOL, tr.loc(node))


def may_be_none_error(module: ModuleSource, node: ast.Name, ty: ViewType) -> CompileError:
    """The error for a use of the optional view ``node`` where it may be None."""
    name = node.id
    return module.error(node, f"{name!r} is {ty} and may be None here",
                    f"test it first: use it inside `if {name} is not None:` (or after `if {name} is None: return`); "
                    f"where a test proves it present it is a {ty.present}")
