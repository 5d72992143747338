"""Atomics (``atomic.*``): typing (targets, element types, ``scope=``) and lowering (LLVM's
atomics at device scope, inline PTX ``atom`` at block and system scope, a compare-and-swap loop
for float min/max). ``f16``/``bf16`` elements take add, sub, exch, cas, min and max: an f16 add is
PTX's ``atom.add.noftz.f16``, a bf16 add ``atom.add.noftz.bf16`` on sm_90 and newer; the rest, and
a bf16 add before sm_90, a 16-bit compare-and-swap loop (``atom.cas.b16``) computing in f32. A pair
(``ox.atomic.add(h, k, v)``, ``v`` an ``f16x2``/``bf16x2``: CUDA's ``atomicAdd`` on ``__half2`` /
``__nv_bfloat162``) is ``atom.add.noftz.f16x2`` / ``.bf16x2`` (sm_90; a 32-bit compare-and-swap
loop before). Which form an arch gets is chosen by ``__nvvm_reflect("__CUDA_ARCH")``, which both
backends fold per arch (as libdevice's own arch tests), so one LLVM module serves every arch.

``atomic.load(x, i, order=...)`` / ``atomic.store(x, i, v, order=...)``: single-copy atomic
accesses with a memory order (CUDA's ``cuda::atomic_ref::load(memory_order_acquire)`` /
``store(memory_order_release)``): inline PTX ``ld.relaxed|acquire.<scope>`` /
``st.relaxed|release.<scope>`` on both backends (LLVM's NVPTX and libNVVM drop or weaken the
scope of an LLVM atomic load); on the CPU device LLVM's ``load atomic`` / ``store atomic``."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import ArrayType, VectorType, ViewType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role
from .memory import checked_element
from .warp import combine

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "ATOMIC_SCOPES", "LOAD_ORDERS", "STORE_ORDERS"]

ATOMIC_OPS = ("add", "sub", "min", "max", "exch", "and_", "or_", "xor", "inc", "dec")
ATOMIC_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16")
HALF_OPS = ("add", "sub", "exch", "cas", "min", "max")  # what f16/bf16 elements take
# scope= spellings → PTX scope: CUDA's (atomicAdd_block / atomicAdd / atomicAdd_system) and PTX's
ATOMIC_SCOPES = {"block": "cta", "cta": "cta", "device": "gpu", "gpu": "gpu", "system": "sys", "sys": "sys"}
ATOMIC_RMW = {"add": "add", "exch": "xchg", "and_": "and", "or_": "or", "xor": "xor",
              "inc": "uinc_wrap", "dec": "udec_wrap"}


def _type_atomic(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    name, op = info.name, info.op
    nvals = 2 if op == "cas" else 1
    last = node.args[-1] if len(node.args) == 3 + nvals else None
    if last is not None and tr.const_str(last) is not None:
        spelled = last.id if isinstance(last, ast.Name) else f'"{tr.const_str(last)}"'
        raise tr.error(last, f"oxide.{name}() takes the scope as a keyword", f"write scope={spelled}")
    check_arg_count(tr, node, 2 + nvals, name)
    target = tr.expr(node.args[0])
    if not isinstance(target.ty, (ViewType, ArrayType)):
        raise tr.error(node.args[0], f"{name} needs a view or shared array, got {type_name(target.ty)}")
    if isinstance(target.ty, ArrayType) and target.ty.space == "local":
        raise tr.error(node.args[0], f"{name} needs a view or shared array; {ast.unparse(node.args[0])!r} is a local "
                       "array, which no other thread can see", "update a local array with plain arithmetic")
    if isinstance(target.ty, ArrayType) and target.ty.read_only:
        raise tr.error(node.args[0], f"{name} cannot modify {ast.unparse(node.args[0])!r}, a read-only "
                       f"{'constant memory array' if target.ty.space == 'constant' else 'view of a ' + target.ty.space + ' array'}",
                       "use ox.global_memory.array" if target.ty.space == "constant" else "declare the parameter MutSlice[T]")
    if isinstance(target.ty, ViewType) and not target.ty.writable:
        raise tr.error(node.args[0], f"{name} cannot modify the read-only Slice {ast.unparse(node.args[0])!r}",
                       "declare the parameter DisjointSlice[T] or MutSlice[T]")
    elem = target.ty.elem
    if elem.name not in ATOMIC_TYPES:
        raise tr.error(node.args[0], f"atomics need elements of {', '.join(ATOMIC_TYPES)}, got {elem.name}")
    if op in ("and_", "or_", "xor", "inc", "dec") and elem.kind == "float":
        raise tr.error(node, f"{name} needs integer elements, got {elem.name}")
    if elem.bits == 16 and op not in HALF_OPS:
        raise tr.error(node, f"{name} does not take {elem.name} elements",
                       f"{elem.name} elements take atomic {', '.join(HALF_OPS)}")
    if op in ("inc", "dec") and elem.name != "u32":
        raise tr.error(node, f"{name} works on u32 elements, got {elem.name}")
    scope = _atomic_scope(tr, node, name)
    if isinstance(target.ty, ArrayType) and target.ty.space == "cluster" and scope == "cta":
        raise tr.error(node, f"{name} at block scope on {ast.unparse(node.args[0])!r}, the shared memory of another "
                       "block of the cluster: that block's threads are outside this block's scope",
                       'leave scope= out (device scope) or write scope="system"')
    index = tr.index_expr(node.args[1], target.ty)
    operands = [tr.expr(a) for a in node.args[2:]]
    if elem.bits == 16 and isinstance(operands[-1].ty, VectorType) and operands[-1].ty.lanes == 2:
        return _type_pair_atomic(tr, info, node, target, index, operands[-1], scope)
    site = tr.check_site(node, target, index, f"{ast.unparse(node.args[0])}[{ast.unparse(node.args[1])}]")
    values = [_operand(tr, v, elem, a, name) for v, a in zip(operands, node.args[2:])]
    return ir.Intrinsic(name, [target, index, *values], elem, tr.loc(node), site, scope)


def _operand(tr: TypingContext, value: ir.Expr, elem: ScalarType, node: ast.expr, name: str) -> ir.Expr:
    """An atomic's operand in the element type. An integer operand of an integer element
    converts as a store into that element does, wrapping as C converts the argument of
    ``atomicAdd(unsigned*, int)`` (``__popc(mask)`` is an int, the counter unsigned); anything
    else converts only without loss."""
    st = as_scalar(value.ty)
    if st is not None and st.kind in ("int", "uint") and elem.kind in ("int", "uint") and not (
            isinstance(value, ir.Const) and value.weak):
        return tr.convert(tr.materialize(value), elem, node)
    return tr.convert_implicit(value, elem, node, f"the {name} operand")


def _type_pair_atomic(tr: TypingContext, info: IntrinsicInfo, node: ast.Call, target: ir.Expr, index: ir.Expr,
                      value: ir.Expr, scope: str) -> ir.Expr:
    """``ox.atomic.add(h, k, v)`` with ``v`` an ``f16x2`` or ``bf16x2``: CUDA's
    ``atomicAdd(__half2*, __half2)`` / ``atomicAdd(__nv_bfloat162*, __nv_bfloat162)`` on elements
    ``2k`` and ``2k + 1`` (a 4-byte-aligned pair of ``h``, whose elements are the lanes' type)."""
    assert isinstance(target.ty, (ViewType, ArrayType)) and isinstance(value.ty, VectorType)
    elem = target.ty.elem
    if info.op != "add" or value.ty.elem != elem:
        lanes = value.ty.elem.name
        hint = (f"a pair atomic is ox.atomic.add(h, k, v) with v an {lanes}x2 and h a view of {lanes} elements"
                if info.op == "add" else
                f"CUDA has only atomicAdd on pairs: write ox.atomic.{info.op}(h, 2 * k, v.x) and "
                f"ox.atomic.{info.op}(h, 2 * k + 1, v.y)")
        raise tr.error(node.args[-1], f"{info.name} of a {type_name(value.ty)} on {elem.name} elements is not "
                                      "supported", hint)
    loc = tr.loc(node)
    k = tr.convert(tr.materialize(index), SCALAR_TYPES["i64"], node.args[1])
    last = ir.BinOp(BinaryOp.ADD, ir.BinOp(BinaryOp.MUL, k, ir.Const(2, SCALAR_TYPES["i64"], loc), SCALAR_TYPES["i64"], loc),
                    ir.Const(1, SCALAR_TYPES["i64"], loc), SCALAR_TYPES["i64"], loc)
    site = tr.check_site(node, target, last, f"{ast.unparse(node.args[0])}[2 * {ast.unparse(node.args[1])} + 1]")
    return ir.Intrinsic(info.name, [target, last, value], value.ty, loc, site, scope)


def _atomic_scope(tr: TypingContext, node: ast.Call, name: str) -> str:
    """The PTX scope of ``scope=`` ("gpu" without one): a string literal or a module-level
    string constant."""
    spellings = ", ".join(f'"{s}"' for s in ATOMIC_SCOPES)
    scope = "gpu"
    for kw in node.keywords:
        if kw.arg != "scope":
            what = "does not take **kwargs" if kw.arg is None else f"got an unexpected keyword argument {kw.arg!r}"
            raise tr.error(kw, f"oxide.{name}() {what}",
                           'atomics take one keyword: scope="block", "device" (the default) or "system"')
        text = tr.const_str(kw.value)
        if text is None:
            raise tr.error(kw.value, f"the scope of oxide.{name}() must be a compile-time string, "
                           f"got {ast.unparse(kw.value)}", f"write one of {spellings}")
        if text not in ATOMIC_SCOPES:
            raise tr.error(kw.value, f"unknown atomic scope {text!r}", f"write one of {spellings}")
        scope = ATOMIC_SCOPES[text]
    return scope


def _lower_atomic(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """Device scope ("gpu", the default) is LLVM's ``atomicrmw``/``cmpxchg`` (a plain ``atom``,
    whose scope is .gpu). Block and system scope are inline PTX (``atom.cta``/``atom.sys``):
    LLVM's NVPTX backend drops ``syncscope`` from ``atomicrmw`` and libNVVM drops it from both."""
    b = fl.b
    op = info.op
    view = fl.view(e.args[0])
    idx = fl.index(e.args[1])
    elem = view.elem
    if e.check_site is not None:
        fl.bounds_check(idx, view.length, e.check_site)
    ptr = fl.element_address(view, idx)
    values = [fl.expr(a) for a in e.args[2:]]
    if isinstance(e.ty, VectorType):  # a pair of halves at elements 2k, 2k + 1 (args[1] is 2k + 1)
        first = fl.element_address(view, b.sub(idx, ll.Constant(idx.type, 1)))
        pair_ptr = b.bitcast(first, ll.PointerType(ll.IntType(32), first.type.addrspace))
        return b.bitcast(_pair_add(fl, pair_ptr, b.bitcast(values[0], ll.IntType(32)), elem, e.scope), values[0].type)
    if elem.bits == 16:
        return _half_atomic(fl, op, ptr, values, elem, e.scope)
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
        op, value = "add", fl.fneg(value) if elem.kind == "float" else b.neg(value)
    return _rmw(fl, op, ptr, value, elem, e.scope)


def _rmw(fl: LoweringContext, op: str, ptr: ll.Value, value: ll.Value, elem: ScalarType, scope: str) -> ll.Value:
    """``atom.<op>`` of an integer, or a float add."""
    if scope == "gpu":
        if op in ("min", "max"):
            rmw = ("u" if elem.kind == "uint" else "") + op
        else:
            rmw = "fadd" if elem.kind == "float" else ATOMIC_RMW[op]
        if rmw in NVVM_ATOMIC_INTRINSICS and fl.nvvm_dialect:
            return _nvvm_atomic(fl, rmw, ptr, value)
        return fl.b.atomic_rmw(rmw, ptr, value, _ordering(scope))
    if op in ("add", "inc", "dec"):
        ptx_type = f"{'f' if elem.kind == 'float' else 'u'}{elem.bits}"
    elif op in ("min", "max"):
        ptx_type = f"{'u' if elem.kind == 'uint' else 's'}{elem.bits}"
    else:
        ptx_type = f"b{elem.bits}"
    return _ptx_atom(fl, f"{op.rstrip('_')}.{ptx_type}", ptr, [value], scope)


# LLVM 7 (libNVVM) has no float nor wrapping atomicrmw: nvcc's NVVM IR calls these intrinsics
# for atomicAdd on floats, atomicInc and atomicDec (name: base, then type, pointer space, type)
NVVM_ATOMIC_INTRINSICS = {"fadd": "add", "uinc_wrap": "inc.32", "udec_wrap": "dec.32"}


def _nvvm_atomic(fl: LoweringContext, rmw: str, ptr: ll.Value, value: ll.Value) -> ll.Value:
    bits = {"float": "f32", "double": "f64", "i32": "i32"}[str(value.type)]
    typed = "" if bits == "i32" else f".{bits}"
    name = f"llvm.nvvm.atomic.load.{NVVM_ATOMIC_INTRINSICS[rmw]}{typed}.p{ptr.type.addrspace}{bits}"
    return fl.b.call(fl.intrinsic(name, value.type, [ptr.type, value.type]), [ptr, value])


def _cas(fl: LoweringContext, ptr: ll.Value, cmp: ll.Value, new: ll.Value, scope: str) -> ll.Value:
    """Compare-and-swap of integers at an integer pointer; the old value."""
    if scope != "gpu":
        return _ptx_atom(fl, f"cas.b{cmp.type.width}", ptr, [cmp, new], scope)
    return fl.b.extract_value(fl.b.cmpxchg(ptr, cmp, new, _ordering(scope), "monotonic"), 0)


def _float_min_max(fl: LoweringContext, op: str, ptr: ll.Value, value: ll.Value, elem: ScalarType, scope: str) -> ll.Value:
    """A compare-and-swap loop (PTX has no float atom.min/max)."""
    return _cas_loop(fl, op, ptr, elem, scope, lambda old: combine(fl, op, old, value, elem))


def _half_atomic(fl: LoweringContext, op: str, ptr: ll.Value, values: list[ll.Value], elem: ScalarType,
                 scope: str) -> ll.Value:
    """An f16/bf16 atomic: PTX's f16 add, or a 16-bit CAS loop computing in f32."""
    b = fl.b
    iptr = _int_ptr(fl, ptr, elem)
    if op == "cas":
        cmp, new = (_to_bits(fl, v) for v in values)
        return _from_bits(fl, _ptx_atom(fl, "cas.b16", iptr, [cmp, new], scope), elem)
    value = values[0]
    if op == "sub":
        op, value = "add", fl.fneg(value)
    if op == "add" and elem.name == "f16" and not fl.cpu:
        return _from_bits(fl, _ptx_atom(fl, "add.noftz.f16", iptr, [_to_bits(fl, value)], scope), elem)
    f32 = ll.FloatType()

    def update(old: ll.Value) -> ll.Value:
        if op == "exch":
            return value
        wide = combine(fl, op if op != "add" else "sum", b.fpext(old, f32), b.fpext(value, f32), SCALAR_TYPES["f32"])
        return b.fptrunc(wide, value.type)
    if op == "add":  # bf16: PTX's atom.add.noftz.bf16 from sm_90 on
        return _by_arch(fl, NATIVE_BF16_ADD_ARCH,
                        lambda: _from_bits(fl, _ptx_atom(fl, "add.noftz.bf16", iptr, [_to_bits(fl, value)], scope), elem),
                        lambda: _cas_loop(fl, op, ptr, elem, scope, update))
    return _cas_loop(fl, op, ptr, elem, scope, update)


NATIVE_BF16_ADD_ARCH = 90  # atom.add.noftz.bf16 / .bf16x2: sm_90 and PTX ISA 7.8


def _pair_add(fl: LoweringContext, pair_ptr: ll.Value, bits: ll.Value, elem: ScalarType, scope: str) -> ll.Value:
    """Adds the two halves packed in ``bits`` (an i32) to the pair at ``pair_ptr``; the old pair's
    bits. f16: ``atom.add.noftz.f16x2``; bf16: ``atom.add.noftz.bf16x2`` from sm_90 on, before
    that a 32-bit compare-and-swap loop adding each lane in f32 (as CUDA's own atomicAdd on
    ``__nv_bfloat162`` for sm_80), where the sum of two bf16 values rounds once to bf16."""
    if elem.name == "f16" and not fl.cpu:
        return _ptx_atom(fl, "add.noftz.f16x2", pair_ptr, [bits], scope)
    b = fl.b
    pair = ll.VectorType(fl.elem_type(elem), 2)
    f32 = ll.FloatType()

    def update(old: ll.Value) -> ll.Value:
        a, v = b.bitcast(old, pair), b.bitcast(bits, pair)
        out: ll.Value = ll.Constant(pair, ll.Undefined)
        for lane in range(2):
            k = ll.Constant(ll.IntType(32), lane)
            total = b.fadd(b.fpext(b.extract_element(a, k), f32), b.fpext(b.extract_element(v, k), f32))
            out = b.insert_element(out, b.fptrunc(total, pair.element), k)
        return b.bitcast(out, ll.IntType(32))
    return _by_arch(fl, NATIVE_BF16_ADD_ARCH, lambda: _ptx_atom(fl, "add.noftz.bf16x2", pair_ptr, [bits], scope),
                    lambda: _cas_loop(fl, "add", pair_ptr, SCALAR_TYPES["u32"], scope, update))


def _by_arch(fl: LoweringContext, arch: int, newer: Callable[[], ll.Value], older: Callable[[], ll.Value]) -> ll.Value:
    """``newer()`` where the code is built for sm_<arch> or later, ``older()`` before: a branch
    on ``__nvvm_reflect("__CUDA_ARCH") >= arch * 10``, which NVPTX's and libNVVM's reflect pass
    fold for the arch they compile for, removing the other side (also at -O0), so an instruction
    an older arch lacks never reaches its PTX."""
    if fl.cpu:  # the CPU device's form of each is the portable one
        return older()
    b = fl.b
    reflect = _reflect_function(fl)
    name = _arch_query(fl)
    at_least = b.icmp_signed(">=", b.call(reflect, [name]), ll.Constant(ll.IntType(32), arch * 10))
    new_block = fl.llfn.append_basic_block("arch.new")
    old_block = fl.llfn.append_basic_block("arch.old")
    done = fl.llfn.append_basic_block("arch.done")
    b.cbranch(at_least, new_block, old_block)
    b.position_at_end(new_block)
    from_new = newer()
    new_end = b.block
    b.branch(done)
    b.position_at_end(old_block)
    from_old = older()
    old_end = b.block
    b.branch(done)
    b.position_at_end(done)
    result = b.phi(from_new.type)
    result.add_incoming(from_new, new_end)
    result.add_incoming(from_old, old_end)
    return result


def _reflect_function(fl: LoweringContext) -> ll.Function:
    fn = fl.module.globals.get("__nvvm_reflect")
    if fn is None:
        fn = ll.Function(fl.module, ll.FunctionType(ll.IntType(32), [ll.PointerType(ll.IntType(8))]), "__nvvm_reflect")
    assert isinstance(fn, ll.Function)
    return fn


def _arch_query(fl: LoweringContext) -> ll.Value:
    """``"__CUDA_ARCH"`` as the constant generic ``i8*`` the reflect pass reads (a constant
    expression: the pass does not look through instructions)."""
    name = "__oxide_reflect.cuda_arch"
    gv = fl.module.globals.get(name)
    data = bytearray(b"__CUDA_ARCH\0")
    arr = ll.ArrayType(ll.IntType(8), len(data))
    if gv is None:
        gv = ll.GlobalVariable(fl.module, arr, name, addrspace=4)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ll.Constant(arr, data)
    first = gv.gep([ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), 0)])
    return ll.FormattedConstant(ll.PointerType(ll.IntType(8)),
                                f"addrspacecast ({first.type} {first.get_reference()} to i8*)")


