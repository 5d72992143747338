"""Bit intrinsics (``bits.*``), CUDA's integer and bit-pattern intrinsics:

- ``popc`` (set bits), ``clz`` (leading zero bits; 32 or 64 for zero), ``ffs`` (the 1-based
  position of the lowest set bit; 0 for zero) and ``brev`` (bits reversed) on 32- and 64-bit
  integers, like ``__popc``/``__clz``/``__ffs``/``__brev`` and their ``ll`` forms (LLVM's
  ``ctpop``, ``ctlz``, ``cttz``, ``bitreverse``);
- ``byte_perm(x, y, s)``, ``__byte_perm`` (PTX ``prmt.b32``, inline: neither backend has a
  common intrinsic for it);
- ``funnelshift_l/lc/r/rc(lo, hi, shift)``, ``__funnelshift_*`` (LLVM's ``fshl``/``fshr``, which
  PTX's ``shf`` implements; the ``c`` forms clamp the shift to 32 instead of taking it mod 32);
- ``bitcast(x, T)``: ``x``'s bits read as the same-width type ``T`` (``__float_as_int``,
  ``__int_as_float``, ``__double_as_longlong``, ``__half_as_short``, ...), a scalar or a vector
  (``bitcast(h2, u32)`` of an ``f16x2``: a pair of halves as one word);
- ``mulhi(a, b)``: the high half of the full product (``__mulhi``, ``__umulhi``,
  ``__mul64hi``, ``__umul64hi``; PTX ``mul.hi``), the core of Philox and of division by
  multiplication.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import SCALAR_TYPES

from ..ir import nodes as ir
from ..ir.types import I32, VectorType, as_scalar
from .arguments import check_arg_count, scalar_arg
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]

U32 = SCALAR_TYPES["u32"]
LLVM_NAMES = {"popc": "llvm.ctpop", "clz": "llvm.ctlz", "brev": "llvm.bitreverse"}
FUNNEL_SHIFTS = ("funnelshift_l", "funnelshift_lc", "funnelshift_r", "funnelshift_rc")


def _type_bits(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    value = scalar_arg(tr, node.args[0], info.name)
    st = as_scalar(value.ty)
    assert st is not None
    if st.kind not in ("int", "uint") or st.bits not in (32, 64):
        raise tr.error(node.args[0], f"{info.name} needs a 32- or 64-bit integer, got {st.name}",
                       "convert it first, e.g. u32(x)")
    # a count is an i32 whatever the operand's width (CUDA's __popcll returns int too)
    return ir.Intrinsic(info.name, [value], st if info.op == "brev" else I32, tr.loc(node))


def _lower_bits(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    t = value.type
    if info.op == "ffs":  # cttz(0) is the width (is_zero_poison false), and ffs(0) is 0
        tz = fl.b.call(fl.intrinsic(f"llvm.cttz.i{t.width}", t, [t, ll.IntType(1)]),
                       [value, ll.Constant(ll.IntType(1), 0)])
        one_based = fl.b.add(tz, ll.Constant(t, 1))
        result = fl.b.select(fl.b.icmp_unsigned("==", value, ll.Constant(t, 0)), ll.Constant(t, 0), one_based)
        return fl.b.trunc(result, ll.IntType(32)) if t.width == 64 else result
    name = f"{LLVM_NAMES[info.op]}.i{t.width}"
    if info.op == "clz":  # is_zero_poison false: clz(0) is the width
        result = fl.b.call(fl.intrinsic(name, t, [t, ll.IntType(1)]), [value, ll.Constant(ll.IntType(1), 0)])
    else:
        result = fl.b.call(fl.intrinsic(name, t, [t]), [value])
    if info.op != "brev" and t.width == 64:
        return fl.b.trunc(result, ll.IntType(32))
    return result


def _int32_arg(tr: TypingContext, node: ast.expr, name: str, what: str) -> ir.Expr:
    """A 32-bit integer operand, given as an ``i32``/``u32`` value or a literal; read as ``u32``
    (CUDA's byte and funnel-shift intrinsics take ``unsigned int``)."""
    value = tr.expr(node)
    if isinstance(value, ir.Const) and value.weak:
        if not isinstance(value.value, int) or isinstance(value.value, bool) or not -2**31 <= value.value < 2**32:
            raise tr.error(node, f"{what} of {name} must be a 32-bit integer, got {ast.unparse(node)}")
        return ir.Const(value.value & 0xFFFFFFFF, U32, tr.loc(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint") or st.bits != 32:
        got = st.name if st is not None else "a view"
        raise tr.error(node, f"{what} of {name} must be an i32 or u32, got {got}",
                       "convert it first, e.g. u32(x)")
    return value if st == U32 else ir.Cast(value, U32, tr.loc(node))


def _type_byte_perm(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 3, info.name)
    args = [_int32_arg(tr, a, info.name, what) for a, what in zip(node.args, ("x", "y", "the selector"))]
    return ir.Intrinsic(info.name, args, U32, tr.loc(node))


def _lower_byte_perm(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    args = [fl.expr(a) for a in e.args]
    ftype = ll.FunctionType(ll.IntType(32), [ll.IntType(32)] * 3)
    return fl.b.asm(ftype, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", args, False)


def _cpu_byte_perm(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: PTX's ``prmt.b32`` (default mode): result byte n is byte ``sel & 7`` of
    the 8 bytes ``y:x``, where ``sel`` is nibble n of the selector; with the nibble's bit 3 set,
    that byte's sign bit repeated instead."""
    b = fl.b
    x, y, sel = (fl.expr(a) for a in e.args)
    i32, i64 = ll.IntType(32), ll.IntType(64)
    both = b.or_(b.zext(x, i64), b.shl(b.zext(y, i64), ll.Constant(i64, 32)))
    result: ll.Value = ll.Constant(i32, 0)
    for n in range(4):
        nibble = b.and_(b.lshr(sel, ll.Constant(i32, 4 * n)), ll.Constant(i32, 0xF))
        shift = b.zext(b.mul(b.and_(nibble, ll.Constant(i32, 7)), ll.Constant(i32, 8)), i64)
        byte = b.trunc(b.and_(b.lshr(both, shift), ll.Constant(i64, 0xFF)), i32)
        negative = b.icmp_unsigned("!=", b.and_(byte, ll.Constant(i32, 0x80)), ll.Constant(i32, 0))
        sign = b.select(negative, ll.Constant(i32, 0xFF), ll.Constant(i32, 0))
        replicate = b.icmp_unsigned("!=", b.and_(nibble, ll.Constant(i32, 8)), ll.Constant(i32, 0))
        result = b.or_(result, b.shl(b.select(replicate, sign, byte), ll.Constant(i32, 8 * n)))
    return result


def _type_funnel(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 3, info.name)
    args = [_int32_arg(tr, a, info.name, what) for a, what in zip(node.args, ("lo", "hi", "the shift"))]
    return ir.Intrinsic(info.name, args, U32, tr.loc(node))


def _lower_funnel(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """``funnelshift_l(lo, hi, n)`` is the high word of ``(hi:lo) << n``: LLVM's
    ``fshl(hi, lo, n)``, which takes ``n`` mod 32; ``funnelshift_r`` the low word of
    ``(hi:lo) >> n``: ``fshr(hi, lo, n)``. The clamped forms give ``lo`` (left) or ``hi``
    (right) for ``n >= 32``, as a shift by 32 would."""
    b = fl.b
    lo, hi, n = (fl.expr(a) for a in e.args)
    left = info.op.startswith("funnelshift_l")
    fn = fl.intrinsic("llvm.fshl.i32" if left else "llvm.fshr.i32", ll.IntType(32), [ll.IntType(32)] * 3)
    shifted = b.call(fn, [hi, lo, n])
    if not info.op.endswith("c"):
        return shifted
    return b.select(b.icmp_unsigned(">=", n, ll.Constant(ll.IntType(32), 32)), lo if left else hi, shifted)


def _bit_width(ty: object) -> tuple[str, int, str] | None:
    """(name, bits, kind) of a scalar or a vector of scalars (``f16x2``: 32 bits), None for others."""
    if isinstance(ty, VectorType):
        return ty.name, ty.elem.bits * ty.lanes, ty.elem.kind
    st = as_scalar(ty)  # type: ignore[arg-type]
    if st is None:
        return None
    return st.name, st.bits, st.kind


def _type_bitcast(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """``bitcast(x, T)`` between scalars and vectors of one width: ``f32 <-> i32``, and
    ``f16x2 / bf16x2 / i16x2 <-> i32 / u32 / f32`` (a pair of halves as one 32-bit word, as CUDA's
    ``*reinterpret_cast<unsigned*>(&h2)``), ``f16x4 <-> i64``, ``bf16x8 <-> i32x4``, ..."""
    check_arg_count(tr, node, 2, info.name)
    target_ty = tr.array_element_type(node.args[1])
    value = tr.expr(node.args[0])
    if isinstance(value, ir.Const) and value.weak:
        raise tr.error(node.args[0], f"{info.name} needs a typed value, got the literal {ast.unparse(node.args[0])}",
                       f"give it its type first, e.g. {info.name}(f32({ast.unparse(node.args[0])}), "
                       f"{ast.unparse(node.args[1])})")
    source = _bit_width(value.ty)
    target = _bit_width(target_ty)
    assert target is not None
    if source is None or source[2] == "bool" or target[2] == "bool":
        got = source[0] if source is not None else "a view"
        raise tr.error(node, f"{info.name} reinterprets numbers of the same width, got {got} -> {target[0]}")
    if source[1] != target[1]:
        raise tr.error(node, f"{info.name} cannot reinterpret {source[1]}-bit {source[0]} as {target[1]}-bit "
                       f"{target[0]}: the widths differ", "convert the value instead, or pick a type of its width")
    return ir.Intrinsic(info.name, [value], target_ty, tr.loc(node))


def _lower_bitcast(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    if isinstance(e.ty, VectorType):
        target: ll.Type = ll.VectorType(fl.elem_type(e.ty.elem), e.ty.lanes)
    else:
        st = as_scalar(e.ty)
        assert st is not None
        target = fl.elem_type(st)
    if value.type == target:
        return value
    return fl.b.bitcast(value, target)


def _type_mulhi(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    a, b = tr.expr(node.args[0]), tr.expr(node.args[1])
    a, b, ty = tr.unify(a, b, node, info.name)
    if ty.kind not in ("int", "uint") or ty.bits not in (32, 64):
        raise tr.error(node, f"{info.name} needs 32- or 64-bit integers, got {ty.name}",
                       "convert them first, e.g. u32(x) (CUDA's __umulhi takes unsigned int)")
    return ir.Intrinsic(info.name, [a, b], ty, tr.loc(node))


def _lower_mulhi(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The product in twice the width, shifted down: LLVM's NVPTX backend makes it ``mul.hi``."""
    ty = as_scalar(e.ty)
    assert ty is not None
    a, b = (fl.expr(x) for x in e.args)
    wide = ll.IntType(2 * ty.bits)
    extend = fl.b.sext if ty.kind == "int" else fl.b.zext
    product = fl.b.mul(extend(a, wide), extend(b, wide))
    high = fl.b.lshr(product, ll.Constant(wide, ty.bits))
    return fl.b.trunc(high, a.type)


ENTRIES = [
    *(IntrinsicInfo(f"bits.{op}", _type_bits, _lower_bits) for op in (*LLVM_NAMES, "ffs")),
    IntrinsicInfo("bits.byte_perm", _type_byte_perm, _lower_byte_perm, cpu_lowering=_cpu_byte_perm),
    *(IntrinsicInfo(f"bits.{op}", _type_funnel, _lower_funnel) for op in FUNNEL_SHIFTS),
    IntrinsicInfo("bits.bitcast", _type_bitcast, _lower_bitcast),
    IntrinsicInfo("bits.mulhi", _type_mulhi, _lower_mulhi),
]
