"""Math intrinsics (``math.*``): typing (float promotion; integer abs/min/max) and lowering
(libdevice functions, LLVM's fma and IEEE sqrt, the fast-math variants), and the per-call
fast-math forms CUDA spells with two underscores (``math.fast_exp`` is ``__expf``,
``math.fast_div`` ``__fdividef``, ...; ``f32`` only, as in CUDA), ``math.rcp`` (``__frcp_rn`` /
``__drcp_rn``) and ``math.saturate`` (``__saturatef``).

On the CPU device (``fl.cpu``) a libdevice function is the host C library's function of the
same name (``__nv_expf`` is ``expf``: glibc's are within 1 ULP, CUDA documents 1 to 4 for its
own), the fast forms are the accurate functions (within their bounds), and those C lacks are
computed here from the ones it has (``rsqrt`` as ``1 / sqrt``, ``sinpi`` through f64, the
predicates as comparisons); erfinv, erfcinv, erfcx, normcdfinv and the Bessel functions
``cyl_bessel_i0``/``i1`` are ``backends/cpu/_special_math.c``'s (long double, rounded once)."""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..ir import nodes as ir
from ..ir.types import BOOL, F32, F64, I32, I64, TupleType, Type, ViewType, as_scalar, type_name
from .arguments import check_arg_count
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "MATH_FUNCTIONS", "MathFunction"]

RESULT_TYPES = {"bool": BOOL, "i32": I32, "i64": I64}
# the LLVM integer width of each non-float result; libdevice's predicates return an int
RESULT_BITS = {"bool": 1, "i32": 32, "i64": 64}
RAW_BITS = {"bool": 32}
# CUDA's math API (f32 and f64) from libdevice: each function's parameters, result and the
# libdevice names of its f32 and f64 forms. Parameters: "x" a float (all of them one type, the
# call's float type), "i" an i32 (ldexp's exponent, jn's order). Results: "x" the float type,
# "bool", "i32", "i64", or a tuple of them (what CUDA returns through pointers: sincos's sine
# and cosine, modf's integral part, frexp's exponent, remquo's quotient bits).
@dataclass(frozen=True)
class MathFunction:
    params: str
    result: tuple[str, ...]
    libdevice: tuple[str, str]  # (f32, f64)
    cuda: str  # CUDA's f32 spelling, for messages and docs


def _same(f32: str, f64: str, params: str = "x") -> MathFunction:
    return MathFunction(params, ("x",), (f"__nv_{f32}", f"__nv_{f64}"), f32)