def _cas_loop(fl: LoweringContext, op: str, ptr: ll.Value, elem: ScalarType, scope: str,
              update: Callable[[ll.Value], ll.Value]) -> ll.Value:
    """Replaces the element by ``update(old)`` with a compare-and-swap loop; stops without a
    write where the update leaves the element's bits as they are. The old value."""
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
    new = _to_bits(fl, update(_from_bits(fl, old, elem)))
    b.cbranch(b.icmp_unsigned("==", new, old), done, swap)
    b.position_at_end(swap)
    seen = _ptx_atom(fl, f"cas.b{elem.bits}", iptr, [old, new], scope) if elem.bits == 16 else _cas(fl, iptr, old, new, scope)
    old.add_incoming(seen, swap)
    b.cbranch(b.icmp_unsigned("==", seen, old), done, retry)
    b.position_at_end(done)
    return _from_bits(fl, old, elem)


def _ordering(scope: str) -> str:
    """The memory ordering of LLVM's atomics (relaxed), with the scope's ``syncscope``; llvmlite
    prints the ordering where the syncscope goes."""
    return {"cta": 'syncscope("block") ', "gpu": 'syncscope("device") ', "sys": ""}[scope] + "monotonic"


def _ptx_atom(fl: LoweringContext, op_type: str, ptr: ll.Value, values: list[ll.Value], scope: str) -> ll.Value:
    """``atom.<scope>.<space>.<op>.<type> $0, [$1], $2 (, $3)`` as inline PTX; on the CPU device
    LLVM's ``atomicrmw``/``cmpxchg`` (every scope is the host's: the device's threads are fibers
    of one host thread)."""
    if fl.cpu:
        op, _, ptx_type = op_type.partition(".")
        if op == "cas":
            return fl.b.extract_value(fl.b.cmpxchg(ptr, values[0], values[1], "monotonic", "monotonic"), 0)
        if op in ("min", "max"):
            rmw = ("u" if ptx_type.startswith("u") else "") + op
        else:
            rmw = "fadd" if ptx_type.startswith("f") and op == "add" else ATOMIC_RMW.get(op, ATOMIC_RMW.get(f"{op}_", op))
        return fl.b.atomic_rmw(rmw, ptr, values[0], "monotonic")
    space = {0: "", 1: ".global", 3: ".shared"}[ptr.type.addrspace]  # 0: another block's (ox.cluster.map_shared)
    operands = ", ".join(f"${i + 2}" for i in range(len(values)))
    reg = {"float": "f", "double": "d", "i16": "h", "i32": "r", "i64": "l"}[str(values[0].type)]
    constraints = ",".join([f"={reg}", "l"] + [reg] * len(values) + ["~{memory}"])
    ftype = ll.FunctionType(values[0].type, [ptr.type] + [v.type for v in values])
    return fl.b.asm(ftype, f"atom.{scope}{space}.{op_type} $0, [$1], {operands};", constraints, [ptr, *values], True)


