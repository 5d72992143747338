"""Memory intrinsics: ``shared.array``, ``shared.dynamic``, ``local.array`` (lowered by the
function's lowering, which allocates them) and the fences."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..ir import nodes as ir
from ..ir.types import ArrayType, VoidType
from .arguments import check_arg_count, const_int
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from ..frontend.translate import FunctionTranslator
    from ..lower.llvm import FunctionLowering

__all__ = ["ENTRIES"]

FENCES = {"block": "llvm.nvvm.membar.cta", "device": "llvm.nvvm.membar.gl", "system": "llvm.nvvm.membar.sys"}


def _type_array(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    shape_node = node.args[0]
    dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
    shape: list[int] = []
    for d in dims:
        value = const_int(tr, d)
        if value is None or value <= 0:
            raise tr.error(d, f"array dimensions must be positive compile-time integers, got {ast.unparse(d)}",
                           "use a literal or a module-level constant; use shared.dynamic for launch-time sizes")
        shape.append(value)
    elem = tr.element_type(node.args[1])
    return ir.Intrinsic(info.name, [], ArrayType(info.group, elem, tuple(shape)), tr.loc(node))


def _type_dynamic(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    elem = tr.element_type(node.args[0])
    return ir.Intrinsic(info.name, [], ArrayType("shared", elem, None), tr.loc(node))


def _lower_allocation(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    # an array is a statement's value (``buf = shared.array(...)``), which lower/llvm.py allocates
    raise AssertionError(f"{info.name} is allocated by its assignment, not lowered as a value")


def _type_fence(tr: FunctionTranslator, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_fence(fl: FunctionLowering, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return fl.b.call(fl.parent.intrinsic(FENCES[info.op], ll.VoidType(), []), [])


ENTRIES = [
    IntrinsicInfo("shared.array", _type_array, _lower_allocation),
    IntrinsicInfo("shared.dynamic", _type_dynamic, _lower_allocation),
    IntrinsicInfo("local.array", _type_array, _lower_allocation),
    *(IntrinsicInfo(f"fence.{scope}", _type_fence, _lower_fence) for scope in FENCES),
]
