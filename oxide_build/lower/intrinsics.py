"""Lowering of ``ir.Intrinsic``: atomics, warp operations, math (libdevice), fences, vector access."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.types import TupleType, as_scalar

if TYPE_CHECKING:
    from .llvm import FunctionLowering

__all__ = ["lower_intrinsic"]

I1, I32, I64 = ll.IntType(1), ll.IntType(32), ll.IntType(64)
FULL_MASK = 0xFFFFFFFF

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
LIBDEVICE_PRED = {"isnan": ("__nv_isnanf", "__nv_isnand"), "isinf": ("__nv_isinff", "__nv_isinfd"),
                  "isfinite": ("__nv_finitef", "__nv_isfinited")}
ATOMIC_RMW = {"add": "add", "exch": "xchg", "and_": "and", "or_": "or", "xor": "xor",
              "inc": "uinc_wrap", "dec": "udec_wrap"}


def lower_intrinsic(fl: FunctionLowering, e: ir.Intrinsic) -> ll.Value:
    if e.name == "checked_index":
        value = fl.expr(e.args[0])
        if e.check_site is not None:
            fl.bounds_check(value, fl.expr(e.args[1]), e.check_site)
        return value
    if e.name == "flat_index":
        return fl.expr(e.args[0])
    group, _, op = e.name.partition(".")
    if group == "warp":
        return _warp(fl, op, e)
    if group == "atomic":
        return _atomic(fl, op, e)
    if group == "math":
        return _math(fl, op, e)
    if group == "fence":
        name = {"block": "llvm.nvvm.membar.cta", "device": "llvm.nvvm.membar.gl", "system": "llvm.nvvm.membar.sys"}[op]
        return fl.b.call(fl.parent.intrinsic(name, ll.VoidType(), []), [])
    if group == "view":
        return _vector(fl, op, e)
    raise TypeError(f"cannot lower intrinsic {e.name}")


def _scalar(e: ir.Expr) -> ScalarType:
    s = as_scalar(e.ty)
    assert s is not None
    return s


def _warp(fl: FunctionLowering, op: str, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    mask = ll.Constant(I32, FULL_MASK)
    if op == "lane":
        return fl.sreg("laneid")
    if op == "id":
        tid_x, tid_y, tid_z = fl.sreg("tid.x"), fl.sreg("tid.y"), fl.sreg("tid.z")
        ntid_x, ntid_y = fl.sreg("ntid.x"), fl.sreg("ntid.y")
        linear = b.add(tid_x, b.mul(ntid_x, b.add(tid_y, b.mul(ntid_y, tid_z))))
        return b.lshr(linear, ll.Constant(I32, 5))
    if op == "sync":
        m = fl.expr(e.args[0]) if e.args else mask
        fn = fl.parent.intrinsic("llvm.nvvm.bar.warp.sync", ll.VoidType(), [I32])
        fn.attributes.add("convergent")
        return b.call(fn, [m])
    if op in ("all", "any", "ballot"):
        ret = I1 if op != "ballot" else I32
        fn = fl.parent.intrinsic(f"llvm.nvvm.vote.{op}.sync", ret, [I32, I1])
        fn.attributes.add("convergent")
        return b.call(fn, [mask, fl.expr(e.args[0])])
    if op == "match_any":
        value = fl.expr(e.args[0])
        suffix = "i64" if _scalar(e.args[0]).bits == 64 else "i32"
        fn = fl.parent.intrinsic(f"llvm.nvvm.match.any.sync.{suffix}", I32, [I32, value.type])
        fn.attributes.add("convergent")
        return b.call(fn, [mask, value])
    if op.startswith("shfl_"):
        value = fl.expr(e.args[0])
        lane = fl.expr(e.args[1])
        width = e.args[2]
        assert isinstance(width, ir.Const)
        kind = {"shfl_idx": "idx", "shfl_up": "up", "shfl_down": "down", "shfl_xor": "bfly"}[op]
        clamp = ((32 - int(width.value)) << 8) | (0 if kind == "up" else 0x1F)
        return shuffle(fl, kind, value, _scalar(e.args[0]), lane, clamp)
    if op.startswith("reduce_"):
        value = fl.expr(e.args[0])
        st = _scalar(e.args[0])
        for offset in (16, 8, 4, 2, 1):
            other = shuffle(fl, "bfly", value, st, ll.Constant(I32, offset), 0x1F)
            value = _combine(fl, op[len("reduce_"):], value, other, st)
        return value
    raise TypeError(f"cannot lower warp.{op}")


def shuffle(fl: FunctionLowering, kind: str, value: ll.Value, st: ScalarType, lane: ll.Value, clamp: int) -> ll.Value:
    b = fl.b
    mask = ll.Constant(I32, FULL_MASK)
    c = ll.Constant(I32, clamp)

    def shfl32(v: ll.Value, suffix: str) -> ll.Value:
        t = ll.FloatType() if suffix == "f32" else I32
        fn = fl.parent.intrinsic(f"llvm.nvvm.shfl.sync.{kind}.{suffix}", t, [I32, t, I32, I32])
        fn.attributes.add("convergent")
        return b.call(fn, [mask, v, lane, c])

    if st.kind == "float" and st.bits == 32:
        return shfl32(value, "f32")
    if st.bits == 64:
        raw = b.bitcast(value, I64) if st.kind == "float" else value
        lo = shfl32(b.trunc(raw, I32), "i32")
        hi = shfl32(b.trunc(b.lshr(raw, ll.Constant(I64, 32)), I32), "i32")
        joined = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ll.Constant(I64, 32)))
        return b.bitcast(joined, value.type) if st.kind == "float" else joined
    if st.kind == "float":  # f16: through i32
        bits = b.zext(b.bitcast(value, ll.IntType(16)), I32)
        return b.bitcast(b.trunc(shfl32(bits, "i32"), ll.IntType(16)), value.type)
    if st.bits == 32:
        return shfl32(value, "i32")
    wide = b.sext(value, I32) if st.kind == "int" else b.zext(value, I32)
    return b.trunc(shfl32(wide, "i32"), value.type)


def _combine(fl: FunctionLowering, op: str, a: ll.Value, c: ll.Value, st: ScalarType) -> ll.Value:
    b = fl.b
    if op == "sum":
        return b.fadd(a, c) if st.kind == "float" else b.add(a, c)
    if st.kind == "float":
        name = ("__nv_fminf" if op == "min" else "__nv_fmaxf") if st.bits == 32 else ("__nv_fmin" if op == "min" else "__nv_fmax")
        return b.call(fl.parent.intrinsic(name, a.type, [a.type, a.type]), [a, c])
    cmp = b.icmp_signed if st.kind == "int" else b.icmp_unsigned
    return b.select(cmp("<" if op == "min" else ">", a, c), a, c)


def _atomic(fl: FunctionLowering, op: str, e: ir.Intrinsic) -> ll.Value:
    """Device scope ("gpu", the default) is LLVM's ``atomicrmw``/``cmpxchg`` (a plain ``atom``,
    whose scope is .gpu). Block and system scope are inline PTX (``atom.cta``/``atom.sys``):
    LLVM's NVPTX backend drops ``syncscope`` from ``atomicrmw`` and libNVVM drops it from both."""
    b = fl.b
    view = fl.view(e.args[0])
    idx = fl.index(e.args[1])
    elem = view.elem
    if e.check_site is not None:
        fl.bounds_check(idx, view.length, e.check_site)
    ptr = fl.element_address(view, idx)
    values = [fl.expr(a) for a in e.args[2:]]
    if op == "cas":
        cmp, new = (_to_bits(fl, v) for v in values)
        return _from_bits(fl, _cas(fl, _int_ptr(fl, ptr, elem), cmp, new, e.scope), elem)
    value = values[0]
    if op in ("min", "max") and elem.kind == "float":
        return _float_min_max(fl, op, ptr, value, elem, e.scope)
    if op == "exch" and elem.kind == "float":
        bits = _rmw(fl, "exch", _int_ptr(fl, ptr, elem), _to_bits(fl, value), SCALAR_TYPES[f"u{elem.bits}"], e.scope)
        return _from_bits(fl, bits, elem)
    if op == "sub":  # atom has no sub: add the negation (as LLVM does)
        op, value = "add", b.fneg(value) if elem.kind == "float" else b.neg(value)
    return _rmw(fl, op, ptr, value, elem, e.scope)


