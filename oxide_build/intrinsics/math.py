"""Math intrinsics (``math.*``): typing (float promotion; integer abs/min/max) and lowering
(libdevice functions, LLVM's fma and IEEE sqrt, the fast-math variants), and the per-call
fast-math forms CUDA spells with two underscores (``math.fast_exp`` is ``__expf``,
``math.fast_div`` ``__fdividef``, ...; ``f32`` only, as in CUDA), ``math.rcp`` (``__frcp_rn`` /
``__drcp_rn``) and ``math.saturate`` (``__saturatef``)."""
from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING, Callable

from ..ir import nodes as ir
from ..ir.types import BOOL, F32, F64, I64, ViewType, as_scalar, type_name
from .arguments import check_arg_count
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]

MATH_UNARY = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "tanh",
              "erf", "abs", "floor", "ceil", "trunc", "round")
MATH_BINARY = ("pow", "min", "max", "atan2", "fmod")
MATH_PREDICATES = ("isnan", "isinf", "isfinite")
# libdevice names: (f32, f64)
LIBDEVICE_UNARY = {
    "sqrt": ("__nv_sqrtf", "__nv_sqrt"), "rsqrt": ("__nv_rsqrtf", "__nv_rsqrt"),
    "exp": ("__nv_expf", "__nv_exp"), "exp2": ("__nv_exp2f", "__nv_exp2"),
    "log": ("__nv_logf", "__nv_log"), "log2": ("__nv_log2f", "__nv_log2"),
    "log10": ("__nv_log10f", "__nv_log10"), "sin": ("__nv_sinf", "__nv_sin"),
    "cos": ("__nv_cosf", "__nv_cos"), "tan": ("__nv_tanf", "__nv_tan"),
    "tanh": ("__nv_tanhf", "__nv_tanh"), "erf": ("__nv_erff", "__nv_erf"),
    "abs": ("__nv_fabsf", "__nv_fabs"), "floor": ("__nv_floorf", "__nv_floor"),
    "ceil": ("__nv_ceilf", "__nv_ceil"), "trunc": ("__nv_truncf", "__nv_trunc"),
    "round": ("__nv_rintf", "__nv_rint"),
}
LIBDEVICE_FAST = {"exp": "__nv_fast_expf", "exp2": "__nv_exp2f", "log": "__nv_fast_logf",
                  "log2": "__nv_fast_log2f", "sin": "__nv_fast_sinf", "cos": "__nv_fast_cosf",
                  "tan": "__nv_fast_tanf"}
LIBDEVICE_BINARY = {
    "pow": ("__nv_powf", "__nv_pow"), "min": ("__nv_fminf", "__nv_fmin"),
    "max": ("__nv_fmaxf", "__nv_fmax"), "atan2": ("__nv_atan2f", "__nv_atan2"),
    "fmod": ("__nv_fmodf", "__nv_fmod"),
}
# per-call fast math, f32 only (libdevice's approximate forms: what nvcc makes of __expf ...)
FAST_UNARY = {"fast_exp": "__nv_fast_expf", "fast_exp2": "llvm.nvvm.ex2.approx.ftz.f", "fast_exp10": "__nv_fast_exp10f", "fast_log": "__nv_fast_logf",
              "fast_log2": "__nv_fast_log2f", "fast_log10": "__nv_fast_log10f", "fast_sin": "__nv_fast_sinf",
              "fast_cos": "__nv_fast_cosf", "fast_tan": "__nv_fast_tanf", "saturate": "__nv_saturatef"}
FAST_BINARY = {"fast_pow": "__nv_fast_powf", "fast_div": "__nv_fast_fdividef"}
CUDA_FAST_NAMES = {"fast_exp": "__expf", "fast_exp2": "exp2f under -use_fast_math", "fast_exp10": "__exp10f", "fast_log": "__logf", "fast_log2": "__log2f",
                   "fast_log10": "__log10f", "fast_sin": "__sinf", "fast_cos": "__cosf", "fast_tan": "__tanf",
                   "saturate": "__saturatef", "fast_pow": "__powf", "fast_div": "__fdividef"}
RCP = ("__nv_frcp_rn", "__nv_drcp_rn")  # 1/x rounded to nearest, even under fast-math
LIBDEVICE_PRED = {"isnan": ("__nv_isnanf", "__nv_isnand"), "isinf": ("__nv_isinff", "__nv_isinfd"),
                  "isfinite": ("__nv_finitef", "__nv_isfinited")}

# math of compile-time constants, folded in f64 as Python computes it (a domain error, an
# overflow or a non-finite result is left to run time)
_FOLDABLE: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt, "rsqrt": lambda x: 1.0 / math.sqrt(x), "exp": math.exp, "exp2": lambda x: math.pow(2.0, x),
    "log": math.log, "log2": math.log2, "log10": math.log10, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "tanh": math.tanh, "erf": math.erf, "abs": math.fabs, "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)), "trunc": lambda x: float(math.trunc(x)),
    "round": lambda x: float(round(x)), "pow": math.pow, "min": min, "max": max, "atan2": math.atan2,
    "fmod": math.fmod,
}