MATH_FUNCTIONS: dict[str, MathFunction] = {
    **{op: _same(f"{op}f", op) for op in (
        "sqrt", "rsqrt", "cbrt", "rcbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb",
        "sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
        "atanh", "erf", "erfc", "erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "lgamma", "tgamma", "j0",
        "j1", "y0", "y1", "cyl_bessel_i0", "cyl_bessel_i1", "floor", "ceil", "trunc", "round", "rint",
        "nearbyint")},
    "abs": _same("fabsf", "fabs"), "fabs": _same("fabsf", "fabs"),
    **{op: _same(f"{op}f", op, "xx") for op in (
        "pow", "atan2", "fmod", "remainder", "hypot", "rhypot", "copysign", "nextafter", "fdim")},
    "min": _same("fminf", "fmin", "xx"), "max": _same("fmaxf", "fmax", "xx"),
    "fmin": _same("fminf", "fmin", "xx"), "fmax": _same("fmaxf", "fmax", "xx"),
    "fma": _same("fmaf", "fma", "xxx"),
    "norm3d": _same("norm3df", "norm3d", "xxx"), "rnorm3d": _same("rnorm3df", "rnorm3d", "xxx"),
    "norm4d": _same("norm4df", "norm4d", "xxxx"), "rnorm4d": _same("rnorm4df", "rnorm4d", "xxxx"),
    "ldexp": _same("ldexpf", "ldexp", "xi"), "scalbn": _same("scalbnf", "scalbn", "xi"),
    "scalbln": MathFunction("xl", ("x",), ("__nv_scalbnf", "__nv_scalbn"), "scalblnf"),
    "jn": _same("jnf", "jn", "ix"), "yn": _same("ynf", "yn", "ix"),
    "ilogb": MathFunction("x", ("i32",), ("__nv_ilogbf", "__nv_ilogb"), "ilogbf"),
    "lround": MathFunction("x", ("i64",), ("__nv_llroundf", "__nv_llround"), "lroundf"),
    "llround": MathFunction("x", ("i64",), ("__nv_llroundf", "__nv_llround"), "llroundf"),
    "lrint": MathFunction("x", ("i64",), ("__nv_llrintf", "__nv_llrint"), "lrintf"),
    "llrint": MathFunction("x", ("i64",), ("__nv_llrintf", "__nv_llrint"), "llrintf"),
    "isnan": MathFunction("x", ("bool",), ("__nv_isnanf", "__nv_isnand"), "isnan"),
    "isinf": MathFunction("x", ("bool",), ("__nv_isinff", "__nv_isinfd"), "isinf"),
    "isfinite": MathFunction("x", ("bool",), ("__nv_finitef", "__nv_isfinited"), "isfinite"),
    "signbit": MathFunction("x", ("bool",), ("__nv_signbitf", "__nv_signbitd"), "signbit"),
    "sincos": MathFunction("x", ("x", "x"), ("__nv_sincosf", "__nv_sincos"), "sincosf"),
    "sincospi": MathFunction("x", ("x", "x"), ("__nv_sincospif", "__nv_sincospi"), "sincospif"),
    "modf": MathFunction("x", ("x", "x"), ("__nv_modff", "__nv_modf"), "modff"),
    "frexp": MathFunction("x", ("x", "i32"), ("__nv_frexpf", "__nv_frexp"), "frexpf"),
    "remquo": MathFunction("xx", ("x", "i32"), ("__nv_remquof", "__nv_remquo"), "remquof"),
}
# the functions whose integer form exists too (C's abs, min, max of ints)
INTEGER_FORMS = ("abs", "min", "max")
# sincos(x) -> (sin, cos) from void __nv_sincosf(x, float* s, float* c); the others return their
# first result and store the second through their last parameter
VOID_WITH_OUTPUTS = ("sincos", "sincospi")
LIBDEVICE_FAST = {"exp": "__nv_fast_expf", "exp2": "__nv_exp2f", "log": "__nv_fast_logf",
                  "log2": "__nv_fast_log2f", "sin": "__nv_fast_sinf", "cos": "__nv_fast_cosf",
                  "tan": "__nv_fast_tanf"}
# per-call fast math, f32 only (libdevice's approximate forms: what nvcc makes of __expf ...)
FAST_UNARY = {"fast_exp": "__nv_fast_expf", "fast_exp2": "llvm.nvvm.ex2.approx.ftz.f", "fast_exp10": "__nv_fast_exp10f", "fast_log": "__nv_fast_logf",
              "fast_log2": "__nv_fast_log2f", "fast_log10": "__nv_fast_log10f", "fast_sin": "__nv_fast_sinf",
              "fast_cos": "__nv_fast_cosf", "fast_tan": "__nv_fast_tanf", "saturate": "__nv_saturatef"}
FAST_BINARY = {"fast_pow": "__nv_fast_powf", "fast_div": "__nv_fast_fdividef"}
CUDA_FAST_NAMES = {"fast_exp": "__expf", "fast_exp2": "exp2f under -use_fast_math", "fast_exp10": "__exp10f", "fast_log": "__logf", "fast_log2": "__log2f",
                   "fast_log10": "__log10f", "fast_sin": "__sinf", "fast_cos": "__cosf", "fast_tan": "__tanf",
                   "saturate": "__saturatef", "fast_pow": "__powf", "fast_div": "__fdividef"}
RCP = ("__nv_frcp_rn", "__nv_drcp_rn")  # 1/x rounded to nearest, even under fast-math
# math of compile-time constants, folded in f64 as Python computes it (a domain error, an
# overflow or a non-finite result is left to run time)
_FOLDABLE: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt, "rsqrt": lambda x: 1.0 / math.sqrt(x), "exp": math.exp, "exp2": lambda x: math.pow(2.0, x),
    "exp10": lambda x: math.pow(10.0, x), "expm1": math.expm1, "log1p": math.log1p,
    "log": math.log, "log2": math.log2, "log10": math.log10, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "asin": math.asin, "acos": math.acos, "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh, "erfc": math.erfc, "lgamma": math.lgamma,
    "tgamma": math.gamma, "cbrt": lambda x: math.copysign(abs(x) ** (1.0 / 3.0), x) if x else x,
    "tanh": math.tanh, "erf": math.erf, "abs": math.fabs, "fabs": math.fabs, "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)), "trunc": lambda x: float(math.trunc(x)),
    "round": lambda x: _round_half_away(x), "rint": lambda x: float(round(x)),
    "nearbyint": lambda x: float(round(x)), "pow": math.pow, "min": min, "max": max, "fmin": min, "fmax": max,
    "atan2": math.atan2, "fmod": math.fmod, "hypot": math.hypot, "copysign": math.copysign,
    "remainder": math.remainder, "fdim": lambda x, y: x - y if x > y else 0.0,
}


