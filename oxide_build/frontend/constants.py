"""Compile-time values in the translator: literals, weak literal arithmetic folded as it is
typed, module-level number constants, and the compile-time integers and strings intrinsics
take (``shared.array(N, f32)``, ``static_range(4)``, ``scope="block"``). One folder
underneath: ``scan.constant_value`` evaluates a number expression's AST with the operators'
``BinaryOp.evaluate`` (module constants, compile-time arguments); ``fold`` applies the same
``BinaryOp.evaluate`` to two weak literals, with located errors.
"""
from __future__ import annotations

import ast

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import BOOL
from ..scan import Symbol, constant_value
from .promotion import literal_type
from .context import TranslatorContext

__all__ = ["Constants"]


class Constants(TranslatorContext):
    """Literals, weak literal folding, module constants, compile-time arguments."""

    def visit_Constant(self, node: ast.Constant) -> ir.Expr:
        v = node.value
        if isinstance(v, bool):
            return ir.Const(v, BOOL, self.loc(node))
        if isinstance(v, (int, float)):
            return ir.Const(v, literal_type(v), self.loc(node), weak=True)
        what = "None" if v is None else type(v).__name__
        raise self.error(node, f"{what} constants are not supported in kernels",
                         "kernels compute with numbers and booleans only")

    def fold(self, op: BinaryOp, left: ir.Const, right: ir.Const, node: ast.AST) -> ir.Expr:
        a, b = left.value, right.value
        if op in ("<<", ">>") and isinstance(b, int) and not isinstance(a, float) and not 0 <= b <= 64:
            raise self.error(node, f"shift by {b} in a constant expression: the amount must be 0 to 64")
        try:
            value = op.evaluate(a, b)
        except ZeroDivisionError:
            raise self.error(node, "division by zero in a constant expression") from None
        except TypeError:
            raise self.error(node, f"operator {op} cannot take these constants") from None
        if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 64):
            raise self.error(node, f"the constant expression's value {value} does not fit in 64 bits")
        return ir.Const(value, literal_type(value), self.loc(node), weak=True)

    def const_int(self, node: ast.expr) -> int | None:
        """The value of a compile-time integer argument (a literal, a module constant, a
        static_range variable, or arithmetic of these), or None."""
        if isinstance(node, ast.Name):
            sym = self.module.symbols.get(node.id)
            if sym is not None and sym.kind == "constant":
                assert isinstance(sym.node, (ast.Assign, ast.AnnAssign))
                value = constant_value(sym.node.value)
                return value if isinstance(value, int) and not isinstance(value, bool) else None
            if node.id in self.constexprs:
                return self.constexprs[node.id]
            return None
        if isinstance(node, ast.BinOp):
            a, b = self.const_int(node.left), self.const_int(node.right)
            if a is None or b is None:
                return None
            folded = constant_value(ast.BinOp(ast.Constant(a), node.op, ast.Constant(b)))
            return folded if isinstance(folded, int) else None
        value = constant_value(node)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def const_str(self, node: ast.expr) -> str | None:
        """The value of a compile-time string argument (a literal or a module constant), or None."""
        if isinstance(node, ast.Name):  # a module-level constant: SCOPE = "block"
            sym = self.module.symbols.get(node.id)
            if sym is None or node.id in self.locals or not isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
                return None
            node = sym.node.value if sym.node.value is not None else node
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_number_expression(node: ast.AST) -> bool:
    """Only number literals and operators: a constant that failed to fold (past 64 bits, a
    division by zero), not a name the kernel cannot use."""
    return all(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
               or (isinstance(n, ast.Constant) and isinstance(n.value, (int, float)))
               for n in ast.walk(node))


def _constant_value(sym: Symbol) -> int | float | bool:
    from ..scan import constant_value

    node = sym.node
    assert isinstance(node, (ast.Assign, ast.AnnAssign))
    value = constant_value(node.value)
    assert value is not None
    return value
