"""Compile-time values in the translator: literals, weak literal arithmetic folded as it is
typed, module-level number constants, and the compile-time integers and strings intrinsics
take (``shared.array(N, f32)``, ``static_range(4)``, ``scope="block"``). One folder
underneath: ``scan.constant_value`` evaluates a number expression's AST with the operators'
``BinaryOp.evaluate`` (module constants, compile-time arguments); ``fold`` applies the same
``BinaryOp.evaluate`` to two weak literals, with located errors.
"""
from __future__ import annotations

import ast

from oxide.errors import CompileError

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import BOOL
from ..scan import ModuleSource, Symbol, constant_value

from .promotion import literal_type
from .scope import Scope, node_loc

__all__ = ["Constants"]


class Constants:
    """Literals, weak literal folding, module constants, compile-time arguments; the names
    with a compile-time value: Constexpr parameters, static_range variables and locals assigned
    once from a constant (``A1 = 0.319``, ``H = 2 * R``), typed by their use."""

    def __init__(self, module: ModuleSource, scope: Scope) -> None:
        self.module = module
        self.scope = scope
        self.values: dict[str, int | float | bool] = {}  # name -> its compile-time value
        self.named: set[str] = set()  # the locals among them (named constants)

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def literal(self, node: ast.Constant) -> ir.Expr:
        v = node.value
        if isinstance(v, bool):
            return ir.Const(v, BOOL, node_loc(node))
        if isinstance(v, (int, float)):
            return ir.Const(v, literal_type(v), node_loc(node), weak=True)
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
        return ir.Const(value, literal_type(value), node_loc(node), weak=True)

    def const_int(self, node: ast.expr) -> int | None:
        """The value of a compile-time integer: a literal, a module constant (``C = A * B``), a
        Constexpr parameter, a local assigned once from a constant (``H = 2 * R``), a
        static_range variable, or arithmetic on them (``-R``, ``R + 1``); None for anything else."""
        value = constant_value(node, self.constant_names())
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def constant_names(self) -> dict[str, int | float | bool]:
        """The compile-time values a constant expression here may use: module constants (unless
        a local shadows them), Constexpr parameters, named constants, static_range variables."""
        names: dict[str, int | float | bool] = {
            n: s.value for n, s in self.module.symbols.items()
            if s.kind == "constant" and s.value is not None and n not in self.scope.locals}
        names.update(self.values)
        return names

    def not_constant_hint(self, node: ast.expr) -> str:
        """Why ``node`` is not a compile-time integer, naming the first name that makes it so."""
        for n in ast.walk(node):
            if not isinstance(n, ast.Name) or n.id in self.values:
                continue
            sym = self.module.symbols.get(n.id)
            if n.id in self.scope.param_names:
                return f"{n.id!r} is a run-time parameter: make it `{n.id}: ox.Constexpr[int]` and list its values"
            if n.id in self.scope.locals:
                return (f"{n.id!r} is a variable (assigned more than once, or from a run-time value); "
                        "a local assigned once from constants is a compile-time value")
            if sym is not None and sym.kind == "constant" and not isinstance(sym.value, int):
                return f"the module constant {n.id!r} is {sym.value!r}, not an integer"
            if sym is not None and sym.kind != "constant" and isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
                return (f"{n.id!r} (line {sym.node.lineno}) does not fold to a number: module constants are "
                        "literals, constants defined above them, operators and int/float/min/max/abs")
        return "use literals, module constants, Constexpr parameters and arithmetic on them"

    def is_named_constant(self, name: str, value: ir.Const) -> bool:
        """A local assigned once, from a constant expression, is a name for that constant: it
        takes its type from each use, like a literal (so `A1 = 0.319` keeps f32 math f32)."""
        if not (value.weak or value.ty == BOOL) or self.scope.assign_counts.get(name, 0) != 1 or name in self.scope.param_names:
            return False
        # every use must be in this block (after the assignment, as Python runs it), or a use
        # on a path that skipped the assignment would read a value the program never gave it
        return self.scope.read_only_in_current_block(name)

    def constant_expr(self, value: int | float | bool, node: ast.AST) -> ir.Const:
        """A compile-time value as an IR literal: a bool is a bool, a number a weak literal."""
        if isinstance(value, bool):
            return ir.Const(value, BOOL, node_loc(node))
        return ir.Const(value, literal_type(value), node_loc(node), weak=True)

    def const_str(self, node: ast.expr) -> str | None:
        """The value of a compile-time string argument (a literal, a module constant, or an
        f-string of compile-time integers: ``f"m64n{D}k16"`` with ``D`` a constexpr), or None."""
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    parts.append(part.value)
                    continue
                if not isinstance(part, ast.FormattedValue) or part.conversion != -1 or part.format_spec is not None:
                    return None
                value = self.const_int(part.value)
                if value is None:
                    return None
                parts.append(str(value))
            return "".join(parts)
        if isinstance(node, ast.Name):  # a module-level constant: SCOPE = "block"
            sym = self.module.symbols.get(node.id)
            if sym is None or node.id in self.scope.locals or not isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
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
    assert sym.value is not None
    return sym.value