def _round_half_away(x: float) -> float:
    """C's round(): halfway cases away from zero (Python's round() goes to even)."""
    t = float(math.trunc(x))
    return t + math.copysign(1.0, x) if abs(x - t) >= 0.5 else t


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
    fn = MATH_FUNCTIONS[op]
    loc = tr.loc(node)
    check_arg_count(tr, node, len(fn.params), name)
    values = [tr.expr(a) for a in node.args]
    for v, a in zip(values, node.args):
        if as_scalar(v.ty) is None or v.ty == BOOL:
            raise tr.error(a, f"{name} needs numbers, got {type_name(v.ty)}",
                           "index the view to get an element" if isinstance(v.ty, ViewType) else "")
    if fn.params == "x" * len(fn.params) and fn.result == ("x",):
        folded = _fold_constant(op, values, loc)
        if folded is not None:
            return folded
    floats = [v for v, p in zip(values, fn.params) if p == "x"]
    strong = [as_scalar(v.ty) for v in floats if not (isinstance(v, ir.Const) and v.weak)]
    ty = F64 if not strong else strong[0]
    for other in strong[1:]:
        assert ty is not None and other is not None
        if other != ty:
            ty = F64 if F64 in (ty, other) else other if other.kind == "float" else ty
    assert ty is not None
    if ty.kind != "float":
        if op in INTEGER_FORMS:
            args = [tr.convert(v, ty, node) for v in values]
            return ir.Intrinsic(name, args, ty, loc)
        ty = F64 if ty.bits > 32 else F32
    if ty.bits == 16:
        ty = F32  # half-precision math runs in f32, like CUDA's promotion
    args = []
    for v, a, p in zip(values, node.args, fn.params):
        if p == "x":
            args.append(tr.convert(v, ty, node))
            continue
        st = as_scalar(v.ty)
        if st is None or st.kind not in ("int", "uint"):
            what = "order" if op in ("jn", "yn") else "exponent"
            got = f"the float literal {v.value}" if isinstance(v, ir.Const) and v.weak else type_name(v.ty)
            raise tr.error(a, f"{name}'s {what} is an integer, got {got}",
                           f"convert with {'i64' if p == 'l' else 'i32'}(...) (CUDA's {fn.cuda} takes "
                           f"{'a long' if p == 'l' else 'an int'})")
        args.append(tr.convert_implicit(v, I64 if p == "l" else I32, a, f"{name}'s {'order' if op in ('jn', 'yn') else 'exponent'}"))
    results = [ty if r == "x" else RESULT_TYPES[r] for r in fn.result]
    result: Type = results[0] if len(results) == 1 else TupleType(tuple(results))
    return ir.Intrinsic(name, args, result, loc)


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
                           (f", or use ox.math.{exact} for f64" if exact in MATH_FUNCTIONS else "")
                           + ("" if info.op != "fast_div" else ", or divide with /"))
        args.append(tr.convert(value, F32, a))
    return ir.Intrinsic(info.name, args, F32, tr.loc(node))


