"""Bounds checks in the translator: every view, tensor-axis and array index gets its check (an
error site on the access, or a ``checked_index`` per axis) unless it is out of range or in
range by its constants alone; the bounds-elimination pass (passes/bounds_elimination.py)
removes those the facts prove. Also the candidates the pass decides on: the entry check of a
range loop that ``v + step`` cannot wrap, and the error sites of the grid limits a kernel's
proofs may assume.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp
from ..ir.types import BOOL, I64, ArrayType, int_limits
from ..scan import ModuleSource
from .scope import node_loc

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["BoundsChecks"]


class BoundsChecks:
    """Error sites of the bounds checks of one function instance, for the bounds-elimination
    pass to keep or drop, and the sites of the grid limits its proofs may assume."""

    def __init__(self, builder: ProgramBuilder, module: ModuleSource, fdef: ast.FunctionDef, kernel_name: str,
                 enabled: bool, is_kernel: bool) -> None:
        self.builder = builder
        self.module = module
        self.fdef = fdef
        self.kernel_name = kernel_name
        self.enabled = enabled  # @kernel(bounds_check=...)
        self.is_kernel = is_kernel
        # error sites reserved for the grid limits bounds proofs may assume (kernels), by axis
        self.grid_sites: dict[str, int] = {}

    def site(self, kind: str, node: ast.AST, what: str) -> int:
        """A new error site of this kernel at ``node``: ``"bounds"`` or ``"assert"``."""
        return self.builder.add_error_site(kind, self.kernel_name, self.module, node, what)

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        """The error site of the access ``view[index]`` (None: no check, its constants say it is
        in range, or the bounds are not checked)."""
        if not self.enabled:
            return None
        if isinstance(index, ir.Intrinsic) and index.name == "flat_index":
            return None  # an array indexed per axis: each axis was proven or checked
        if isinstance(index, ir.Const) and isinstance(index.value, int) and index.value < 0:
            raise self.module.error(node, "negative indices are not supported",
                             "views have no wrap-around indexing; index from 0")
        if isinstance(view.ty, ArrayType):
            size = view.ty.size
            if view.ty.dynamic:
                return None  # dynamic shared memory: its size is known only at launch
            if size is not None and isinstance(index, ir.Const) and isinstance(index.value, int):
                if index.value >= size:
                    raise self.module.error(node, f"index {index.value} is out of bounds for an array of {size} elements",
                                     f"valid indices are 0 to {size - 1}")
                return None
        return self.site("bounds", node, what)

    def range_guard(self, stop: ir.Expr, step: ir.Expr, ty: ScalarType, node: ast.For) -> ir.Check:
        """``stop + step <= max + 1``, computed in i64 (both are values of 32 bits or fewer)."""
        loc = node_loc(node.iter)
        limits = int_limits(ty)
        limit = ir.Const(limits[1] + 1, I64, loc)
        total = ir.BinOp(BinaryOp.ADD, ir.Cast(stop, I64, loc), ir.Cast(step, I64, loc), I64, loc)
        site = self.site(
            "assert", node.iter,
            f"{ast.unparse(node.iter)}: stop + step must not exceed {limits[1] + 1} ({ty.name} loop variable)")
        return ir.Check(ir.Compare(CompareOp.LE, total, limit, I64, BOOL, loc), site, loc)

    def reserve_grid_sites(self) -> None:
        """Error sites for the grid limits that the proofs of a kernel's i32 index arithmetic may
        assume (passes/bounds_prover.py); the bounds-elimination pass fills in those it records as
        launch preconditions and drops the others."""
        if self.is_kernel and self.enabled:
            for axis in ir.GRID_AXES:
                self.grid_sites[axis] = self.site("assert", self.fdef, f"grid.{axis}: reserved")

