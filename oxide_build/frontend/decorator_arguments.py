"""Decorator arguments that name module constants: ``@ox.kernel(launch_bounds=BLOCK)``,
``@ox.extern("f", sources=CUDA_SOURCES)`` or ``sources=[KERNEL_CU]``. They are read from the
source (nothing is imported), so a name stands for its module-level assignment."""
from __future__ import annotations

import ast

from ..scan import ModuleSource, constant_value

__all__ = ["module_int", "module_strings"]

_MAX_DEPTH = 16  # constants defined through constants; a cycle is no constant


def _assigned_value(module: ModuleSource, name: str) -> ast.expr | None:
    sym = module.symbols.get(name)
    node = getattr(sym, "node", None)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return node.value
    return None


def _substituted(module: ModuleSource, node: ast.expr, depth: int) -> ast.expr | None:
    """``node`` with each name of a module-level number constant replaced by its value."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.Name):
        value = _assigned_value(module, node.id)
        return None if value is None else _substituted(module, value, depth + 1)
    if isinstance(node, ast.BinOp):
        left, right = _substituted(module, node.left, depth), _substituted(module, node.right, depth)
        return None if left is None or right is None else ast.BinOp(left, node.op, right)
    if isinstance(node, ast.UnaryOp):
        operand = _substituted(module, node.operand, depth)
        return None if operand is None else ast.UnaryOp(node.op, operand)
    return node


def module_int(module: ModuleSource, node: ast.expr) -> int | None:
    """A literal integer, a module constant (``BLOCK = 256``, ``THREADS = 2 * BLOCK``) or
    arithmetic of those; None for anything else."""
    expr = _substituted(module, node, 0)
    value = constant_value(expr) if expr is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def module_strings(module: ModuleSource, node: ast.expr, depth: int = 0) -> list[str] | None:
    """A list or tuple of strings, each a literal or a module-level string constant, or a name of
    a module-level list/tuple of those; None for anything else."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.Name):
        value = _assigned_value(module, node.id)
        return None if value is None else module_strings(module, value, depth + 1)
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out: list[str] = []
    for elt in node.elts:
        if isinstance(elt, ast.Name):
            value = _assigned_value(module, elt.id)
            elt = value if value is not None else elt
        if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
            return None
        out.append(elt.value)
    return out