def _lower_fast(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    args = [fl.expr(a) for a in e.args]
    t = ll.FloatType()
    name = FAST_UNARY.get(info.op) or FAST_BINARY[info.op]
    if fl.cpu:
        name = {"llvm.nvvm.ex2.approx.ftz.f": "__nv_exp2f"}.get(name, name)
        return _libdevice_call(fl, name, t, [t] * len(args), args)
    return fl.b.call(fl.intrinsic(name, t, [t] * len(args)), args)


# the CPU device's forms of libdevice functions C's math library lacks: name -> the value from
# the builder, the LLVM arguments and a call of a host function (name, result, parameters, arguments)
HostCall = Callable[[str, "ll.Type", list["ll.Type"], list["ll.Value"]], "ll.Value"]
# and those the CPU device computes in backends/cpu/_special_math.c (oxide_cpu_<name>, <name>f)
SPECIAL_FUNCTIONS = ("erfinv", "erfcinv", "erfcx", "normcdfinv", "cyl_bessel_i0", "cyl_bessel_i1")


def _libdevice_call(fl: LoweringContext, name: str, ret: ll.Type, params: list[ll.Type], args: list[ll.Value]) -> ll.Value:
    """A libdevice function on the GPU; on the CPU device the host's function of that name
    without ``__nv_``, or its form computed here (see the module's docstring)."""
    b = fl.b
    if not fl.cpu:
        return b.call(fl.intrinsic(name, ret, params), args)
    base = name.removeprefix("__nv_").removeprefix("fast_")  # the host's C name
    single = base.endswith("f") and base not in ("erf", "modf", "normcdf")  # f64 names ending in f
    # the function itself, without the type's suffix (predicates end in d for f64)
    plain = base[:-1] if single or base.endswith("d") and base.startswith(("is", "signbit")) else base
    plain = {"finite": "isfinite", "frcp_rn": "rcp", "drcp_rn": "rcp", "fdivide": "fast_div"}.get(plain, plain)
    floats = [p for p in params if isinstance(p, (ll.FloatType, ll.DoubleType))]
    t = floats[0] if floats else ret

    def host(fn: str, result: ll.Type, types: list[ll.Type], values: list[ll.Value]) -> ll.Value:
        declared = fl.module.globals.get(fn)
        if declared is None:
            declared = ll.Function(fl.module, ll.FunctionType(result, types), fn)
        return b.call(declared, values)

    suffix = "f" if isinstance(t, ll.FloatType) else ""
    if plain in SPECIAL_FUNCTIONS:  # backends/cpu/_special_math.c
        return host(f"oxide_cpu_{plain}{suffix}", ret, params, args)
    one = ll.Constant(t, 1.0)
    if plain in ("isnan", "isinf", "isfinite", "signbit"):
        x = args[0]
        if plain == "isnan":
            flag = b.fcmp_unordered("uno", x, x)
        elif plain == "isinf":
            flag = b.fcmp_ordered("==", host(f"fabs{suffix}", t, [t], [x]), ll.Constant(t, math.inf))
        elif plain == "isfinite":
            flag = b.fcmp_ordered("<", host(f"fabs{suffix}", t, [t], [x]), ll.Constant(t, math.inf))
        else:
            width = 32 if suffix else 64
            flag = b.icmp_signed("<", b.bitcast(x, ll.IntType(width)), ll.Constant(ll.IntType(width), 0))
        return b.zext(flag, ret)
    if plain in ("rcp", "fast_div"):
        return b.fdiv(one, args[0]) if plain == "rcp" else b.fdiv(args[0], args[1])
    if plain == "saturate":
        low = host(f"fmax{suffix}", t, [t, t], [args[0], ll.Constant(t, 0.0)])
        return host(f"fmin{suffix}", t, [t, t], [low, one])
    if plain in ("rsqrt", "rcbrt"):
        return b.fdiv(one, host(f"{plain[1:]}{suffix}", t, [t], args))
    if plain in ("rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d"):
        squares = [b.fmul(a, a) for a in args]
        total = squares[0]
        for sq in squares[1:]:
            total = b.fadd(total, sq)
        if plain == "rhypot":
            return b.fdiv(one, host(f"hypot{suffix}", t, [t, t], args))
        root = host(f"sqrt{suffix}", t, [t], [total])
        return b.fdiv(one, root) if plain.startswith("r") else root
    if plain in ("sinpi", "cospi", "sincospi"):
        d = ll.DoubleType()
        x = b.fpext(args[0], d) if suffix else args[0]
        scaled = b.fmul(x, ll.Constant(d, math.pi))
        parts = [host(fn, d, [d], [scaled]) for fn in (("sin",) if plain == "sinpi" else ("cos",) if plain == "cospi"
                                                      else ("sin", "cos"))]
        parts = [b.fptrunc(v, t) if suffix else v for v in parts]
        if plain != "sincospi":
            return parts[0]
        for value, out in zip(parts, args[1:]):
            b.store(value, out)
        return ll.Constant(ll.IntType(32), 0)
    if plain == "normcdf":
        # f32 through f64: erfc amplifies the scaling's rounding by ~2x^2 (CUDA's bound is 5 ulps)
        d = ll.DoubleType()
        x = b.fpext(args[0], d) if suffix else args[0]
        scaled = b.fmul(x, ll.Constant(d, -1.0 / math.sqrt(2.0)))
        value = b.fmul(ll.Constant(d, 0.5), host("erfc", d, [d], [scaled]))
        return b.fptrunc(value, t) if suffix else value
    return host(base, ret, params, args)


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
    return _libdevice_call(fl, name, value.type, [value.type], [value])


def _lower_math(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    op = info.op
    fn = MATH_FUNCTIONS[op]
    args = [fl.expr(a) for a in e.args]
    st = as_scalar(e.args[fn.params.index("x")].ty)
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
    t = ll.DoubleType() if is64 else ll.FloatType()
    if op == "fma":
        fn_ll = fl.intrinsic(f"llvm.fma.{'f64' if is64 else 'f32'}", t, [t, t, t])
        return b.call(fn_ll, args)
    if op == "sqrt" and not fl.fast_math:  # IEEE-rounded, like nvcc's default -prec-sqrt=true
        return b.call(fl.intrinsic(f"llvm.sqrt.{'f64' if is64 else 'f32'}", t, [t]), args)
    if op == "scalbln":  # scalbnf with the exponent clamped: past ±65536 every result is 0 or inf already
        n = args[1]
        n = b.select(b.icmp_signed(">", n, ll.Constant(n.type, 65536)), ll.Constant(n.type, 65536), n)
        n = b.select(b.icmp_signed("<", n, ll.Constant(n.type, -65536)), ll.Constant(n.type, -65536), n)
        args[1] = b.trunc(n, ll.IntType(32))
    ll_i32 = ll.IntType(32)
    in_types = [t if p == "x" else ll_i32 for p in fn.params]
    result_ll = [t if r == "x" else ll.IntType(RESULT_BITS[r]) for r in fn.result]
    if op == "tanh" and fl.fast_math and not is64 and not fl.cpu:
        # what nvcc -use_fast_math makes of tanhf on sm_75 and later: one MUFU.TANH (max
        # relative error about 2^-11), where libdevice's __nv_tanhf takes an exp, a reciprocal
        # and a polynomial
        return b.asm(ll.FunctionType(t, [t]), "tanh.approx.f32 $0, $1;", "=f,f", args, False)
    name = fn.libdevice[is64]
    if fl.fast_math and not is64 and op in LIBDEVICE_FAST:
        name = LIBDEVICE_FAST[op]
    if len(result_ll) == 1:
        raw = ll.IntType(RAW_BITS[fn.result[0]]) if fn.result[0] in RAW_BITS else result_ll[0]
        value = _libdevice_call(fl, name, raw, in_types, args)
        if fn.result[0] == "bool":
            return b.icmp_unsigned("!=", value, ll.Constant(raw, 0))
        return value
    # the results CUDA stores through pointers: entry-block temporaries that mem2reg keeps in registers
    slots = [fl.temp(r) for r in result_ll[0 if op in VOID_WITH_OUTPUTS else 1:]]
    ptr_types = [s.type for s in slots]
    if op in VOID_WITH_OUTPUTS:
        _libdevice_call(fl, name, ll.VoidType(), in_types + ptr_types, args + slots)
        parts = [b.load(s) for s in slots]
    else:
        first = _libdevice_call(fl, name, result_ll[0], in_types + ptr_types, args + slots)
        parts = [first] + [b.load(s) for s in slots]
    out: ll.Value = ll.Constant(ll.LiteralStructType(result_ll), None)
    for i, part in enumerate(parts):
        out = b.insert_value(out, part, i)
    return out


ENTRIES = [
    *(IntrinsicInfo(f"math.{op}", _type_math, _lower_math) for op in MATH_FUNCTIONS),
    *(IntrinsicInfo(f"math.{op}", _type_fast, _lower_fast) for op in (*FAST_UNARY, *FAST_BINARY)),
    IntrinsicInfo("math.rcp", _type_rcp, _lower_rcp),
]
