"""Thread block clusters (sm_90, ``cluster.*``): the blocks a launch with ``cluster=`` groups
together (``k.launch(..., cluster=(2, 1, 1))``, docs/runtime.md).

- ``rank()``: this block's rank in its cluster, 0 to ``num_blocks() - 1`` (``%cluster_ctarank``);
- ``num_blocks()``: the blocks in the cluster (``%cluster_nctarank``);
- ``sync()``: every thread of every block of the cluster arrives and waits
  (``barrier.cluster.arrive`` + ``barrier.cluster.wait``), with release/acquire ordering of
  memory, as ``cooperative_groups::this_cluster().sync()``.

Both values are the same for every thread of a block (a condition on them is not divergent).
Lowering: ``llvm.nvvm.read.ptx.sreg.cluster.*`` and ``llvm.nvvm.barrier.cluster.*`` for LLVM's
NVPTX; inline PTX where libNVVM compiles the module.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..ir import nodes as ir
from ..ir.types import I32, VoidType
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from ..frontend.translate import FunctionTranslator
    from ..lower.llvm import FunctionLowering

__all__ = ["ENTRIES"]

LL_I32 = ll.IntType(32)
MAX_CLUSTER_BLOCKS = 16  # sm_90's non-portable maximum
MIN_ARCH = "sm_90"  # IntrinsicInfo.min_arch of every entry here
# op -> (the LLVM intrinsic's register name, the PTX register)
REGISTERS = {"rank": ("ctarank", "%cluster_ctarank"), "num_blocks": ("nctarank", "%cluster_nctarank")}


def _type_register(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], I32, tr.loc(node))


def _lower_register(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    name, register = REGISTERS[info.op]
    if fl.parent.libnvvm:
        return fl.b.asm(ll.FunctionType(LL_I32, []), f"mov.u32 $0, {register};", "=r", [], False)
    fn = fl.parent.intrinsic(f"llvm.nvvm.read.ptx.sreg.cluster.{name}", LL_I32, [])
    return fl.b.call(fn, [])


def _type_sync(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_sync(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    if fl.parent.libnvvm:
        return asm_call(fl, "barrier.cluster.arrive; barrier.cluster.wait;", "~{memory}",
                        ll.VoidType(), [])
    for step in ("arrive", "wait"):
        fn = fl.parent.intrinsic(f"llvm.nvvm.barrier.cluster.{step}", ll.VoidType(), [])
        fn.attributes.add("convergent")
        fl.b.call(fn, [])
    return ll.Constant(LL_I32, 0)


ENTRIES = [
    IntrinsicInfo("cluster.rank", _type_register, _lower_register, value_range=(0, MAX_CLUSTER_BLOCKS - 1),
                  min_arch=MIN_ARCH),
    IntrinsicInfo("cluster.num_blocks", _type_register, _lower_register, value_range=(1, MAX_CLUSTER_BLOCKS),
                  min_arch=MIN_ARCH),
    IntrinsicInfo("cluster.sync", _type_sync, _lower_sync, convergent=True, min_arch=MIN_ARCH),
]
