"""Conversions to and from the 8-bit floats ``f8e4m3`` and ``f8e5m2`` (sm_89+).

An fp8 value is an ``i8`` in LLVM IR (LLVM has no fp8 type). PTX converts two at a time:
``cvt.rn.satfinite.e4m3x2.f32 d, a, b`` rounds two f32 to nearest even, saturating to the
largest finite value (NaN stays NaN), into the upper (``a``) and lower (``b``) byte of ``d``;
``cvt.rn.f16x2.e4m3x2`` widens two fp8 exactly into an f16x2. One value converts in the lower
lane. f16 and bf16 widen to f32 first (exactly), and f16 holds every fp8 value exactly, so
every conversion rounds once. NVPTX gets LLVM's intrinsics (``llvm.nvvm.ff.to.e4m3x2.rn``,
``llvm.nvvm.e4m3x2.to.f16x2.rn``: no memory effects, so LLVM may hoist and merge them);
libNVVM, which has neither, the same instructions as inline PTX. On the CPU device the
scheduler's ``oxide_cpu_to_fp8`` / ``oxide_cpu_from_fp8`` compute the same conversions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from oxide.lang.types import ScalarType

if TYPE_CHECKING:
    from .llvm import FunctionLowering

__all__ = ["cast_fp8", "FP8_PTX_NAMES"]

FP8_PTX_NAMES = {"f8e4m3": "e4m3", "f8e5m2": "e5m2"}
I8, I16, I32 = ll.IntType(8), ll.IntType(16), ll.IntType(32)


def _pure_asm(fl: FunctionLowering, text: str, constraint: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
    """Inline PTX without side effects: a conversion LLVM may move or merge like any arithmetic."""
    fnty = ll.FunctionType(ret, [a.type for a in args])
    return fl.b.call(ll.InlineAsm(fnty, text, constraint, side_effect=False), args)


def _to_fp8(fl: FunctionLowering, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
    b = fl.b
    f32 = ll.FloatType()
    x = v if src.name == "f32" else b.fpext(v, f32)  # f16, bf16: exact
    kind = FP8_PTX_NAMES[dst.name]
    zero = ll.Constant(f32, 0.0)
    if fl.parent.cpu:
        byte = b.call(fl.parent.cpu_runtime("oxide_cpu_to_fp8"), [x, ll.Constant(I32, int(kind == "e5m2"))])
        return b.trunc(byte, I8)
    if fl.parent.libnvvm:
        pair = _pure_asm(fl, f"cvt.rn.satfinite.{kind}x2.f32 $0, $1, $2;", "=h,f,f", I16, [zero, x])
    else:
        fn = fl.parent.intrinsic(f"llvm.nvvm.ff.to.{kind}x2.rn", I16, [f32, f32])
        pair = b.call(fn, [zero, x])
    return b.trunc(pair, I8)  # the lower byte: b's


def _from_fp8(fl: FunctionLowering, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
    b = fl.b
    kind = FP8_PTX_NAMES[src.name]
    bits = b.zext(v, I16)
    half = ll.HalfType()
    if fl.parent.cpu:
        wide = b.call(fl.parent.cpu_runtime("oxide_cpu_from_fp8"), [b.zext(v, I32), ll.Constant(I32, int(kind == "e5m2"))])
        if dst.name == "f32":
            return wide
        return b.fptrunc(wide, half) if dst.name == "f16" else b.fpext(wide, ll.DoubleType())
    if fl.parent.libnvvm:
        pair = _pure_asm(fl, f"cvt.rn.f16x2.{kind}x2 $0, $1;", "=r,h", I32, [bits])
        h = b.bitcast(b.trunc(pair, I16), half)
    else:
        h2 = ll.VectorType(half, 2)
        fn = fl.parent.intrinsic(f"llvm.nvvm.{kind}x2.to.f16x2.rn", h2, [I16])
        h = b.extract_element(b.call(fn, [bits]), ll.Constant(I32, 0))  # the lower half: the lower byte's
    if dst.name == "f16":
        return h
    return b.fpext(h, ll.DoubleType() if dst.name == "f64" else ll.FloatType())


def cast_fp8(fl: FunctionLowering, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
    """``v`` of type ``src`` as ``dst``, where one of them is an fp8 type and the other f32, f16,
    bf16 (only to fp8: the caller narrows an f32 to bf16, exactly) or f64 (from fp8): the
    frontend refuses the other pairs."""
    if dst.kind == "fp8":
        return _to_fp8(fl, v, src, dst)
    return _from_fp8(fl, v, src, dst)
