"""The arithmetic promotion rules of the kernel language (docs/language.md has the table).

They are C's usual arithmetic conversions, without C's promotion of 8- and 16-bit integers to
``int`` (``u8 + u8`` stays ``u8`` and wraps, as NumPy's fixed-width integers do):

- Same type: unchanged.
- Two floats: the wider. An int and a float: the float.
- Two ints of the same signedness: the wider.
- A signed and an unsigned int: the signed one if it is strictly wider (``i64 + u32 → i64``),
  otherwise the unsigned one (``i32 + u32 → u32``, ``i32 + u64 → u64``), as in C.
- ``bool`` with a number: the number's type (``False``/``True`` are 0 and 1, as in C and
  Python). Two bools in ``+ - * // % << >>``: ``i32`` (C's ``int``); ``& | ^`` keep ``bool``.
- A literal takes the type of the other operand: ``0.5 * x`` is f32 when ``x`` is f32. An int
  literal next to a float takes the float type; a float literal next to an int gives f64
  (Python's int → float promotion). Literals on their own are i64 and f64, as in Python.

Comparisons differ from C where C is a trap: a signed and an unsigned operand compare by value
(``-1 < u32(1)`` is true; C converts -1 to 4294967295). ``comparison_type`` says how.
"""
from __future__ import annotations

from oxide.lang.types import ScalarType, i32, i64

from ..ir.types import literal_type

__all__ = ["promote", "comparison_type", "literal_type", "PromotionError", "fits"]


class PromotionError(Exception):
    pass


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    if a == b:
        return a
    if a.kind == "bool":
        return b
    if b.kind == "bool":
        return a
    if a.kind == "float" and b.kind == "float":
        return a if a.bits >= b.bits else b
    if a.kind == "float":
        return a
    if b.kind == "float":
        return b
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.kind == "int" else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return unsigned  # at least as wide as the signed one


def comparison_type(a: ScalarType, b: ScalarType) -> tuple[ScalarType, bool]:
    """The type two operands of a comparison are compared in, and whether a signed operand must
    first be tested for being negative (a 64-bit signed value against a 64-bit unsigned one:
    no wider type holds both)."""
    if {a.kind, b.kind} != {"int", "uint"}:
        return promote(a, b), False
    signed, unsigned = (a, b) if a.kind == "int" else (b, a)
    if signed.bits > unsigned.bits:
        return signed, False
    if unsigned.bits < 64:
        return i64, False  # holds every value of both
    return unsigned, True


def bool_arithmetic_type() -> ScalarType:
    """What two bools compute in outside ``& | ^``: C's ``int``."""
    return i32


def fits(value: int, ty: ScalarType) -> bool:
    if ty.kind == "int":
        return -(1 << (ty.bits - 1)) <= value < (1 << (ty.bits - 1))
    if ty.kind == "uint":
        return 0 <= value < (1 << ty.bits)
    return True