def _rmw(fl: FunctionLowering, op: str, ptr: ll.Value, value: ll.Value, elem: ScalarType, scope: str) -> ll.Value:
    """``atom.<op>`` of an integer, or a float add."""
    if scope == "gpu":
        if op in ("min", "max"):
            rmw = ("u" if elem.kind == "uint" else "") + op
        else:
            rmw = "fadd" if elem.kind == "float" else ATOMIC_RMW[op]
        return fl.b.atomic_rmw(rmw, ptr, value, _ordering(scope))
    if op in ("add", "inc", "dec"):
        ptx_type = f"{'f' if elem.kind == 'float' else 'u'}{elem.bits}"
    elif op in ("min", "max"):
        ptx_type = f"{'u' if elem.kind == 'uint' else 's'}{elem.bits}"
    else:
        ptx_type = f"b{elem.bits}"
    return _ptx_atom(fl, f"{op.rstrip('_')}.{ptx_type}", ptr, [value], scope)


def _cas(fl: FunctionLowering, ptr: ll.Value, cmp: ll.Value, new: ll.Value, scope: str) -> ll.Value:
    """Compare-and-swap of integers at an integer pointer; the old value."""
    if scope != "gpu":
        return _ptx_atom(fl, f"cas.b{cmp.type.width}", ptr, [cmp, new], scope)
    return fl.b.extract_value(fl.b.cmpxchg(ptr, cmp, new, _ordering(scope), "monotonic"), 0)


