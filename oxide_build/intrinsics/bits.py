"""Bit intrinsics (``bits.*``) on 32- and 64-bit integers: ``popc`` (the number of set bits),
``clz`` (leading zero bits; 32 or 64 for zero) and ``brev`` (the bits reversed), like CUDA's
``__popc``/``__clz``/``__brev`` and their ``ll`` forms. They lower to LLVM's ``ctpop``,
``ctlz`` and ``bitreverse``."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..ir import nodes as ir
from ..ir.types import I32, as_scalar
from .arguments import check_arg_count, scalar_arg
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from ..frontend.translate import FunctionTranslator
    from ..lower.llvm import FunctionLowering

__all__ = ["ENTRIES"]

LLVM_NAMES = {"popc": "llvm.ctpop", "clz": "llvm.ctlz", "brev": "llvm.bitreverse"}


def _type_bits(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    value = scalar_arg(tr, node.args[0], info.name)
    st = as_scalar(value.ty)
    assert st is not None
    if st.kind not in ("int", "uint") or st.bits not in (32, 64):
        raise tr.error(node.args[0], f"{info.name} needs a 32- or 64-bit integer, got {st.name}",
                       "convert it first, e.g. u32(x)")
    # a count is an i32 whatever the operand's width (CUDA's __popcll returns int too)
    return ir.Intrinsic(info.name, [value], st if info.op == "brev" else I32, tr.loc(node))


def _lower_bits(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    t = value.type
    name = f"{LLVM_NAMES[info.op]}.i{t.width}"
    if info.op == "clz":  # is_zero_poison false: clz(0) is the width
        result = fl.b.call(fl.parent.intrinsic(name, t, [t, ll.IntType(1)]), [value, ll.Constant(ll.IntType(1), 0)])
    else:
        result = fl.b.call(fl.parent.intrinsic(name, t, [t]), [value])
    if info.op != "brev" and t.width == 64:
        return fl.b.trunc(result, ll.IntType(32))
    return result


ENTRIES = [IntrinsicInfo(f"bits.{op}", _type_bits, _lower_bits) for op in LLVM_NAMES]
