"""The typing rules applied to IR values (promotion.py has the rules over scalar types):
binary operators, unification of two operands, literals taking their partner's type, the
common type of a range, truth values, explicit conversions (``i32(x)``, ``float(x)``) and
implicit ones at an assignment, argument or return.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.errors import CompileError
from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..scan import ModuleSource
from ..ir.ops import BinaryOp, CompareOp, LogicOp
from ..ir.types import (BOOL, F32, F64, I64, ArrayType, StructType, TensorMapType, ThreadIndexType, TupleType, Type, VectorType, ViewType, VoidType,
                        as_scalar, type_name)
from . import vectors
from .promotion import PromotionError, bool_arithmetic_type, comparison_type, fits, promote
from .annotations import TypeVarBinding
from .constants import Constants
from .literal_locals import LiteralLocals
from .scope import node_loc
from .generics import type_spelling

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["Semantics", "is_literal_choice"]


class Semantics:
    """Operators, unification, truth values and conversions of IR values: the typing rules,
    with located errors; what they learn of literal-initialized locals goes to ``literals``."""

    def __init__(self, builder: ProgramBuilder, module: ModuleSource, typevars: dict[str, TypeVarBinding],
                 constants: Constants, literals: LiteralLocals, thread_coordinates: set[str]) -> None:
        self.builder = builder
        self.module = module
        self.typevars = typevars
        self.constants = constants
        self.literals = literals
        self.thread_coordinates = thread_coordinates  # the scope's locals assigned once from thread.idx.x, ...
        # f64 operations that only a float literal made f64 (`i + 0.5` with an integer i, and
        # operations of those with integers and literals): id -> (the BinOp, its operator, its
        # operands before conversion, where). Meeting a narrower float, such a tree is computed in
        # that float instead (`scale * (i + 0.5)` is f32 with an f32 scale), as a literal is
        self.literal_f64: dict[int, tuple[ir.Expr, BinaryOp, ir.Expr, ir.Expr, ast.AST]] = {}

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def loc(self, node: ast.AST) -> ir.Loc:
        return node_loc(node)

    def binop(self, op: BinaryOp, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        if isinstance(left.ty, VectorType) or isinstance(right.ty, VectorType):
            return vectors.vector_binop(self, op, left, right, node)  # type: ignore[arg-type]
        for side in (left, right):
            if as_scalar(side.ty) is None:  # views, tuples, arrays, nothing
                raise self.error(node, f"operator {op} cannot take {type_name(side.ty)}",
                                 "index the view to get an element" if isinstance(side.ty, ViewType) else "")
        loc = self.loc(node)
        if isinstance(left, ir.Const) and isinstance(right, ir.Const) and left.weak and right.weak:
            return self.constants.fold(op, left, right, node)
        original_left, original_right = left, right
        left, right, ty = self.shift_operands(op, left, right, node) or self.unify(left, right, node, op)
        if ty.kind == "bool":
            if op in ("&", "|", "^"):
                return ir.BinOp(op, left, right, ty, loc)
            ty = bool_arithmetic_type()  # True + True == 2, as in C and Python
            left, right = self.convert(left, ty, node), self.convert(right, ty, node)
        if op in ("&", "|", "^", "<<", ">>") and ty.kind == "float":
            raise self.error(node, f"operator {op} needs integers, got {ty.name}")
        if op == "/" and ty.kind != "float":
            left, right, ty = self.convert(left, F64, node), self.convert(right, F64, node), F64
        if op in ("//", "%") and ty.kind != "float" and isinstance(right, ir.Const) and int(right.value) == 0:
            raise self.error(node, f"integer {'division' if op == '//' else 'modulo'} by the constant 0",
                             "x // 0 is 0 and x % 0 is x (docs/language.md): write that value instead")
        if op in ("<<", ">>") and isinstance(right, ir.Const) and not 0 <= int(right.value) < ty.bits:
            raise self.error(node, f"shift by {right.value}: {ty.name} shifts by 0 to {ty.bits - 1}",
                             f"{'x << n' if op == '<<' else 'x >> n'} by {ty.bits} or more gives "
                             f"{'0' if op == '<<' or ty.kind == 'uint' else '0 or -1'}; write that value instead")
        # the bounds-elimination pass may prove both widened operands >= 0 (mul.wide.u32), also
        # where bounds checks are off (from the facts that need no check at run time)
        widening = op == "*" and ty.kind == "int" and ty.bits == 64
        result = ir.BinOp(op, left, right, ty, loc, widening=widening)
        if ty == F64 and self.made_f64_by_a_literal(original_left, original_right):
            self.literal_f64[id(result)] = (result, op, original_left, original_right, node)
        return result

    def made_f64_by_a_literal(self, left: ir.Expr, right: ir.Expr) -> bool:
        """Whether the f64 operation of ``left`` and ``right`` is f64 only because of a float
        literal: each side is an integer (or bool), a literal, or such an operation, and one
        side a float literal or such an operation."""
        def part(e: ir.Expr) -> str:
            if isinstance(e, ir.Const) and e.weak:
                return "float" if isinstance(e.value, float) else "integer"
            if self.is_literal_f64(e):
                return "float"
            ty = as_scalar(e.ty)
            return "integer" if ty is not None and ty.kind in ("int", "uint", "bool") else "other"

        parts = {part(left), part(right)}
        return "other" not in parts and "float" in parts

    def is_literal_f64(self, e: ir.Expr) -> bool:
        entry = self.literal_f64.get(id(e))
        return entry is not None and entry[0] is e

    def in_float(self, e: ir.Expr, ty: ScalarType) -> ir.Expr:
        """The operation ``e`` (``is_literal_f64``) computed in the float type ``ty`` instead of
        f64: its integers converted to ``ty``, its literals taking ``ty`` as they would."""
        _, op, left, right, node = self.literal_f64[id(e)]

        def side(v: ir.Expr) -> ir.Expr:
            if self.is_literal_f64(v):
                return self.in_float(v, ty)
            if isinstance(v, ir.Const) and v.weak:
                return v
            return self.convert(v, ty, node)

        return self.binop(op, side(left), side(right), node)

    def shift_operands(self, op: BinaryOp, left: ir.Expr, right: ir.Expr,
                       node: ast.AST) -> tuple[ir.Expr, ir.Expr, ScalarType] | None:
        """A shift of a signed value by an unsigned amount, or the other way round, keeps the
        shifted value's type (as C does: the amount's type never changes what is shifted)."""
        lt, rt = as_scalar(left.ty), as_scalar(right.ty)
        if (op not in ("<<", ">>") or lt is None or rt is None or {lt.kind, rt.kind} != {"int", "uint"}
                or any(isinstance(v, ir.Const) and v.weak for v in (left, right))):
            return None
        if rt.bits > lt.bits:
            raise self.error(node, f"operator {op}: the {rt.name} shift amount is wider than the {lt.name} value",
                             f"convert the amount with {lt.name}(...), or the value with {rt.name}(...)")
        return self.convert(left, lt, node), self.convert(right, lt, node), lt

    def compare(self, op: CompareOp, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        """``left op right``; a signed and an unsigned integer compare by value (not as C does)."""
        lt, rt = as_scalar(left.ty), as_scalar(right.ty)
        weak = any(isinstance(v, ir.Const) and v.weak for v in (left, right))
        if weak or lt is None or rt is None or {lt.kind, rt.kind} != {"int", "uint"}:
            l2, r2, ty = self.unify(left, right, node, op)
            if ty.kind == "bool" and op not in ("==", "!="):
                raise self.error(node, f"cannot order booleans with {op}")
            return ir.Compare(op, l2, r2, ty, BOOL, self.loc(node))
        ty, sign_test = comparison_type(lt, rt)
        loc = self.loc(node)
        if not sign_test:
            return ir.Compare(op, self.convert(left, ty, node), self.convert(right, ty, node), ty, BOOL, loc)
        # i64 against u64: no type holds both; a negative signed side decides the result
        if lt.kind == "uint":
            left, right, op = right, left, op.swapped
        signed = self.materialize(left)
        if not ir.is_pure(signed):
            raise self.error(node, f"comparing {lt.name} with {rt.name} evaluates the signed side twice",
                             "assign it to a local first, or convert one side explicitly")
        zero = ir.Const(0, as_scalar(signed.ty) or I64, loc)
        unsigned_cmp = ir.Compare(op, ir.Cast(signed, ty, loc), right, ty, BOOL, loc)
        negative = ir.Compare(CompareOp.LT, signed, zero, zero.ty, BOOL, loc)
        if op in (CompareOp.LT, CompareOp.LE, CompareOp.NE):  # true for every negative signed value
            return ir.BoolOp(LogicOp.OR, [negative, unsigned_cmp], BOOL, loc)
        return ir.BoolOp(LogicOp.AND, [ir.Not(negative, BOOL, loc), unsigned_cmp], BOOL, loc)

    def unify(self, left: ir.Expr, right: ir.Expr, node: ast.AST, op: str) -> tuple[ir.Expr, ir.Expr, ScalarType]:
        if is_literal_choice(left) and not is_literal_choice(right) and as_scalar(right.ty) is not None:
            left = self.convert(left, self.literal_partner_type(choice_literal(left), as_scalar(right.ty)), node)  # type: ignore[arg-type]
        elif is_literal_choice(right) and not is_literal_choice(left) and as_scalar(left.ty) is not None:
            right = self.convert(right, self.literal_partner_type(choice_literal(right), as_scalar(left.ty)), node)  # type: ignore[arg-type]
        left, right = self.narrow_literal_f64(left, right, node), self.narrow_literal_f64(right, left, node)
        lw = isinstance(left, ir.Const) and left.weak
        rw = isinstance(right, ir.Const) and right.weak
        lt, rt = as_scalar(left.ty), as_scalar(right.ty)
        if lt is None or rt is None:
            raise self.error(node, f"{op} needs numbers, got {type_name(left.ty)} and {type_name(right.ty)}",
                             "index an array or a table to get a number")
        if op != "if/else" or lt != rt and not (lw or rw):  # choosing between fp8 values moves bytes
            self.refuse_fp8(node, f"operator {op}", lt, rt)
        if not lw and not rw:
            # the literal locals that gave an operand its type meet the other operand's
            # (z = 0.0; z = z * z + c with c an f32: z is C's `float z = 0.0f`)
            self.literals.note_partners_within(left, rt)
            self.literals.note_partners_within(right, lt)
        if lw and not rw:
            ty = self.literal_partner_type(left, rt)  # type: ignore[arg-type]
        elif rw and not lw:
            ty = self.literal_partner_type(right, lt)  # type: ignore[arg-type]
        else:
            try:
                ty = promote(lt, rt)
            except PromotionError as exc:
                raise self.error(node, f"operator {op}: {exc}",
                                 f"convert one side explicitly, e.g. {rt.name}(...) or {lt.name}(...)") from None
        for side, side_ty, weak in ((left, lt, lw), (right, rt, rw)):
            if not weak and side_ty.kind in ("int", "uint") and (ty.kind == "float" or ty.bits > side_ty.bits):
                self.refuse_wrapped_narrow(side, ty)
        return self.convert(left, ty, node), self.convert(right, ty, node), ty

    def narrow_literal_f64(self, value: ir.Expr, other: ir.Expr, node: ast.AST) -> ir.Expr:
        """``value`` computed in ``other``'s float type where ``value`` is f64 only because of a
        float literal (``i + 0.5``) and ``other`` is a narrower float that is not (an f32 value):
        the literal takes its type from the float it meets, as ``0.5 * x`` does."""
        ty = as_scalar(other.ty)
        if (ty is None or ty.kind != "float" or ty.bits >= 64 or not self.is_literal_f64(value)
                or isinstance(other, ir.Const) and other.weak or self.is_literal_f64(other)):
            return value
        return self.in_float(value, ty)

    def literal_partner_type(self, lit: ir.Const, other: ScalarType) -> ScalarType:
        if other.kind == "bool":
            return lit.ty if lit.ty.kind != "bool" else other
        if isinstance(lit.value, float) and other.kind != "float":
            return F64
        if isinstance(lit.value, int) and other.kind in ("int", "uint") and not fits(lit.value, other):
            raise self.builder.error_at(self.module, lit.loc,
                                        f"the literal {lit.value} does not fit in {other.name}",
                                        "use a wider type")
        return other

    def common_type(self, values: list[ir.Expr], node: ast.AST) -> ScalarType:
        strong = [as_scalar(v.ty) for v in values if not (isinstance(v, ir.Const) and v.weak)]
        if not strong:
            return I64
        ty = strong[0]
        assert ty is not None
        self.refuse_fp8(node, "this expression", *strong)  # type: ignore[arg-type]
        for other in strong[1:]:
            assert other is not None
            try:
                ty = promote(ty, other)
            except PromotionError as exc:
                raise self.error(node, str(exc), "convert explicitly") from None
        return ty

    def truth(self, value: ir.Expr, node: ast.AST) -> ir.Expr:
        if value.ty == BOOL:
            return value
        if isinstance(value.ty, ViewType):
            raise self.error(node, f"a view ({type_name(value.ty)}) has no truth value",
                             "compare len(view) with 0 instead")
        if isinstance(value.ty, VoidType):
            raise self.error(node, "this call returns nothing and has no truth value")
        scalar = self.materialize(value)
        st = as_scalar(scalar.ty)
        if st is None:
            raise self.error(node, f"{type_name(value.ty)} has no truth value", "test a number or a comparison")
        self.refuse_fp8(node, "a truth test", st)
        return ir.Compare(CompareOp.NE, scalar, ir.Const(0, st, value.loc), st, BOOL, value.loc)

    def explicit_conversion(self, value: ir.Expr, ty: ScalarType, node: ast.Call) -> ir.Expr:
        """``ty(x)`` of ``value``, the IR of its one argument: any number converts."""
        if as_scalar(value.ty) is None:
            raise self.error(node.args[0], f"cannot convert {type_name(value.ty)} to {ty.name}")
        self.check_fp8_conversion(value, ty, node)
        src = as_scalar(value.ty)
        if not (isinstance(value, ir.Const) and value.weak) and src != ty and "fp8" in (ty.kind, getattr(src, "kind", "")):
            return ir.Cast(value, ty, value.loc)  # the explicit conversion convert() refuses to make
        if isinstance(value, ir.Const) and value.weak:
            if ty.kind in ("int", "uint"):
                if isinstance(value.value, float):
                    if value.value != value.value or value.value in (float("inf"), float("-inf")):
                        raise self.error(node, f"{value.value} does not fit in {ty.name}",
                                         "an integer conversion takes a finite number (1e309 is inf)")
                    v: int | float | bool = int(value.value)
                else:
                    v = value.value
                if not fits(int(v), ty):
                    raise self.error(node, f"{value.value} does not fit in {ty.name}")
                return ir.Const(int(v), ty, self.loc(node))
            if ty.kind == "float":
                return ir.Const(float(value.value), ty, self.loc(node))
            if ty.kind == "fp8":
                return self.convert(value, ty, node)
            return ir.Const(bool(value.value), ty, self.loc(node))
        return self.convert(value, ty, node)

    def refuse_fp8(self, node: ast.AST, what: str, *types: ScalarType) -> None:
        """fp8 values are a storage format: every operation on them is refused, pointing at
        the conversion to a type that computes."""
        for t in types:
            if t.kind == "fp8":
                raise self.error(node, f"{what} cannot take {t.name}: 8-bit floats are a storage format, "
                                 "oxide does not compute with them",
                                 f"convert first, e.g. f32(x) (or f16/bf16), compute, and store "
                                 f"ox.{t.name}(result)")

    def check_fp8_conversion(self, value: ir.Expr, ty: ScalarType, node: ast.Call) -> None:
        """``ox.f8e4m3(x)`` takes f32, f16, bf16 (and literals); an fp8 value converts to
        f32, f16, bf16 or f64. PTX converts fp8 from and to those only (``cvt.rn.satfinite``)."""
        src = as_scalar(value.ty)
        assert src is not None
        if src == ty or isinstance(value, ir.Const) and value.weak and ty.kind == "fp8":
            return
        if ty.kind == "fp8" and src.name not in ("f32", "f16", "bf16"):
            via = "f32(x)" if src.kind != "fp8" else "f32(x): fp8 values convert exactly to f32"
            raise self.error(node, f"ox.{ty.name}() converts f32, f16 or bf16 values, not {src.name}",
                             f"convert to f32 first, ox.{ty.name}({via})")
        if src.kind == "fp8" and ty.kind != "float":
            raise self.error(node, f"{ty.name}() of an {src.name} value: 8-bit floats convert to f32, f16, bf16 "
                             "or f64 only", f"convert to f32 first, {ty.name}(f32(x))")

    def materialize(self, value: ir.Expr) -> ir.Expr:
        """Gives a weak literal its default type (i64 / f64)."""
        if isinstance(value, ir.Const) and value.weak:
            if isinstance(value.value, int) and not isinstance(value.value, bool) and not fits(value.value, value.ty):
                raise self.builder.error_at(self.module, value.loc, f"the literal {value.value} does not fit in {value.ty.name}",
                                            "give it a type that holds it, e.g. u64(...), or use a smaller value")
            return ir.Const(value.value, value.ty, value.loc)
        return value

    def convert(self, value: ir.Expr, ty: ScalarType, node: ast.AST) -> ir.Expr:
        if is_literal_choice(value):  # `1.0 if c else 0.0` takes the type as its literals do
            assert isinstance(value, ir.Select)
            return ir.Select(value.cond, self.convert(value.if_true, ty, node), self.convert(value.if_false, ty, node),
                             ty, value.loc, value.scoped)
        if isinstance(value, ir.Const) and value.weak:
            if ty.kind in ("int", "uint"):
                if isinstance(value.value, float):
                    raise self.error(node, f"the float literal {value.value} cannot become {ty.name}",
                                     f"write an integer, or convert with {ty.name}(...)")
                if not fits(int(value.value), ty):
                    raise self.error(node, f"the literal {value.value} does not fit in {ty.name}",
                                     "use a wider type, e.g. i64 or u32")
                return ir.Const(int(value.value), ty, value.loc)
            if ty.kind == "float":
                return ir.Const(float(value.value), ty, value.loc)
            if ty.kind == "fp8":  # rounded by the same cvt as a value (there is no fp8 constant in LLVM IR)
                return ir.Cast(ir.Const(float(value.value), F32, value.loc), ty, value.loc)
            return ir.Const(bool(value.value), ty, value.loc)
        if value.ty == ty:
            return value
        src = as_scalar(value.ty)
        if src is not None and src != ty and "fp8" in (src.kind, ty.kind):
            raise self.error(node, f"{src.name} does not convert to {ty.name} implicitly: 8-bit floats are a "
                             "storage format", f"convert explicitly, e.g. {'f32(x)' if src.kind == 'fp8' else f'ox.{ty.name}(x)'}")
        return ir.Cast(value, ty, value.loc)

    def convert_store(self, value: ir.Expr, ty: ScalarType, node: ast.AST, what: str) -> ir.Expr:
        """A value stored into an element: as at an assignment, except that an integer goes into
        any integer element type, wrapping as C's conversion does (`image[y, x] = count` into a
        u8 image): the element type is a storage format the kernel chose."""
        src = as_scalar(value.ty)
        if (src is not None and src.kind in ("int", "uint") and ty.kind in ("int", "uint")
                and not (isinstance(value, ir.Const) and value.weak) and not isinstance(value.ty, ThreadIndexType)):
            if ty.bits > src.bits:
                self.refuse_wrapped_narrow(value, ty)
            return self.convert(value, ty, node)
        return self.convert_implicit(value, ty, node, what)

    def convert_implicit(self, value: ir.Expr, ty: Type, node: ast.AST, what: str) -> ir.Expr:
        """Implicit conversion at an assignment, argument or return: literals adapt; other
        values must already have the type, or widen without loss (i32 → i64, f32 → f64)."""
        if isinstance(ty, ThreadIndexType):
            if isinstance(value.ty, ThreadIndexType):
                return value
            raise self.error(node, f"{what} needs a ThreadIndex, got {type_name(value.ty)}",
                             "only thread.index_1d() makes a ThreadIndex")
        if isinstance(ty, (ViewType, VoidType, ArrayType, TupleType, VectorType, StructType, TensorMapType)):
            if value.ty == ty:
                return value
            raise self.error(node, f"{what} needs {type_name(ty)}, got {type_name(value.ty)}",
                             "return the same kind of value on every path" if what == "return value" else
                             f"pass a {type_name(ty)}")
        if isinstance(value.ty, (ViewType, VoidType, ArrayType, TupleType, VectorType, StructType, TensorMapType)):
            raise self.error(node, f"{what} needs {ty.name}, got {type_name(value.ty)}",
                             "take one lane (v.x)" if isinstance(value.ty, VectorType) else
                             "unpack it first: `a, b = ...`" if isinstance(value.ty, TupleType) else "")
        literal = choice_literal(value) if is_literal_choice(value) else value
        if isinstance(literal, ir.Const) and literal.weak:
            if isinstance(literal.value, float) and ty.kind != "float":
                raise self.error(node, f"{what} needs {ty.name}, got the float literal {literal.value}",
                                 f"convert explicitly with {ty.name}(...)")
            return self.convert(value, ty, node)
        src = as_scalar(value.ty)
        assert src is not None
        self.literals.note_partner(value, ty)
        if src == ty:
            return self.convert(value, ty, node)
        if _widens(src, ty):
            self.refuse_wrapped_narrow(value, ty)
            return ir.Cast(value, ty, value.loc)
        if src.name == "i32" and ty.kind == "uint" and ty.bits >= 32 and self.is_thread_coordinate(value):
            # C's `unsigned int tid = threadIdx.x;`: the ids and sizes are never negative, so
            # their i32 converts to an unsigned type without loss
            return ir.Cast(value, ty, value.loc)
        self.literals.note_partners_within(value, ty)
        raise self.error(node, f"{what} needs {ty.name}, got {src.name}",
                         f"convert explicitly with {type_spelling(self.typevars, ty)}(...)")

    # ---- a local's assignments: the rule the translation and literal_types.py's walk share --

    def first_assignment(self, name: str, value: ir.Expr, node: ast.AST, assigned_again: bool) -> ir.Expr:
        """``name = value`` where ``name`` is not yet a local: the value it starts with, its
        type the local's. A ThreadIndex assigned again (``idx /= HD``) holds a plain i64 from
        the start; a bare literal or a choice of literals makes the local literal-initialized,
        typed as decided before the translation (``literals.retype``, literal_types.py) where
        it met typed values; a copy of such a local is noted as one."""
        if isinstance(value.ty, ThreadIndexType) and assigned_again:
            # C's `int idx = blockIdx.x * blockDim.x + threadIdx.x; ... idx /= HD;`
            value = ir.Cast(value, I64, value.loc)
        if isinstance(value, ir.Const) and value.weak or is_literal_choice(value):
            self.literals.names.add(name)
            if name in self.literals.retype:
                value = self.convert(value, self.literals.retype[name], node)
        elif isinstance(value, ir.Var) and (value.name in self.literals.names or value.name in self.literals.copies):
            self.literals.copies[name] = value.name
        return self.materialize(value)

    def assignment(self, name: str, declared: Type, value: ir.Expr, node: ast.AST) -> ir.Expr:
        """``name = value`` into the local ``name`` of type ``declared``: the value converted,
        and what a literal-initialized local meets noted, a failed conversion included."""
        met = as_scalar(value.ty) if isinstance(declared, ScalarType) else None
        try:
            converted = self.convert_implicit(value, declared, node, f"assignment to {name!r}")
        except CompileError:
            # a value whose type came from literal locals (`c1 = 0` still i64) retypes those
            # locals (note_partners_within), not the typed target
            if met is not None and not self.literals.mentioned_in(value):
                self.literals.note_partner(ir.Var(name, declared, value.loc), met)
            if (met is not None and met.kind == "float" and isinstance(declared, ScalarType)
                    and declared.kind in ("int", "uint") and name in self.literals.names):
                # `sum = 0` then `sum += a[k] * b[k]` (C's `float sum = 0;`): a local first
                # assigned an integer literal and then a float holds that float, as in Python
                self.literals.partners.setdefault(name, []).append(met)
            raise
        if met is not None:
            self.literals.note_partner(ir.Var(name, declared, value.loc), met)
        return converted

    def is_thread_coordinate(self, value: ir.Expr) -> bool:
        """``thread.idx.x``, ``block.idx.y``, ``block.dim.x``, ``grid.dim.z`` (never negative), or
        a local assigned once from one."""
        if isinstance(value, ir.SpecialReg):
            return True
        return isinstance(value, ir.Var) and value.name in self.thread_coordinates

    def refuse_wrapped_narrow(self, value: ir.Expr, ty: ScalarType) -> None:
        """``horz: i16 = ur + 2 * mr - ul`` with u8 pixels: the sum is computed in u8 (8- and
        16-bit integers are not promoted to int) and wraps before it widens, where C's int
        arithmetic would not; silently different results, so an error that says which to write."""
        src = as_scalar(value.ty)
        if src is None or not _narrow_arithmetic(value):
            return
        raise self.builder.error_at(
            self.module, value.loc,
            f"this {src.name} arithmetic can wrap around in {src.name} before the result becomes {ty.name}: "
            f"8- and 16-bit integers are not promoted to int as in C",
            f"convert an operand first so it computes in {ty.name} (C's result), e.g. {ty.name}(a) + b; "
            f"or convert the result explicitly, {ty.name}(...), if wrapping in {src.name} is meant")


def _narrow_arithmetic(value: ir.Expr) -> bool:
    """An 8- or 16-bit integer +, -, * or << (or a negation), at the top of ``value`` or under
    other operators of that type: arithmetic that C would have done in int."""
    ty = as_scalar(value.ty)
    if ty is None or ty.kind not in ("int", "uint") or ty.bits >= 32:
        return False
    if isinstance(value, ir.Neg):
        return True
    if isinstance(value, ir.BinOp) and value.ty == ty:
        if value.op in (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.SHL):
            return True
        return _narrow_arithmetic(value.left) or _narrow_arithmetic(value.right)
    return False


def _widens(src: ScalarType, dst: ScalarType) -> bool:
    if src.kind == "bool":
        return True  # 0 or 1: every number type holds both
    if src.kind == dst.kind and src.kind in ("int", "uint", "float"):
        return dst.bits > src.bits
    if src.kind == "uint" and dst.kind == "int":
        return dst.bits > src.bits
    return False


def is_literal_choice(value: ir.Expr) -> bool:
    """``1.0 if c else 0.0``: a choice between two literals of one kind (both floats, or both
    integers), which, like a literal, takes the type of what it meets (an annotation, the other
    operand, the element stored into) and is f64 / i64 only when it meets nothing. Either side may
    itself be such a choice (``1.0 if a > 0 else (-1.0 if a < 0 else 0.0)``)."""
    if not isinstance(value, ir.Select):
        return False
    first, second = choice_literal(value.if_true), choice_literal(value.if_false)
    return (first is not None and second is not None
            and isinstance(first.value, float) == isinstance(second.value, float))


def choice_literal(value: ir.Expr) -> ir.Const | None:
    """A weak number literal, or the first literal of a literal choice; None for anything else."""
    if isinstance(value, ir.Const):
        return value if value.weak and not isinstance(value.value, bool) else None
    return choice_literal(value.if_true) if isinstance(value, ir.Select) and is_literal_choice(value) else None
