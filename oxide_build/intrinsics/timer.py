"""Timers (``timer.*``): the SM's cycle counters ``clock()`` (``%clock``, u32) and
``clock64()`` (``%clock64``, i64, CUDA's ``clock64()``), the global nanosecond timer
``globaltimer()`` (``%globaltimer``, u64) and ``nanosleep(ns)`` (PTX ``nanosleep.u32``,
CUDA's ``__nanosleep``).

Inline PTX with side effects, on both backends: a read must happen where it is written
(never merged with another read or moved across the code it times), and libNVVM knows no
``nanosleep`` intrinsic. On the CPU device the clocks have no form, and ``nanosleep`` lets the
launch's other threads run before the thread goes on (PTX allows a sleep of any length up to
twice ``ns``): a thread spinning on a flag another thread sets, sleeping between reads, sees
it set."""
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
    fl.expr(e.args[0])
    return fl.b.call(fl.cpu_runtime("oxide_cpu_yield"), [])


# each thread reads its own clock at its own time: a condition on it differs between threads
ENTRIES = [
    *(IntrinsicInfo(f"timer.{op}", _type_read, _lower_read, thread_dependent=True,
                    roles=frozenset({Role.LANE_VARYING})) for op in READS),
    IntrinsicInfo("timer.nanosleep", _type_nanosleep, _lower_nanosleep, roles=frozenset({Role.YIELDS}),
                  cpu_lowering=_cpu_nanosleep),
]
