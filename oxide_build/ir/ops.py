"""The IR's operators: closed sets, so that a pass or the lowering can tell every case apart
and the verifier can reject anything else.

Each is a ``str`` enum whose value is the operator as Python writes it; a member equals,
hashes and formats as that text, so tables keyed by ``"+"`` keep working and the printer
shows the source's spelling.
"""
from __future__ import annotations

from enum import Enum

__all__ = ["BinaryOp", "CompareOp", "LogicOp"]


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


_INVERSE = {CompareOp.LT: CompareOp.GE, CompareOp.LE: CompareOp.GT, CompareOp.GT: CompareOp.LE,
            CompareOp.GE: CompareOp.LT, CompareOp.EQ: CompareOp.NE, CompareOp.NE: CompareOp.EQ}
_SWAPPED = {CompareOp.LT: CompareOp.GT, CompareOp.LE: CompareOp.GE, CompareOp.GT: CompareOp.LT,
            CompareOp.GE: CompareOp.LE, CompareOp.EQ: CompareOp.EQ, CompareOp.NE: CompareOp.NE}