def _float_min_max(fl: FunctionLowering, op: str, ptr: ll.Value, value: ll.Value, elem: ScalarType, scope: str) -> ll.Value:
    """A compare-and-swap loop (PTX has no float atom.min/max); stops without a write where the
    element already is the minimum (maximum)."""
    b = fl.b
    iptr = _int_ptr(fl, ptr, elem)
    first = b.load_atomic(iptr, _ordering(scope), elem.bits // 8)
    entry = b.block
    retry = fl.llfn.append_basic_block(f"atomic.{op}")
    swap = fl.llfn.append_basic_block(f"atomic.{op}.cas")
    done = fl.llfn.append_basic_block(f"atomic.{op}.done")
    b.branch(retry)
    b.position_at_end(retry)
    old = b.phi(first.type)
    old.add_incoming(first, entry)
    new = _to_bits(fl, _combine(fl, op, _from_bits(fl, old, elem), value, elem))
    b.cbranch(b.icmp_unsigned("==", new, old), done, swap)
    b.position_at_end(swap)
    seen = _cas(fl, iptr, old, new, scope)
    old.add_incoming(seen, swap)
    b.cbranch(b.icmp_unsigned("==", seen, old), done, retry)
    b.position_at_end(done)
    return _from_bits(fl, old, elem)


def _ordering(scope: str) -> str:
    """The memory ordering of LLVM's atomics (relaxed), with the scope's ``syncscope``; llvmlite
    prints the ordering where the syncscope goes."""
    return {"cta": 'syncscope("block") ', "gpu": 'syncscope("device") ', "sys": ""}[scope] + "monotonic"


def _ptx_atom(fl: FunctionLowering, op_type: str, ptr: ll.Value, values: list[ll.Value], scope: str) -> ll.Value:
    """``atom.<scope>.<space>.<op>.<type> $0, [$1], $2 (, $3)`` as inline PTX."""
    space = {1: ".global", 3: ".shared"}[ptr.type.addrspace]
    operands = ", ".join(f"${i + 2}" for i in range(len(values)))
    reg = {"float": "f", "double": "d", "i32": "r", "i64": "l"}[str(values[0].type)]
    constraints = ",".join([f"={reg}", "l"] + [reg] * len(values) + ["~{memory}"])
    ftype = ll.FunctionType(values[0].type, [ptr.type] + [v.type for v in values])
    return fl.b.asm(ftype, f"atom.{scope}{space}.{op_type} $0, [$1], {operands};", constraints, [ptr, *values], True)


def _int_ptr(fl: FunctionLowering, ptr: ll.Value, elem: ScalarType) -> ll.Value:
    """``ptr`` as a pointer to same-size integers (typed pointers, for libNVVM)."""
    if elem.kind != "float":
        return ptr
    return fl.b.bitcast(ptr, ll.PointerType(ll.IntType(elem.bits), ptr.type.addrspace))


def _to_bits(fl: FunctionLowering, value: ll.Value) -> ll.Value:
    if isinstance(value.type, (ll.FloatType, ll.DoubleType)):
        return fl.b.bitcast(value, ll.IntType(32 if isinstance(value.type, ll.FloatType) else 64))
    return value


def _from_bits(fl: FunctionLowering, value: ll.Value, elem: ScalarType) -> ll.Value:
    return fl.b.bitcast(value, fl.elem_type(elem)) if elem.kind == "float" else value


def _math(fl: FunctionLowering, op: str, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    args = [fl.expr(a) for a in e.args]
    st = _scalar(e.args[0])
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
        fn = fl.parent.intrinsic(f"llvm.fma.{'f64' if is64 else 'f32'}", t, [t, t, t])
        return b.call(fn, args)
    if op in LIBDEVICE_PRED:
        name = LIBDEVICE_PRED[op][is64]
        r = b.call(fl.parent.intrinsic(name, I32, [t]), args)
        return b.icmp_unsigned("!=", r, ll.Constant(I32, 0))
    if op in LIBDEVICE_BINARY:
        name = LIBDEVICE_BINARY[op][is64]
        return b.call(fl.parent.intrinsic(name, t, [t, t]), args)
    if op == "sqrt" and not fl.parent.fast_math:  # IEEE-rounded, like nvcc's default -prec-sqrt=true
        return b.call(fl.parent.intrinsic(f"llvm.sqrt.{'f64' if is64 else 'f32'}", t, [t]), args)
    if fl.parent.fast_math and not is64 and op in LIBDEVICE_FAST:
        name = LIBDEVICE_FAST[op]
    else:
        name = LIBDEVICE_UNARY[op][is64]
    return b.call(fl.parent.intrinsic(name, t, [t]), args)


def _vector(fl: FunctionLowering, op: str, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    view = fl.view(e.args[0])
    width = int(op[-1])
    k = fl.expr(e.args[1])
    elem_t = fl.elem_type(view.elem)
    vec_t = ll.VectorType(elem_t, width)
    first = b.mul(k, ll.Constant(I64, width))
    ptr = b.gep(view.ptr, [first], source_etype=elem_t)
    vptr = b.bitcast(ptr, ll.PointerType(vec_t, ptr.type.addrspace))
    if e.check_site is not None:
        fl.bounds_check(fl.expr(e.args[2]), view.length, e.check_site)
    align = view.elem.itemsize * width
    if op.startswith("load"):
        vec = b.load(vptr, typ=vec_t, align=align)
        fl.mark_invariant(vec, view)
        # `freeze` keeps instcombine from splitting the load into scalar loads, which would
        # lose the invariant mark (and so ld.global.nc) when the backend re-vectorizes them
        frozen = ll.instructions.Instruction(b.block, vec_t, "freeze", [vec])
        b._insert(frozen)
        vec = frozen
        assert isinstance(e.ty, TupleType)
        st = ll.LiteralStructType([elem_t] * width)
        result: ll.Value = ll.Constant(st, None)
        for i in range(width):
            result = b.insert_value(result, b.extract_element(vec, ll.Constant(I32, i)), i)
        return result
    packed: ll.Value = ll.Constant(vec_t, None)
    for i, a in enumerate(e.args[3:]):
        packed = b.insert_element(packed, fl.expr(a), ll.Constant(I32, i))
    b.store(packed, vptr, align=align)
    return ll.Constant(I32, 0)

