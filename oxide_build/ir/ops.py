"""The IR's operators: closed sets, so that a pass or the lowering can tell every case apart
and the verifier can reject anything else.

Each is a ``str`` enum whose value is the operator as Python writes it; a member equals,
hashes and formats as that text, so tables keyed by ``"+"`` keep working and the printer
shows the source's spelling.
"""
from __future__ import annotations

import ast
import operator
from enum import Enum
from typing import Any, Callable

__all__ = ["BinaryOp", "CompareOp", "LogicOp", "BINARY_OPS_OF_AST", "COMPARE_OPS_OF_AST"]


class _TextOp(str, Enum):
    __hash__ = str.__hash__
    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]


class BinaryOp(_TextOp):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"  # true division: the operands are floats
    FLOOR_DIV = "//"
    MOD = "%"
    BIT_AND = "&"
    BIT_OR = "|"
    BIT_XOR = "^"
    SHL = "<<"
    SHR = ">>"

    @property
    def is_division(self) -> bool:
        return self in (BinaryOp.DIV, BinaryOp.FLOOR_DIV, BinaryOp.MOD)

    @property
    def is_bitwise(self) -> bool:
        return self in (BinaryOp.BIT_AND, BinaryOp.BIT_OR, BinaryOp.BIT_XOR, BinaryOp.SHL, BinaryOp.SHR)

    def evaluate(self, a: Any, b: Any) -> Any:
        """``a op b`` on Python numbers, as Python computes it: the one constant folder of the
        frontend and the scanner (which bound the result themselves)."""
        return _EVALUATE[self](a, b)


class CompareOp(_TextOp):
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="

    @property
    def inverse(self) -> CompareOp:
        """``not (a op b)`` is ``a op.inverse b`` for integers (not for floats: NaN)."""
        return _INVERSE[self]

    @property
    def swapped(self) -> CompareOp:
        """``a op b`` is ``b op.swapped a``."""
        return _SWAPPED[self]


class LogicOp(_TextOp):
    AND = "and"
    OR = "or"

    @property
    def dual(self) -> LogicOp:
        return LogicOp.OR if self is LogicOp.AND else LogicOp.AND


_EVALUATE: dict[BinaryOp, Callable[[Any, Any], Any]] = {
    BinaryOp.ADD: operator.add, BinaryOp.SUB: operator.sub, BinaryOp.MUL: operator.mul,
    BinaryOp.DIV: operator.truediv, BinaryOp.FLOOR_DIV: operator.floordiv, BinaryOp.MOD: operator.mod,
    BinaryOp.BIT_AND: operator.and_, BinaryOp.BIT_OR: operator.or_, BinaryOp.BIT_XOR: operator.xor,
    BinaryOp.SHL: operator.lshift, BinaryOp.SHR: operator.rshift,
}
# how Python's AST spells them
BINARY_OPS_OF_AST: dict[type, BinaryOp] = {
    ast.Add: BinaryOp.ADD, ast.Sub: BinaryOp.SUB, ast.Mult: BinaryOp.MUL, ast.Div: BinaryOp.DIV,
    ast.FloorDiv: BinaryOp.FLOOR_DIV, ast.Mod: BinaryOp.MOD, ast.BitAnd: BinaryOp.BIT_AND,
    ast.BitOr: BinaryOp.BIT_OR, ast.BitXor: BinaryOp.BIT_XOR, ast.LShift: BinaryOp.SHL, ast.RShift: BinaryOp.SHR,
}
COMPARE_OPS_OF_AST: dict[type, CompareOp] = {
    ast.Lt: CompareOp.LT, ast.LtE: CompareOp.LE, ast.Gt: CompareOp.GT, ast.GtE: CompareOp.GE,
    ast.Eq: CompareOp.EQ, ast.NotEq: CompareOp.NE,
}
_INVERSE = {CompareOp.LT: CompareOp.GE, CompareOp.LE: CompareOp.GT, CompareOp.GT: CompareOp.LE,
            CompareOp.GE: CompareOp.LT, CompareOp.EQ: CompareOp.NE, CompareOp.NE: CompareOp.EQ}
_SWAPPED = {CompareOp.LT: CompareOp.GT, CompareOp.LE: CompareOp.GE, CompareOp.GT: CompareOp.LT,
            CompareOp.GE: CompareOp.LE, CompareOp.EQ: CompareOp.EQ, CompareOp.NE: CompareOp.NE}
