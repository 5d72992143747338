"""Checks of an intrinsic call's arguments that several groups share: their number, a number,
a compile-time integer or string. (An element type is the translator's ``element_type``: the
registry imports nothing of the frontend, which imports the registry.)"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import as_scalar, type_name
from ..scan import constant_value

if TYPE_CHECKING:
    from ..frontend.translate import FunctionTranslator

__all__ = ["check_arg_count", "scalar_arg", "const_int", "const_str"]


def check_arg_count(tr: FunctionTranslator, node: ast.Call, n: int | tuple[int, int], name: str) -> None:
    lo, hi = (n, n) if isinstance(n, int) else n
    if not lo <= len(node.args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise tr.error(node, f"oxide.{name}() takes {want} argument(s), got {len(node.args)}")


def scalar_arg(tr: FunctionTranslator, node: ast.expr, what: str) -> ir.Expr:
    value = tr.materialize(tr.expr(node))
    if as_scalar(value.ty) is None:
        raise tr.error(node, f"{what} needs a number, got {type_name(value.ty)}")
    scalar = as_scalar(value.ty)
    assert scalar is not None
    return tr.convert(value, scalar, node)


def const_int(tr: FunctionTranslator, node: ast.expr) -> int | None:
    if isinstance(node, ast.Name):
        sym = tr.module.symbols.get(node.id)
        if sym is not None and sym.kind == "constant":
            assert isinstance(sym.node, (ast.Assign, ast.AnnAssign))
            value = constant_value(sym.node.value)
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if node.id in tr.constexprs:
            return tr.constexprs[node.id]
        return None
    if isinstance(node, ast.BinOp):
        a, b = const_int(tr, node.left), const_int(tr, node.right)
        if a is None or b is None:
            return None
        folded = constant_value(ast.BinOp(ast.Constant(a), node.op, ast.Constant(b)))
        return folded if isinstance(folded, int) else None
    value = constant_value(node)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def const_str(tr: FunctionTranslator, node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):  # a module-level constant: SCOPE = "block"
        sym = tr.module.symbols.get(node.id)
        if sym is None or node.id in tr.locals or not isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
            return None
        node = sym.node.value if sym.node.value is not None else node
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