def _fold_constant(op: str, values: list[ir.Expr], loc: ir.Loc) -> ir.Const | None:
    """``ox.math.sqrt(2.0)``, ``ox.math.sqrt(FLOAT_N)``: a weak literal typed by its use, like the
    constant expression it is, so ``x * ox.math.sqrt(2.0)`` stays ``f32`` (CUDA's
    ``x * sqrtf(2.0f)``) instead of making the math ``f64``."""
    fold = _FOLDABLE.get(op)
    consts = [v for v in values if isinstance(v, ir.Const) and v.weak]
    if fold is None or len(consts) != len(values):
        return None
    args = [c.value for c in consts]
    if op in ("abs", "min", "max") and all(c.ty == I64 for c in consts):
        result: int | float = abs(args[0]) if op == "abs" else fold(*args)
        return ir.Const(result, I64, loc, weak=True)
    try:
        value = float(fold(*[float(a) for a in args]))
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    if not math.isfinite(value):
        return None
    return ir.Const(value, F64, loc, weak=True)


def _type_math(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    name, op = info.name, info.op
    loc = tr.loc(node)
    nargs = 3 if op == "fma" else 2 if op in MATH_BINARY else 1
    check_arg_count(tr, node, nargs, name)
    values = [tr.expr(a) for a in node.args]
    for v, a in zip(values, node.args):
        if as_scalar(v.ty) is None or v.ty == BOOL:
            raise tr.error(a, f"{name} needs numbers, got {type_name(v.ty)}",
                           "index the view to get an element" if isinstance(v.ty, ViewType) else "")
    folded = _fold_constant(op, values, loc)
    if folded is not None:
        return folded
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


def _type_fast(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """The f32-only fast forms: f16/bf16, integers and literals convert to f32 (as CUDA's
    implicit conversions do); an f64 would lose precision silently, so it is an error."""
    check_arg_count(tr, node, 2 if info.op in FAST_BINARY else 1, info.name)
    args = []
    for a in node.args:
        value = tr.expr(a)
        st = as_scalar(value.ty)
        if st is None or st == BOOL:
            raise tr.error(a, f"{info.name} needs numbers, got {type_name(value.ty)}")
        if st == F64 and not (isinstance(value, ir.Const) and value.weak):
            exact = info.op[len("fast_"):] if info.op.startswith("fast_") else ""
            raise tr.error(a, f"{info.name} is an f32 approximation (CUDA's {CUDA_FAST_NAMES[info.op]}), got f64",
                           "convert with f32(...) to accept its precision" +
                           (f", or use ox.math.{exact} for f64" if exact in LIBDEVICE_UNARY else "")
                           + ("" if info.op != "fast_div" else ", or divide with /"))
        args.append(tr.convert(value, F32, a))
    return ir.Intrinsic(info.name, args, F32, tr.loc(node))


def _lower_fast(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    args = [fl.expr(a) for a in e.args]
    t = ll.FloatType()
    name = FAST_UNARY.get(info.op) or FAST_BINARY[info.op]
    return fl.b.call(fl.intrinsic(name, t, [t] * len(args)), args)


def _type_rcp(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    value = tr.expr(node.args[0])
    st = as_scalar(value.ty)
    if st is None or st == BOOL:
        raise tr.error(node.args[0], f"{info.name} needs a number, got {type_name(value.ty)}")
    ty = F64 if st == F64 or (st.kind != "float" and st.bits > 32) else F32
    return ir.Intrinsic(info.name, [tr.convert(value, ty, node.args[0])], ty, tr.loc(node))


def _lower_rcp(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    name = RCP[e.ty == F64]
    return fl.b.call(fl.intrinsic(name, value.type, [value.type]), [value])


def _lower_math(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    op = info.op
    args = [fl.expr(a) for a in e.args]
    st = as_scalar(e.args[0].ty)
    assert st is not None
    if st.kind != "float":  # integer abs / min / max
        a = args[0]
        if op == "abs":
            if st.kind == "uint":
                return a
            return b.select(b.icmp_signed("<", a, ll.Constant(a.type, 0)), b.neg(a), a)
        cmp = b.icmp_signed if st.kind == "int" else b.icmp_unsigned
        return b.select(cmp("<" if op == "min" else ">", args[0], args[1]), args[0], args[1])
    is64 = st.bits == 64
    t = args[0].type
    if op == "fma":
        fn = fl.intrinsic(f"llvm.fma.{'f64' if is64 else 'f32'}", t, [t, t, t])
        return b.call(fn, args)
    if op in LIBDEVICE_PRED:
        name = LIBDEVICE_PRED[op][is64]
        r = b.call(fl.intrinsic(name, ll.IntType(32), [t]), args)
        return b.icmp_unsigned("!=", r, ll.Constant(ll.IntType(32), 0))
    if op in LIBDEVICE_BINARY:
        name = LIBDEVICE_BINARY[op][is64]
        return b.call(fl.intrinsic(name, t, [t, t]), args)
    if op == "sqrt" and not fl.fast_math:  # IEEE-rounded, like nvcc's default -prec-sqrt=true
        return b.call(fl.intrinsic(f"llvm.sqrt.{'f64' if is64 else 'f32'}", t, [t]), args)
    if fl.fast_math and not is64 and op in LIBDEVICE_FAST:
        name = LIBDEVICE_FAST[op]
    else:
        name = LIBDEVICE_UNARY[op][is64]
    return b.call(fl.intrinsic(name, t, [t]), args)


ENTRIES = [
    *(IntrinsicInfo(f"math.{op}", _type_math, _lower_math) for op in ("fma", *MATH_UNARY, *MATH_BINARY, *MATH_PREDICATES)),
    *(IntrinsicInfo(f"math.{op}", _type_fast, _lower_fast) for op in (*FAST_UNARY, *FAST_BINARY)),
    IntrinsicInfo("math.rcp", _type_rcp, _lower_rcp),
]
