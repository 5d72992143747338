"""The arithmetic promotion rules of the kernel language (docs/language.md has the table).

- Same type: unchanged.
- Two floats: the wider. An int and a float: the float.
- Two ints of the same signedness: the wider. A signed and an unsigned int: the signed one if it
  is strictly wider, otherwise an error (the result would silently change meaning).
- ``bool`` never mixes with numbers in arithmetic: convert it explicitly.
- A literal takes the type of the other operand: ``0.5 * x`` is f32 when ``x`` is f32. An int
  literal next to a float takes the float type; a float literal next to an int gives f64
  (Python's int → float promotion). Literals on their own are i64 and f64, as in Python.
"""
from __future__ import annotations

from oxide.lang.types import ScalarType, f64, i64

__all__ = ["promote", "literal_type", "PromotionError", "fits"]


class PromotionError(Exception):
    pass


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    if a == b:
        return a
    if a.kind == "bool" or b.kind == "bool":
        raise PromotionError(f"cannot mix bool and {b.name if a.kind == 'bool' else a.name} in arithmetic")
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
    raise PromotionError(f"mixing signed {signed.name} and unsigned {unsigned.name} is ambiguous")


def literal_type(value: object) -> ScalarType:
    from oxide.lang.types import boolean

    if isinstance(value, bool):
        return boolean
    if isinstance(value, int):
        return i64
    return f64


def fits(value: int, ty: ScalarType) -> bool:
    if ty.kind == "int":
        return -(1 << (ty.bits - 1)) <= value < (1 << (ty.bits - 1))
    if ty.kind == "uint":
        return 0 <= value < (1 << ty.bits)
    return True
