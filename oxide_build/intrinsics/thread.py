"""Thread intrinsics: ``thread.index_1d()``, ``thread.index_2d()``, ``block.sync()``, and the
special registers ``thread.idx``, ``block.idx``, ``block.dim``, ``grid.dim`` (``.x/.y/.z``).

These are typed into IR nodes of their own, not ``ir.Intrinsic``: a thread index is an
``ir.ThreadIndex1D`` (its type carries the disjointness the views check), ``block.sync()`` is
the call of ``llvm.nvvm.barrier0`` that the barrier-divergence pass looks for, and a special
register is an ``ir.SpecialReg`` (an attribute, not a call: the frontend reads
``SPECIAL_REGISTERS``). lower/llvm.py lowers those nodes, so these entries' lowering is never
reached.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import THREAD_INDEX, VOID, ThreadIndexType, TupleType
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from ..frontend.translate import FunctionTranslator
    from ..lower.llvm import FunctionLowering

__all__ = ["ENTRIES", "SPECIAL_REGISTERS", "BARRIER"]

# (namespace, attribute) -> the PTX special register it reads, with ``.x/.y/.z`` appended
SPECIAL_REGISTERS = {
    ("thread", "idx"): "tid", ("block", "idx"): "ctaid", ("block", "dim"): "ntid", ("grid", "dim"): "nctaid",
}
BARRIER = "llvm.nvvm.barrier0"  # what block.sync() is in the IR


def _no_arguments(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> None:
    if node.args:
        raise tr.error(node, f"{info.name}() takes no arguments")


def _type_index_1d(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    return ir.ThreadIndex1D(THREAD_INDEX, tr.loc(node))


def _type_index_2d(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    loc = tr.loc(node)
    row, col = ThreadIndexType("row"), ThreadIndexType("col")
    return ir.MakeTuple([ir.ThreadIndex1D(row, loc), ir.ThreadIndex1D(col, loc)], TupleType((row, col)), loc)


def _type_sync(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    if tr.divergent_depth:
        raise tr.error(node, "block.sync() under a condition that differs between threads "
                       "can deadlock the block",
                       "move block.sync() out of the branch or loop so every thread reaches it")
    return ir.Call(BARRIER, [], VOID, tr.loc(node))


def _lowered_as_ir_node(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is typed into an IR node of its own, which lower/llvm.py lowers")


ENTRIES = [
    IntrinsicInfo("thread.index_1d", _type_index_1d, _lowered_as_ir_node, thread_dependent=True),
    IntrinsicInfo("thread.index_2d", _type_index_2d, _lowered_as_ir_node, thread_dependent=True),
    IntrinsicInfo("block.sync", _type_sync, _lowered_as_ir_node, convergent=True),
]
