"""FMA contraction: ``a * b + c`` in ``f32``/``f64`` becomes ``math.fma(a, b, c)``, one
instruction with one rounding, where CUDA C++ contracts it (nvcc's default ``--fmad=true``).

The four shapes nvcc contracts, within one expression:

    a * b + c  ->  fma(a, b, c)          c + a * b  ->  fma(a, b, c)
    a * b - c  ->  fma(a, b, -c)         c - a * b  ->  fma(-a, b, c)

For ``x + a * b`` both operands are products: the right one is fused (``fma(a, b, x)``), as
LLVM does. Operands are only reordered (``c`` evaluated after ``a * b``) when that cannot be
seen: when ``c`` or the product is pure (no load, call or intrinsic).

Contraction changes results: the product is not rounded before the addition, so a result
can differ from the separately rounded one in the last place (it is usually closer to the
exact value), exactly as with nvcc. What this pass cannot see — a product and a sum in
different statements, or across an inlined device function, and the libdevice math
functions — LLVM contracts in the backends (the lowering marks ``+ - *`` with ``contract``;
the NVPTX backend runs with ``-nvptx-fma-level=2``, libNVVM with its default ``-fma=1``), so
the whole kernel is contracted as nvcc contracts a ``.cu`` file.

``[tool.oxide] fma = false`` (``CompileOptions.fma``, this pass's field ``fma`` and the
lowering's ``lower_program(fma=...)``) turns all of it off, as ``nvcc --fmad=false`` does: no ``math.fma`` is made here, the lowering drops
``contract``, and both backends are told not to fuse, so every ``+ - *`` rounds on its own.
An explicit ``ox.math.fma(a, b, c)`` is always fused.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp

__all__ = ["FmaContraction"]


@dataclass(frozen=True)
class FmaContraction:
    fma: bool = True  # CompileOptions.fma
    name: str = "fma-contraction"

    def apply(self, program: ir.Program) -> ir.Program:
        if self.fma:
            for fn in program.functions:
                fn.body = [_statement(s) for s in fn.body]
        return program


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(node: object) -> tuple[str, ...]:
    cls = type(node)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(node))  # type: ignore[arg-type]
    return names


def _statement(s: ir.Stmt) -> ir.Stmt:
    if isinstance(s, (ir.If, ir.While)):
        for name in _field_names(s):
            value = getattr(s, name)
            if isinstance(value, list):
                setattr(s, name, [_statement(x) for x in value])
    for name in _field_names(s):
        value = getattr(s, name)
        if _is_expr(value):
            setattr(s, name, _contract(value))
    return s


_EXPRESSIONS = (ir.Const, ir.Var, ir.BinOp, ir.Compare, ir.BoolOp, ir.Not, ir.Neg, ir.Cast, ir.Call, ir.ViewLen,
                ir.ViewDim, ir.ViewLoad, ir.ThreadIndex1D, ir.SpecialReg, ir.Select, ir.Intrinsic, ir.MakeTuple,
                ir.TupleGet)
_LEAVES = (ir.Const, ir.Var, ir.ThreadIndex1D, ir.SpecialReg)


def _is_expr(value: object) -> bool:
    return isinstance(value, _EXPRESSIONS)


def _contract(e: ir.Expr) -> ir.Expr:
    """``e`` with its sub-expressions contracted (bottom-up), then itself; a node is copied
    only when a sub-expression changed."""
    if isinstance(e, _LEAVES):
        return e
    changes: dict[str, object] = {}
    for name in _field_names(e):
        value = getattr(e, name)
        if _is_expr(value):
            new = _contract(value)
            if new is not value:
                changes[name] = new
        elif isinstance(value, list) and value and all(_is_expr(v) for v in value):
            contracted = [_contract(v) for v in value]
            if any(n is not v for n, v in zip(contracted, value)):
                changes[name] = contracted
    if changes:
        e = replace(e, **changes)  # type: ignore[arg-type]
    # scalars only: vector arithmetic (f32x2, ...) is fused by the backends after scalarizing
    if not (isinstance(e, ir.BinOp) and isinstance(e.ty, ScalarType) and e.op in (BinaryOp.ADD, BinaryOp.SUB)
            and e.ty.kind == "float" and e.ty.bits in (32, 64)):
        return e
    if _is_product(e.right) and (ir.is_pure(e.left) or ir.is_pure(e.right)):
        product, addend = e.right, e.left  # c + a * b, c - a * b
        assert isinstance(product, ir.BinOp)
        a, b = product.left, product.right
        if e.op == BinaryOp.SUB:
            a = ir.Neg(a, a.ty, a.loc)  # type: ignore[arg-type]
        return ir.Intrinsic("math.fma", [a, b, addend], e.ty, e.loc)
    if _is_product(e.left):
        product, addend = e.left, e.right  # a * b + c, a * b - c
        assert isinstance(product, ir.BinOp)
        if e.op == BinaryOp.SUB:
            addend = ir.Neg(addend, addend.ty, addend.loc)  # type: ignore[arg-type]
        return ir.Intrinsic("math.fma", [product.left, product.right, addend], e.ty, e.loc)
    return e


def _is_product(e: ir.Expr) -> bool:
    return isinstance(e, ir.BinOp) and isinstance(e.ty, ScalarType) and e.op == BinaryOp.MUL and e.ty.kind == "float"
