"""Timers (``timer.*``): the SM's cycle counters ``clock()`` (``%clock``, u32) and
``clock64()`` (``%clock64``, i64, CUDA's ``clock64()``), the global nanosecond timer
``globaltimer()`` (``%globaltimer``, u64) and ``nanosleep(ns)`` (PTX ``nanosleep.u32``,
CUDA's ``__nanosleep``).

Inline PTX with side effects, on both backends: a read must happen where it is written
(never merged with another read or moved across the code it times), and libNVVM knows no
``nanosleep`` intrinsic. On the CPU device the cycle counters are the host's
(``llvm.readcyclecounter``: the time-stamp counter on x86-64), the global timer the host's
``clock_gettime(CLOCK_REALTIME)`` in nanoseconds, and ``nanosleep`` lets the launch's other
threads run before the thread goes on (PTX allows a sleep of any length up to twice ``ns``): a
thread spinning on a flag another thread sets, sleeping between reads, sees it set."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import SCALAR_TYPES

from ..ir import nodes as ir
from ..ir.types import I64, VoidType, as_scalar
from .arguments import check_arg_count
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]

U32, U64 = SCALAR_TYPES["u32"], SCALAR_TYPES["u64"]
# op -> (result type, PTX special register)
READS = {"clock": (U32, "%clock"), "clock64": (I64, "%clock64"), "globaltimer": (U64, "%globaltimer")}


def _type_read(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], READS[info.op][0], tr.loc(node))


def _lower_read(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ty, register = READS[info.op]
    bits = ty.bits
    t = ll.IntType(bits)
    return fl.b.asm(ll.FunctionType(t, []), f"mov.u{bits} $0, {register};", "=r" if bits == 32 else "=l", [], True)


def _cpu_read(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    i64 = ll.IntType(64)
    if info.op == "globaltimer":  # struct timespec {i64 tv_sec; i64 tv_nsec} of CLOCK_REALTIME (0)
        spec = ll.ArrayType(i64, 2)
        with b.goto_entry_block():
            slot = b.alloca(spec, name="timespec")
        fn = fl.module.globals.get("clock_gettime")
        if fn is None:
            fn = ll.Function(fl.module, ll.FunctionType(ll.IntType(32), [ll.IntType(32), ll.PointerType(spec)]),
                             "clock_gettime")
        b.call(fn, [ll.Constant(ll.IntType(32), 0), slot])
        seconds = b.load(b.gep(slot, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), 0)]), typ=i64)
        nanos = b.load(b.gep(slot, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), 1)]), typ=i64)
        return b.add(b.mul(seconds, ll.Constant(i64, 1_000_000_000)), nanos)
    cycles = b.call(fl.intrinsic("llvm.readcyclecounter", i64, []), [])
    return b.trunc(cycles, ll.IntType(32)) if info.op == "clock" else cycles


def _type_nanosleep(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    value = tr.expr(node.args[0])
    if isinstance(value, ir.Const) and value.weak:
        if not isinstance(value.value, int) or isinstance(value.value, bool) or not 0 <= value.value < 2**32:
            raise tr.error(node.args[0], f"{info.name} takes a u32 number of nanoseconds, got {ast.unparse(node.args[0])}")
        return ir.Intrinsic(info.name, [ir.Const(value.value, U32, tr.loc(node))], VoidType(), tr.loc(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint") or st.bits > 32:
        got = st.name if st is not None else "a view"
        raise tr.error(node.args[0], f"{info.name} takes a u32 number of nanoseconds, got {got}",
                       "convert it, e.g. u32(ns)")
    return ir.Intrinsic(info.name, [value if st == U32 else ir.Cast(value, U32, tr.loc(node))], VoidType(), tr.loc(node))


def _lower_nanosleep(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ns = fl.expr(e.args[0])
    return fl.b.asm(ll.FunctionType(ll.VoidType(), [ll.IntType(32)]), "nanosleep.u32 $0;", "r", [ns], True)


def _cpu_nanosleep(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ns = fl.expr(e.args[0])  # a sleep of 0 ns is none (and the kernel reads ns, as the GPU code does)
    with fl.b.if_then(fl.b.icmp_unsigned("!=", ns, ll.Constant(ll.IntType(32), 0))):
        fl.b.call(fl.cpu_runtime("oxide_cpu_yield"), [])
    return ll.Constant(ll.IntType(32), 0)


# each thread reads its own clock at its own time: a condition on it differs between threads
ENTRIES = [
    *(IntrinsicInfo(f"timer.{op}", _type_read, _lower_read, thread_dependent=True,
                    roles=frozenset({Role.LANE_VARYING}), cpu_lowering=_cpu_read) for op in READS),
    IntrinsicInfo("timer.nanosleep", _type_nanosleep, _lower_nanosleep, roles=frozenset({Role.YIELDS}),
                  cpu_lowering=_cpu_nanosleep),
]
