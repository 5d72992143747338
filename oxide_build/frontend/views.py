"""What each view kind lets a kernel write (docs/language.md, "Views"): a ``Slice`` or
``Tensor`` nothing, a ``DisjointSlice`` / ``DisjointTensor`` only at the calling thread's own
index, a ``MutSlice`` / ``MutTensor`` anything inside ``with oxide.unsafe():``. Each function
raises the located error for a write its view does not allow."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.abi.views import ViewKind

from ..ir import nodes as ir
from ..ir.types import ThreadIndexType, ViewType, type_name

if TYPE_CHECKING:
    from .context import TranslatorContext

__all__ = ["refuse_tensor_write", "refuse_slice_write", "refuse_vector_store"]


def refuse_tensor_write(tr: TranslatorContext, target: ast.Subscript, vt: ViewType) -> None:
    """``t[i, j] = v`` into a tensor view."""
    if vt.kind == ViewKind.TENSOR:
        raise tr.error(target, f"{ast.unparse(target.value)!r} is a read-only Tensor",
                       "declare it MutTensor (writes inside `with oxide.unsafe():`) or DisjointTensor")
    if vt.kind == ViewKind.MUT_TENSOR and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing the MutTensor {ast.unparse(target.value)!r} needs `with oxide.unsafe():`")
    if vt.kind == ViewKind.DISJOINT_TENSOR:
        elts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        want = ["1d"] if vt.ndim == 1 else ["row", "col"] if vt.ndim == 2 else None
        got = [tr.locals.get(e.id) if isinstance(e, ast.Name) else None for e in elts]
        axes = [g.axis if isinstance(g, ThreadIndexType) else None for g in got]
        if want is None or axes != want:
            raise tr.error(target.slice, "a DisjointTensor is written only at the calling thread's own index",
                           "index it with `row, col = thread.index_2d()` as out[row, col]"
                           if vt.ndim == 2 else "use thread.index_1d() for 1-D")


def refuse_slice_write(tr: TranslatorContext, target: ast.Subscript, vt: ViewType, index: ir.Expr) -> None:
    """``x[i] = v`` into a 1-D view."""
    if vt.kind == ViewKind.SLICE:
        raise tr.error(target, f"{ast.unparse(target.value)!r} is a read-only Slice",
                       "declare the parameter DisjointSlice[T] to write one element per thread")
    if vt.kind == ViewKind.DISJOINT_SLICE and not (isinstance(index.ty, ThreadIndexType) and index.ty.axis == "1d"):
        raise tr.error(
            target.slice,
            f"a DisjointSlice can only be written at the calling thread's ThreadIndex; "
            f"{ast.unparse(target.slice)!r} is {type_name(index.ty)}",
            "index with the value of thread.index_1d(), or use MutSlice inside `with oxide.unsafe():`",
        )
    if vt.kind == ViewKind.MUT_SLICE and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing the MutSlice {ast.unparse(target.value)!r} needs `with oxide.unsafe():`",
                       "wrap the write in `with oxide.unsafe():`, or use a DisjointSlice")


def refuse_vector_store(tr: TranslatorContext, func: ast.Attribute, node: ast.Call, vt: ViewType,
                        index: ir.Expr) -> None:
    """``x.store4(k, a, b, c, d)``."""
    if vt.kind == ViewKind.SLICE:
        raise tr.error(func, f"{ast.unparse(func.value)!r} is a read-only Slice")
    if vt.kind == ViewKind.DISJOINT_SLICE and not isinstance(index.ty, ThreadIndexType):
        raise tr.error(node.args[0], "a DisjointSlice vector store needs the thread's ThreadIndex",
                       "index with the value of thread.index_1d()")
    if vt.kind == ViewKind.MUT_SLICE and tr.unsafe_depth == 0:
        raise tr.error(node, f"writing the MutSlice {ast.unparse(func.value)!r} needs `with oxide.unsafe():`")
