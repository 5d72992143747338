"""Locals first assigned a bare literal (``acc = 0.0``, ``offset = 1``): the typed values of the
same kind each one meets (operands, assignments, arguments), from which it takes its type, as
``float acc = 0.0f`` in C++ (literal_types.py decides with them before the translation, which
records them again for ``ProgramBuilder.translate_function`` to check that decision).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import Type
from .promotion import PromotionError, promote

__all__ = ["LiteralLocals"]


@dataclass
class LiteralLocals:
    """The literal-initialized locals of one function instance and the types they met."""

    locals: dict[str, Type]  # the scope's locals (read: the type each has now)
    # the types chosen for them before this translation (literal_types.py)
    retype: dict[str, ScalarType] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    # locals first assigned a literal-initialized local (`_c2 = c2`): the name they copy
    copies: dict[str, str] = field(default_factory=dict)
    partners: dict[str, list[ScalarType]] = field(default_factory=dict)

    def note_partner(self, value: ir.Expr, other: ScalarType) -> None:
        """``value`` met a typed value of type ``other``: if it is a local first assigned a bare
        literal, ``other`` is a candidate for its type (``acc = 0.0`` then ``acc += x[i]``
        with ``x[i]`` an f32 makes ``acc`` an f32, as ``float acc = 0.0f`` in C++)."""
        if not (isinstance(value, ir.Var) and value.name in self.names):
            return
        mine = self.locals.get(value.name)
        if isinstance(mine, ScalarType) and mine != other and _same_kind(mine, other):
            self.partners.setdefault(value.name, []).append(other)

    def note_partners_within(self, value: ir.Expr, ty: ScalarType) -> None:
        """``value`` met a typed value of type ``ty``: each literal-initialized local (or copy of
        one) among the operands that gave ``value`` its type is a candidate for ``ty``. As the
        other operand of an operator: ``z * z + c`` with an f32 ``c`` makes ``z`` an f32, as
        ``z + c`` does. As a conversion that failed: ``c0 = mulhi(B, _c2) ^ c1 ^ k0`` into a
        ``u32`` ``c0`` failed because ``c1`` and ``c2`` (through its copy ``_c2``) are still the
        ``i64`` of their ``0``, so the next attempt types them as C's `unsigned c1 = 0`."""
        stack = [value]
        while stack:
            e = stack.pop()
            if isinstance(e, ir.Var):
                name = e.name
                while name in self.copies:
                    name = self.copies[name]
                self.note_partner(ir.Var(name, e.ty, e.loc), ty)
            elif not isinstance(e, (ir.ViewLoad, ir.Call)):
                # only operands that gave the value its type (not an explicit conversion's, a
                # comparison's or an index's)
                stack.extend(c for c in ir.children(e) if c.ty == e.ty)

    def mentioned_in(self, value: ir.Expr) -> bool:
        """Whether ``value`` reads a literal-initialized local or a copy of one."""
        stack = [value]
        while stack:
            e = stack.pop()
            if isinstance(e, ir.Var) and (e.name in self.names or e.name in self.copies):
                return True
            stack.extend(ir.children(e))
        return False

    def met_types(self) -> dict[str, ScalarType]:
        """The type each literal-initialized local takes from the typed values it met: their
        promotion, where it differs from the literal's own type."""
        out: dict[str, ScalarType] = {}
        for name, met in self.partners.items():
            try:
                ty = met[0]
                for other in met[1:]:
                    ty = promote(ty, other)
            except PromotionError:
                continue
            out[name] = ty
        return out


def _same_kind(a: ScalarType, b: ScalarType) -> bool:
    integers = ("int", "uint")
    return (a.kind in integers and b.kind in integers) or (a.kind == b.kind == "float")
