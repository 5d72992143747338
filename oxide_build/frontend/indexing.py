"""Reading and writing view and array elements: 1-D indices, per-axis indices of arrays and
tensors (flattened, each axis checked or proven), ``shape`` / ``strides``, and stores, with
views.py's rule for what each view kind lets a kernel write.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import I64, ArrayType, ThreadIndexType, Type, VectorType, ViewType, is_int, type_name
from .views import refuse_array_write, refuse_slice_write, refuse_tensor_write
from . import vectors, view_values

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["Indexing"]


class Indexing:
    """Element reads and writes of views and arrays, for the translator ``tr`` (whose visitor
    translates the views and indices)."""

    def __init__(self, tr: FunctionTranslator) -> None:
        self.tr = tr

    def subscript(self, node: ast.Subscript) -> ir.Expr:
        tr = self.tr
        if (isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "strides")
                and isinstance(node.value.value, ast.Name)
                and isinstance(tr.scope.locals.get(node.value.value.id), ViewType)):
            tv = tr.expr(node.value.value)
            assert isinstance(tv.ty, ViewType)
            axis = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < tv.ty.ndim:
                raise tr.error(node.slice, f"{node.value.attr} takes a constant axis from 0 to {tv.ty.ndim - 1}")
            which = "shape" if node.value.attr == "shape" else "stride"
            if not tv.ty.is_tensor:
                if which == "shape":
                    return ir.ViewLen(tv, I64, tr.loc(node))
                return ir.Const(1, I64, tr.loc(node))
            return ir.ViewDim(tv, axis, which, I64, tr.loc(node))
        view = tr.expr(node.value)
        if isinstance(view.ty, VectorType):  # v[k]: lane k of a vector (bf16x8, f32x8, ... have more than xyzw)
            k = vectors.indexed_lane(tr, view, node.slice, node)
            return ir.VectorGet(view, k, view.ty.elem, tr.loc(node))
        if not isinstance(view.ty, (ViewType, ArrayType)):
            raise tr.error(node.value, f"{ast.unparse(node.value)!r} is {type_name(view.ty)}, not a view",
                             "only Slice/DisjointSlice/MutSlice parameters and arrays can be indexed")
        if isinstance(view.ty, ArrayType) and view.ty.barrier:
            raise _barrier_is_not_a_number(tr, node)
        if isinstance(node.slice, ast.Slice):
            return view_values.slice_view(tr, view, node)  # type: ignore[arg-type]
        if isinstance(view.ty, ViewType) and view.ty.is_tensor:
            return ir.ViewLoad(view, self.tensor_index(node.slice, view), view.ty.elem, tr.loc(node), None)
        index = self.index_expr(node.slice, view.ty)
        site = tr.checks.check_site(node, view, index, f"{ast.unparse(node.value)}[{_index_text(node.slice)}]")
        return ir.ViewLoad(view, index, view.ty.elem, tr.loc(node), site)

    def tensor_index(self, node: ast.expr, view: ir.Expr) -> ir.Expr:
        """``t[i, j]`` → the element offset Σ index·stride, each axis checked against its size."""
        tr = self.tr
        vt = view.ty
        assert isinstance(vt, ViewType)
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(elts) != vt.ndim:
            raise tr.error(node, f"this tensor has {vt.ndim} dimension(s): index it with {vt.ndim} value(s)",
                             f"write t[{', '.join('i' + str(k) for k in range(vt.ndim))}]")
        loc = tr.loc(node)
        offset: ir.Expr | None = None
        for axis, elt in enumerate(elts):
            part = self.index_expr(elt)
            part64 = ir.Cast(part, I64, loc) if isinstance(part.ty, ThreadIndexType) else tr.semantics.convert(tr.semantics.materialize(part), I64, elt)
            if tr.checks.enabled:  # the bounds-elimination pass removes it where it is proven
                view_text = view.name if isinstance(view, ir.Var) else "tensor"
                site = tr.checks.site("bounds", elt,
                                                   f"{view_text}[{_index_text(node)}] axis {axis}")
                part64 = ir.Intrinsic("checked_index", [part64, ir.ViewDim(view, axis, "shape", I64, loc)], I64, loc, site)
            term: ir.Expr = ir.BinOp(BinaryOp.MUL, part64, ir.ViewDim(view, axis, "stride", I64, loc), I64, loc)
            offset = term if offset is None else ir.BinOp(BinaryOp.ADD, offset, term, I64, loc)
        assert offset is not None
        return ir.Intrinsic("flat_index", [offset], I64, loc)

    def index_expr(self, node: ast.expr, container: Type | None = None) -> ir.Expr:
        tr = self.tr
        if isinstance(node, ast.Slice):
            raise tr.error(node, "cannot assign to a slice", "store the elements one at a time: x[i] = v")
        if isinstance(container, ArrayType) and container.shape is not None and len(container.shape) > 1:
            if not (isinstance(node, ast.Tuple) and len(node.elts) == len(container.shape)):
                raise tr.error(node, f"this array has {len(container.shape)} dimensions: index it as "
                                 f"a[{', '.join('i' + str(k) for k in range(len(container.shape)))}]",
                                 "give one index per dimension, separated by commas")
            flat: ir.Expr | None = None
            loc = tr.loc(node)
            for axis, (dim, elt) in enumerate(zip(container.shape, node.elts)):
                part = self.index_expr(elt)
                part = tr.semantics.convert(tr.semantics.materialize(part), I64, elt) if not isinstance(part.ty, ThreadIndexType) else ir.Cast(part, I64, loc)
                if isinstance(part, ir.Const):
                    if not 0 <= int(part.value) < dim:
                        raise tr.error(elt, f"index {part.value} is out of bounds for axis {axis} of size {dim}")
                elif tr.checks.enabled:
                    # one check per axis: identical checks (e.g. of thread.idx.y) fold together
                    site = tr.checks.site("bounds", elt,
                                                       f"axis {axis} index {ast.unparse(elt)} (size {dim})")
                    part = ir.Intrinsic("checked_index", [part, ir.Const(dim, I64, loc)], I64, loc, site)
                flat = part if flat is None else ir.BinOp(BinaryOp.ADD, ir.BinOp(BinaryOp.MUL, flat, ir.Const(dim, I64, loc), I64, loc), part, I64, loc)
            assert flat is not None
            return ir.Intrinsic("flat_index", [flat], I64, loc)
        if isinstance(node, ast.Tuple):
            raise tr.error(node, "1-D views take one index", "use a single integer index")
        index = tr.expr(node)
        if not is_int(index.ty):
            raise tr.error(node, f"view index must be an integer, got {type_name(index.ty)}",
                             "convert it with i64(...)")
        return index

    def store(self, target: ast.Subscript, value_node: ast.expr, node: ast.AST,
              value: ir.Expr | None = None) -> ir.Stmt:
        """``target = value_node`` (or the value already translated: ``value``)."""
        tr = self.tr
        view = tr.expr(target.value)
        if isinstance(view.ty, VectorType):
            return vectors.with_indexed_lane(tr, target, tr.expr(value_node) if value is None else value, node)
        if not isinstance(view.ty, (ViewType, ArrayType)):
            raise tr.error(target.value, f"{ast.unparse(target.value)!r} is {type_name(view.ty)}, not a view",
                             "only Slice/DisjointSlice/MutSlice parameters and arrays can be indexed")
        if isinstance(view.ty, ArrayType) and view.ty.barrier:
            raise _barrier_is_not_a_number(tr, target)
        if isinstance(view.ty, ArrayType):
            refuse_array_write(tr, target, view.ty)
            index = self.index_expr(target.slice, view.ty)
            value = tr.semantics.convert_store(tr.expr(value_node) if value is None else value, view.ty.elem, value_node,
                                          f"store into {ast.unparse(target.value)}")
            site = tr.checks.check_site(target, view, index, f"{ast.unparse(target.value)}[{_index_text(target.slice)}]")
            return ir.Store(view, index, value, tr.loc(node), site)
        vt = view.ty
        if vt.is_tensor:
            refuse_tensor_write(tr, target, vt)
            flat = self.tensor_index(target.slice, view)
            value = tr.semantics.convert_store(tr.expr(value_node) if value is None else value, vt.elem, value_node,
                                          f"store into {ast.unparse(target.value)}")
            return ir.Store(view, flat, value, tr.loc(node), None)
        index = self.index_expr(target.slice)
        refuse_slice_write(tr, target, vt, index)
        value = tr.semantics.convert_store(tr.expr(value_node) if value is None else value, vt.elem, value_node,
                                      f"store into {ast.unparse(target.value)}")
        site = tr.checks.check_site(target, view, index, f"{ast.unparse(target.value)}[{_index_text(target.slice)}]")
        return ir.Store(view, index, value, tr.loc(node), site)


def _barrier_is_not_a_number(tr: FunctionTranslator, node: ast.Subscript) -> Exception:
    return tr.error(node, f"{ast.unparse(node)} is an mbarrier: it is not read, written or sliced as a number",
                    f"pass it to the ox.mbarrier.* intrinsics or ox.tma.load (ox.mbarrier.wait({ast.unparse(node)}, phase))")


def _index_text(node: ast.expr) -> str:
    if isinstance(node, ast.Tuple):
        return ", ".join(ast.unparse(e) for e in node.elts)
    return ast.unparse(node)