def _int_ptr(fl: LoweringContext, ptr: ll.Value, elem: ScalarType) -> ll.Value:
    """``ptr`` as a pointer to same-size integers (typed pointers, for libNVVM)."""
    if elem.kind != "float":
        return ptr
    return fl.b.bitcast(ptr, ll.PointerType(ll.IntType(elem.bits), ptr.type.addrspace))


def _to_bits(fl: LoweringContext, value: ll.Value) -> ll.Value:
    width = {"half": 16, "bfloat": 16, "float": 32, "double": 64}.get(str(value.type))
    return fl.b.bitcast(value, ll.IntType(width)) if width else value


def _from_bits(fl: LoweringContext, value: ll.Value, elem: ScalarType) -> ll.Value:
    return fl.b.bitcast(value, fl.elem_type(elem)) if elem.kind == "float" else value


LOAD_ORDERS = ("relaxed", "acquire")
STORE_ORDERS = ("relaxed", "release")
ORDERS = ("relaxed", "acquire", "release")
ORDERED_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")  # what ld/st.relaxed take here (b32, b64)


def _type_ordered(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """``atomic.load(x, i, order=, scope=)`` / ``atomic.store(x, i, v, order=, scope=)``."""
    name, is_store = info.name, info.op == "store"
    orders = STORE_ORDERS if is_store else LOAD_ORDERS
    check_arg_count(tr, node, 3 if is_store else 2, name)
    target = tr.expr(node.args[0])
    text = ast.unparse(node.args[0])
    if not isinstance(target.ty, (ViewType, ArrayType)) or isinstance(target.ty, ViewType) and target.ty.is_tensor:
        raise tr.error(node.args[0], f"{name} needs a 1-D view or a shared or global array, got {type_name(target.ty)}")
    if isinstance(target.ty, ArrayType) and target.ty.space == "local":
        raise tr.error(node.args[0], f"{name} needs a view or shared array; {text!r} is a local array, which no "
                       "other thread can see", "read and write a local array plainly")
    if is_store and isinstance(target.ty, ArrayType) and target.ty.read_only:
        raise tr.error(node.args[0], f"{name} cannot modify {text!r}, a read-only "
                       f"{'constant memory array' if target.ty.space == 'constant' else 'view of a ' + target.ty.space + ' array'}",
                       "use ox.global_memory.array" if target.ty.space == "constant" else "declare the parameter MutSlice[T]")
    if is_store and isinstance(target.ty, ViewType) and not target.ty.writable:
        raise tr.error(node.args[0], f"{name} cannot modify the read-only Slice {text!r}",
                       "declare the parameter MutSlice[T] (or DisjointSlice[T])")
    elem = target.ty.elem
    if elem.name not in ORDERED_TYPES:
        raise tr.error(node.args[0], f"{name} needs elements of {', '.join(ORDERED_TYPES)}, got {elem.name}",
                       "pack a flag and a 32-bit value into one u64 (or i64) word to access both at once")
    order = None
    scope = "gpu"
    scopes = ", ".join(f'"{s}"' for s in ATOMIC_SCOPES)
    spelled = " or ".join(f'order="{o}"' for o in orders)
    for kw in node.keywords:
        if kw.arg not in ("order", "scope"):
            what = "does not take **kwargs" if kw.arg is None else f"got an unexpected keyword argument {kw.arg!r}"
            raise tr.error(kw, f"oxide.{name}() {what}", f"it takes order= ({', '.join(orders)}) and scope=")
        value = tr.const_str(kw.value)
        if value is None:
            raise tr.error(kw.value, f"the {kw.arg} of oxide.{name}() must be a compile-time string, "
                           f"got {ast.unparse(kw.value)}", f"write {spelled}" if kw.arg == "order" else f"write one of {scopes}")
        if kw.arg == "scope":
            if value not in ATOMIC_SCOPES:
                raise tr.error(kw.value, f"unknown atomic scope {value!r}", f"write one of {scopes}")
            scope = ATOMIC_SCOPES[value]
        elif value not in orders:
            what = ("a load cannot release" if value == "release" else "a store cannot acquire" if value == "acquire"
                    else f"unknown memory order {value!r}")
            raise tr.error(kw.value, f"oxide.{name}(): {what}", f"write {spelled}"
                           + ("; ox.fence.device() is a sequentially consistent fence" if value not in ORDERS else ""))
        else:
            order = value
    if order is None:
        raise tr.error(node, f"oxide.{name}() needs its memory order: {spelled}",
                       "relaxed orders no other access; " + (
                           "acquire: this thread's later accesses stay after it" if not is_store else
                           "release: this thread's earlier accesses stay before it"))
    if isinstance(target.ty, ArrayType) and target.ty.space == "cluster" and scope == "cta":
        raise tr.error(node, f"{name} at block scope on {text!r}, the shared memory of another block of the cluster",
                       'leave scope= out (device scope) or write scope="system"')
    index = tr.index_expr(node.args[1], target.ty)
    site = tr.check_site(node, target, index, f"{text}[{ast.unparse(node.args[1])}]")
    if is_store:
        value_expr = tr.convert_implicit(tr.expr(node.args[2]), elem, node.args[2], f"the {name} value")
        return ir.Intrinsic(name, [target, index, value_expr], VoidType(), tr.loc(node), site, scope, options=(order,))
    return ir.Intrinsic(name, [target, index], elem, tr.loc(node), site, scope, options=(order,))


def _ordered_address(fl: LoweringContext, e: ir.Intrinsic) -> tuple[ll.Value, ScalarType]:
    ptr, view = checked_element(fl, e)
    return ptr, view.elem


def _lower_ordered(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """``ld.<order>.<scope>.<space>.b<bits>`` / ``st.<order>.<scope>.<space>.b<bits>`` as
    inline PTX with a memory clobber (so neither backend moves other accesses across it, nor
    merges or hoists it out of a polling loop)."""
    ptr, elem = _ordered_address(fl, e)
    order = e.options[0]
    space = {0: "", 1: ".global", 3: ".shared"}[ptr.type.addrspace]
    bits = elem.bits
    ity = ll.IntType(bits)
    iptr = fl.b.bitcast(ptr, ll.PointerType(ity, ptr.type.addrspace))
    reg = "l" if bits == 64 else "r"
    if info.op == "store":
        value = _to_bits(fl, fl.expr(e.args[2]))
        asm_call(fl, f"st.{order}.{e.scope}{space}.b{bits} [$0], $1;", f"l,{reg},~{{memory}}", ll.VoidType(),
                 [iptr, value])
        return ll.Constant(ll.IntType(32), 0)
    raw = asm_call(fl, f"ld.{order}.{e.scope}{space}.b{bits} $0, [$1];", f"={reg},l,~{{memory}}", ity, [iptr])
    return _from_bits(fl, raw, elem)


def _cpu_ordered(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: LLVM's ``load atomic`` / ``store atomic`` of that order (relaxed is
    ``monotonic``); every scope is the host's. A release store has a fence before it and an
    acquire load one after it: the same order on the host, and the fence-then-atomic pairs that
    racecheck's release/acquire model orders blocks by (``_global_races.h``)."""
    ptr, elem = _ordered_address(fl, e)
    order = e.options[0]
    ordering = {"relaxed": "monotonic", "acquire": "acquire", "release": "release"}[order]
    iptr = _int_ptr(fl, ptr, elem)
    if info.op == "store":
        value = _to_bits(fl, fl.expr(e.args[2]))
        if order == "release":
            fl.b.fence("seq_cst")
        fl.b.store_atomic(value, iptr, ordering, elem.bits // 8)
        return ll.Constant(ll.IntType(32), 0)
    loaded = fl.b.load_atomic(iptr, ordering, elem.bits // 8)
    if order == "acquire":
        fl.b.fence("seq_cst")
    return _from_bits(fl, loaded, elem)


# an atomic returns the value it replaced: which thread saw which is a race
ENTRIES = [IntrinsicInfo(f"atomic.{op}", _type_atomic, _lower_atomic, thread_dependent=True, keywords=("scope",),
                         roles=frozenset({Role.LANE_VARYING}))
           for op in ("cas", *ATOMIC_OPS)] + [
    # an ordered load sees what other threads (other blocks) write while the kernel runs
    IntrinsicInfo("atomic.load", _type_ordered, _lower_ordered, thread_dependent=True, keywords=("order", "scope"),
                  roles=frozenset({Role.LANE_VARYING}), cpu_lowering=_cpu_ordered),
    # (no value: thread-dependent as every atomic, for the registry's one rule)
    IntrinsicInfo("atomic.store", _type_ordered, _lower_ordered, thread_dependent=True, keywords=("order", "scope"),
                  cpu_lowering=_cpu_ordered),
]
