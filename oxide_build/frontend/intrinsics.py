"""Typing of the device intrinsics: memory spaces, atomics, warp operations, math, fences.

Each intrinsic call becomes an ``ir.Intrinsic`` whose name the lowering knows
(``lower/intrinsics.py``); this module checks arguments and decides the result type.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.types import (
    BOOL, F32, F64, I32, ArrayType, ViewType, VoidType, as_scalar, type_name,
)
from ..intrinsics import INTRINSICS, MATH_BINARY, MATH_PREDICATES, SHUFFLES, WARP_REDUCE
from ..scan import constant_value
from .annotations import TypeVarBinding, resolve_annotation

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["KEYWORD_INTRINSICS", "translate_intrinsic", "ATOMIC_SCOPES"]

U32 = SCALAR_TYPES["u32"]

ATOMIC_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")
# scope= spellings → PTX scope: CUDA's (atomicAdd_block / atomicAdd / atomicAdd_system) and PTX's
ATOMIC_SCOPES = {"block": "cta", "cta": "cta", "device": "gpu", "gpu": "gpu", "system": "sys", "sys": "sys"}
# intrinsics that take keyword arguments (every other call in a kernel rejects keywords)
KEYWORD_INTRINSICS = frozenset(name for name, info in INTRINSICS.items() if info.keywords)


def translate_intrinsic(tr: FunctionTranslator, name: str, node: ast.Call) -> ir.Expr:
    loc = tr.loc(node)
    group, _, op = name.partition(".")  # the registry entry's group
    if name in ("shared.array", "local.array"):
        return _array(tr, group, node)
    if name == "shared.dynamic":
        _nargs(tr, node, 1, name)
        elem = _dtype(tr, node.args[0])
        return ir.Intrinsic(name, [], ArrayType("shared", elem, None), loc)
    if group == "warp":
        return _warp(tr, op, node)
    if group == "atomic":
        return _atomic(tr, op, node)
    if group == "fence":
        _nargs(tr, node, 0, name)
        return ir.Intrinsic(name, [], VoidType(), loc)
    if group == "math":
        return _math(tr, op, node)
    raise tr.error(node, f"oxide.{name} is not a device intrinsic")


def _nargs(tr: FunctionTranslator, node: ast.Call, n: int | tuple[int, int], name: str) -> None:
    lo, hi = (n, n) if isinstance(n, int) else n
    if not lo <= len(node.args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise tr.error(node, f"oxide.{name}() takes {want} argument(s), got {len(node.args)}")


def _dtype(tr: FunctionTranslator, node: ast.expr) -> ScalarType:
    ty = resolve_annotation(tr.module, node, tr.typevars, "the element type")
    if isinstance(ty, TypeVarBinding) or not isinstance(ty, ScalarType):
        raise tr.error(node, f"{ast.unparse(node)} is not a scalar element type")
    return ty


def _array(tr: FunctionTranslator, space: str, node: ast.Call) -> ir.Expr:
    _nargs(tr, node, 2, f"{space}.array")
    shape_node = node.args[0]
    dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
    shape: list[int] = []
    for d in dims:
        value = _const_int(tr, d)
        if value is None or value <= 0:
            raise tr.error(d, f"array dimensions must be positive compile-time integers, got {ast.unparse(d)}",
                           "use a literal or a module-level constant; use shared.dynamic for launch-time sizes")
        shape.append(value)
    elem = _dtype(tr, node.args[1])
    return ir.Intrinsic(f"{space}.array", [], ArrayType(space, elem, tuple(shape)), tr.loc(node))


def _const_int(tr: FunctionTranslator, node: ast.expr) -> int | None:
    if isinstance(node, ast.Name):
        sym = tr.module.symbols.get(node.id)
        if sym is not None and sym.kind == "constant":
            assert isinstance(sym.node, (ast.Assign, ast.AnnAssign))
            value = constant_value(sym.node.value)
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if node.id in tr.constexprs:
            return tr.constexprs[node.id]
        return None
    if isinstance(node, ast.BinOp):
        a, b = _const_int(tr, node.left), _const_int(tr, node.right)
        if a is None or b is None:
            return None
        folded = constant_value(ast.BinOp(ast.Constant(a), node.op, ast.Constant(b)))
        return folded if isinstance(folded, int) else None
    value = constant_value(node)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scalar_arg(tr: FunctionTranslator, node: ast.expr, what: str) -> ir.Expr:
    value = tr.materialize(tr.expr(node))
    if as_scalar(value.ty) is None:
        raise tr.error(node, f"{what} needs a number, got {type_name(value.ty)}")
    scalar = as_scalar(value.ty)
    assert scalar is not None
    return tr.convert(value, scalar, node)


def _warp(tr: FunctionTranslator, op: str, node: ast.Call) -> ir.Expr:
    loc = tr.loc(node)
    name = f"warp.{op}"
    if op in ("lane", "id"):
        _nargs(tr, node, 0, name)
        return ir.Intrinsic(name, [], I32, loc)
    if op == "sync":
        _nargs(tr, node, (0, 1), name)
        mask = [tr.convert_implicit(tr.expr(node.args[0]), U32, node, "the mask")] if node.args else []
        return ir.Intrinsic(name, mask, VoidType(), loc)
    if op in ("all", "any", "ballot"):
        _nargs(tr, node, 1, name)
        pred = tr.truth(tr.expr(node.args[0]), node.args[0])
        return ir.Intrinsic(name, [pred], BOOL if op != "ballot" else U32, loc)
    if op == "match_any":
        _nargs(tr, node, 1, name)
        value = _scalar_arg(tr, node.args[0], name)
        st = as_scalar(value.ty)
        assert st is not None
        if st.kind not in ("int", "uint") or st.bits not in (32, 64):
            raise tr.error(node.args[0], f"warp.match_any needs a 32- or 64-bit integer, got {st.name}")
        return ir.Intrinsic(name, [value], U32, loc)
    if op in SHUFFLES:
        _nargs(tr, node, (2, 3), name)
        value = _scalar_arg(tr, node.args[0], name)
        lane = tr.convert_implicit(tr.expr(node.args[1]), I32, node.args[1],
                                   "the lane" if op == "shfl_idx" else "the lane offset")
        width = ir.Const(32, I32, loc)
        if len(node.args) == 3:
            w = _const_int(tr, node.args[2])
            if w not in (1, 2, 4, 8, 16, 32):
                raise tr.error(node.args[2], "the shuffle width must be a constant power of two ≤ 32",
                               "use 1, 2, 4, 8, 16 or 32")
            width = ir.Const(w, I32, loc)
        return ir.Intrinsic(name, [value, lane, width], value.ty, loc)
    if op in WARP_REDUCE:
        _nargs(tr, node, 1, name)
        value = _scalar_arg(tr, node.args[0], name)
        st = as_scalar(value.ty)
        assert st is not None
        if st.kind == "bool":
            raise tr.error(node.args[0], f"{name} needs a number, got bool")
        return ir.Intrinsic(name, [value], st, loc)
    raise tr.error(node.func, f"oxide.warp.{op} is not a warp intrinsic",
                   "warp intrinsics: lane, id, sync, all, any, ballot, match_any, shfl_*, reduce_*")


def _atomic(tr: FunctionTranslator, op: str, node: ast.Call) -> ir.Expr:
    name = f"atomic.{op}"
    nvals = 2 if op == "cas" else 1
    last = node.args[-1] if len(node.args) == 3 + nvals else None
    if last is not None and _const_str(tr, last) is not None:
        spelled = last.id if isinstance(last, ast.Name) else f'"{_const_str(tr, last)}"'
        raise tr.error(last, f"oxide.{name}() takes the scope as a keyword", f"write scope={spelled}")
    _nargs(tr, node, 2 + nvals, name)
    target = tr.expr(node.args[0])
    if not isinstance(target.ty, (ViewType, ArrayType)):
        raise tr.error(node.args[0], f"{name} needs a view or shared array, got {type_name(target.ty)}")
    if isinstance(target.ty, ArrayType) and target.ty.space == "local":
        raise tr.error(node.args[0], f"{name} needs a view or shared array; {ast.unparse(node.args[0])!r} is a local "
                       "array, which no other thread can see", "update a local array with plain arithmetic")
    if isinstance(target.ty, ViewType) and not target.ty.writable:
        raise tr.error(node.args[0], f"{name} cannot modify the read-only Slice {ast.unparse(node.args[0])!r}",
                       "declare the parameter DisjointSlice[T] or MutSlice[T]")
    elem = target.ty.elem
    if elem.name not in ATOMIC_TYPES:
        raise tr.error(node.args[0], f"atomics need elements of {', '.join(ATOMIC_TYPES)}, got {elem.name}")
    if op in ("and_", "or_", "xor", "inc", "dec") and elem.kind == "float":
        raise tr.error(node, f"{name} needs integer elements, got {elem.name}")
    if op in ("inc", "dec") and elem.name != "u32":
        raise tr.error(node, f"{name} works on u32 elements, got {elem.name}")
    scope = _atomic_scope(tr, node, name)
    index = tr.index_expr(node.args[1], target.ty)
    values = [tr.convert_implicit(tr.expr(a), elem, a, f"the {name} operand") for a in node.args[2:]]
    site = tr.check_site(node, target, index, f"{ast.unparse(node.args[0])}[{ast.unparse(node.args[1])}]")
    return ir.Intrinsic(name, [target, index, *values], elem, tr.loc(node), site, scope)


def _atomic_scope(tr: FunctionTranslator, node: ast.Call, name: str) -> str:
    """The PTX scope of ``scope=`` ("gpu" without one): a string literal or a module-level
    string constant."""
    spellings = ", ".join(f'"{s}"' for s in ATOMIC_SCOPES)
    scope = "gpu"
    for kw in node.keywords:
        if kw.arg != "scope":
            what = "does not take **kwargs" if kw.arg is None else f"got an unexpected keyword argument {kw.arg!r}"
            raise tr.error(kw, f"oxide.{name}() {what}",
                           'atomics take one keyword: scope="block", "device" (the default) or "system"')
        text = _const_str(tr, kw.value)
        if text is None:
            raise tr.error(kw.value, f"the scope of oxide.{name}() must be a compile-time string, "
                           f"got {ast.unparse(kw.value)}", f"write one of {spellings}")
        if text not in ATOMIC_SCOPES:
            raise tr.error(kw.value, f"unknown atomic scope {text!r}", f"write one of {spellings}")
        scope = ATOMIC_SCOPES[text]
    return scope


def _const_str(tr: FunctionTranslator, node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):  # a module-level constant: SCOPE = "block"
        sym = tr.module.symbols.get(node.id)
        if sym is None or node.id in tr.locals or not isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
            return None
        node = sym.node.value if sym.node.value is not None else node
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _math(tr: FunctionTranslator, op: str, node: ast.Call) -> ir.Expr:
    name = f"math.{op}"
    loc = tr.loc(node)
    nargs = 3 if op == "fma" else 2 if op in MATH_BINARY else 1
    _nargs(tr, node, nargs, name)
    values = [tr.expr(a) for a in node.args]
    for v, a in zip(values, node.args):
        if as_scalar(v.ty) is None or v.ty == BOOL:
            raise tr.error(a, f"{name} needs numbers, got {type_name(v.ty)}",
                           "index the view to get an element" if isinstance(v.ty, ViewType) else "")
    strong = [as_scalar(v.ty) for v in values if not (isinstance(v, ir.Const) and v.weak)]
    ty = F64 if not strong else strong[0]
    for other in strong[1:]:
        assert ty is not None and other is not None
        if other != ty:
            ty = F64 if F64 in (ty, other) else other if other.kind == "float" else ty
    assert ty is not None
    if ty.kind != "float":
        if op in ("abs", "min", "max"):
            args = [tr.convert(v, ty, node) for v in values]
            return ir.Intrinsic(name, args, ty, loc)
        ty = F64 if ty.bits > 32 else F32
    if ty.bits == 16:
        ty = F32  # half-precision math runs in f32, like CUDA's promotion
    args = [tr.convert(v, ty, node) for v in values]
    if op in MATH_PREDICATES:
        return ir.Intrinsic(name, args, BOOL, loc)
    return ir.Intrinsic(name, args, ty, loc)

