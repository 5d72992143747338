"""Views as values: slices (``x[k:]``, ``x[a:b]``), pointer-style offsets (``base + k``), views
held in locals (``data = buf_0 if odd else buf_1``; swaps ``src, dst = dst, src`` go through
``FunctionTranslator.parallel_assign``), and arrays passed
on to device functions.

The safety model stays the one of the view kinds (docs/language.md, "Views"): a slice of a
``Slice`` or of a ``DisjointSlice`` is a read-only ``Slice`` (a ``DisjointSlice`` is written only
at the thread's own index, which an offset view would move), a slice of a ``MutSlice`` is a
``MutSlice``, a slice of an array is a view of that array (written anywhere, as the array). A
slice knows its length: accesses through it are checked against it, and the slice itself is
checked (``0 <= start <= stop <= len``) unless the bounds prover shows it.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.abi.views import ViewKind

from ..ir import nodes as ir
from ..ir.types import I64, ArrayType, ThreadIndexType, Type, ViewType, is_int, type_name

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = [
    "is_view", "slice_view", "offset_view", "select_views", "assign_view",
    "device_param_type",
]

ViewLike = (ViewType, ArrayType)


def is_view(ty: Type) -> bool:
    return isinstance(ty, ViewLike)


def _sliced_type(tr: FunctionTranslator, base: ir.Expr, node: ast.AST, length: int | None) -> ViewType | ArrayType:
    """The type of a slice of ``base``; ``length`` when both bounds are constants."""
    ty = base.ty
    if isinstance(ty, ViewType):
        if ty.is_tensor:
            raise tr.error(node, f"slicing a {ty.kind.annotation} is not supported",
                           "index the tensor element by element, or take the data as a 1-D Slice")
        kind = ViewKind.MUT_SLICE if ty.kind == ViewKind.MUT_SLICE else ViewKind.SLICE
        return ViewType(kind, ty.elem)
    assert isinstance(ty, ArrayType)
    if ty.shape is not None and len(ty.shape) > 1:
        raise tr.error(node, f"slicing a {len(ty.shape)}-D array is not supported",
                       "slice a 1-D array, or index it as a[i, j]")
    if ty.dynamic:
        return ty  # dynamic shared memory stays unchecked, sliced or not
    if length is not None and not ty.runtime_length:
        return ArrayType(ty.space, ty.elem, (length,), read_only=ty.read_only)
    return ArrayType(ty.space, ty.elem, None, runtime_length=True, read_only=ty.read_only)


def _bound_value(tr: FunctionTranslator, node: ast.expr, what: str) -> ir.Expr:
    value = tr.expr(node)
    if not is_int(value.ty):
        raise tr.error(node, f"the {what} of a slice must be an integer, got {type_name(value.ty)}",
                       "convert it with i64(...)")
    if isinstance(value, ir.Const) and int(value.value) < 0:
        raise tr.error(node, f"negative slice {what} {value.value}: views do not count from the end",
                       "write the position from the start, e.g. x[len(x) - 4:]")
    if isinstance(value.ty, ThreadIndexType):
        return ir.Cast(value, I64, value.loc)
    return tr.convert(tr.materialize(value), I64, node)


def slice_view(tr: FunctionTranslator, view: ir.Expr, node: ast.Subscript) -> ir.Expr:
    """``x[start:stop]``."""
    sl = node.slice
    assert isinstance(sl, ast.Slice)
    if sl.step is not None:
        raise tr.error(sl.step, "slices with a step are not supported", "index with i * step instead")
    start = _bound_value(tr, sl.lower, "start") if sl.lower is not None else ir.Const(0, I64, tr.loc(node))
    stop = _bound_value(tr, sl.upper, "stop") if sl.upper is not None else None
    return _make_slice(tr, view, start, stop, node)


def offset_view(tr: FunctionTranslator, view: ir.Expr, offset_node: ast.expr, node: ast.AST) -> ir.Expr:
    """``base + k`` (or ``k + base``): the view from element ``k`` on, as ``base[k:]``."""
    start = _bound_value(tr, offset_node, "offset")
    return _make_slice(tr, view, start, None, node)


def _make_slice(tr: FunctionTranslator, view: ir.Expr, start: ir.Expr, stop: ir.Expr | None, node: ast.AST) -> ir.Expr:
    size = view.ty.size if isinstance(view.ty, ArrayType) and not view.ty.runtime_length else None
    length: int | None = None
    if size is not None and isinstance(start, ir.Const) and (stop is None or isinstance(stop, ir.Const)):
        lo = int(start.value)
        hi = size if stop is None else int(stop.value)
        if not lo <= hi <= size:
            raise tr.error(node, f"the slice [{lo}:{hi}] does not lie in an array of {size} elements",
                           f"bounds must satisfy 0 <= start <= stop <= {size}")
        length = hi - lo
    ty = _sliced_type(tr, view, node, length)
    site = None if length is not None else _slice_check(tr, view, start, stop, node)
    return ir.ViewSlice(view, start, stop, ty, tr.loc(node), site)


def _slice_check(tr: FunctionTranslator, view: ir.Expr, start: ir.Expr, stop: ir.Expr | None, node: ast.AST) -> int | None:
    """The error site of the run-time check ``0 <= start <= stop <= len`` (the bounds-elimination
    pass removes it where it is proven)."""
    if not tr.bounds_check or isinstance(view.ty, ArrayType) and view.ty.dynamic:
        return None
    text = ast.unparse(node)  # type: ignore[arg-type]
    return tr.checks.site("bounds", node, f"slice {text} (start..stop in 0..len)")


def _common_view_type(tr: FunctionTranslator, a: Type, b: Type, node: ast.AST, what: str) -> ViewType | ArrayType:
    """One type for two views that a local or a conditional expression may hold."""
    if a == b:
        assert isinstance(a, ViewLike)
        return a
    if isinstance(a, ViewType) and isinstance(b, ViewType) and not a.is_tensor and not b.is_tensor and a.elem == b.elem:
        return ViewType(ViewKind.SLICE, a.elem)  # views of different kinds: read them only
    if (isinstance(a, ArrayType) and isinstance(b, ArrayType) and a.space == b.space and a.elem == b.elem
            and not a.dynamic and not b.dynamic
            and (a.shape is None or len(a.shape) == 1) and (b.shape is None or len(b.shape) == 1)):
        return ArrayType(a.space, a.elem, None, runtime_length=True, read_only=a.read_only or b.read_only)
    hint = ("a view of global memory and an array live in different memory spaces: use if/else around the "
            "accesses instead" if isinstance(a, ViewType) != isinstance(b, ViewType) else
            "give both the same element type and kind")
    raise tr.error(node, f"{what}: {type_name(a)} and {type_name(b)} cannot be held as one view", hint)


def select_views(tr: FunctionTranslator, cond: ir.Expr, a: ir.Expr, b: ir.Expr, node: ast.IfExp) -> ir.Expr:
    """``a if cond else b`` of views."""
    if not (is_view(a.ty) and is_view(b.ty)):
        raise tr.error(node, f"a conditional expression chooses between {type_name(a.ty)} and {type_name(b.ty)}",
                       "both sides must be views, or both scalars")
    for side in (a.ty, b.ty):
        if isinstance(side, ViewType) and side.is_tensor:
            raise tr.error(node, "tensor views cannot be chosen between (yet)", "use if/else around the accesses")
    ty = _common_view_type(tr, a.ty, b.ty, node, "the two sides of this conditional expression")
    return ir.Select(cond, _as_type(a, ty), _as_type(b, ty), ty, tr.loc(node), scoped=True)  # type: ignore[arg-type]


def _as_type(value: ir.Expr, ty: ViewType | ArrayType) -> ir.Expr:
    """``value`` seen as the (wider) view type ``ty``: a whole-view slice where the type changes."""
    if value.ty == ty:
        return value
    return ir.ViewSlice(value, ir.Const(0, I64, value.loc), None, ty, value.loc)


def assign_view(tr: FunctionTranslator, target: ast.Name, value: ir.Expr, node: ast.AST) -> ir.Stmt:
    """``name = <a view>``: a local that holds a view (its type fixed by the first assignment)."""
    name = target.id
    ty = value.ty
    assert isinstance(ty, ViewLike)
    if isinstance(ty, ViewType) and ty.is_tensor:
        raise tr.error(node, "tensor views cannot be held in local variables (yet)", "use the parameter directly")
    if name in tr.scope.declared_arrays:
        raise tr.error(target, f"{name!r} names an array (line {tr.scope.local_decl_line.get(name, '?')}) and cannot be rebound",
                       "hold the other view in a new local name")
    if name in tr.scope.param_names:
        raise tr.error(target, f"cannot assign to the parameter {name!r}", "use a new local name")
    if tr.threads.differ(value):
        tr.threads.varying.add(name)
    declared = tr.scope.locals.get(name)
    if declared is None:
        tr.scope.locals[name] = ty
        tr.scope.local_decl_line[name] = getattr(node, "lineno", 0)
        return ir.Assign(name, value, tr.loc(node), tracked=False)
    if not is_view(declared):
        raise tr.error(node, f"{name!r} holds {type_name(declared)} (line {tr.scope.local_decl_line.get(name, '?')}), "
                       f"not a view", "use another name for the view")
    widened = _common_view_type(tr, declared, ty, node, f"assignment to {name!r}")
    if widened != declared:
        raise tr.error(node, f"{name!r} holds {type_name(declared)} (line {tr.scope.local_decl_line.get(name, '?')}); "
                       f"this is {type_name(ty)}",
                       "a local keeps the view type of its first assignment: give the arrays one shape, or "
                       "start from a slice (`a[0:n]` with a run-time n) to hold any length")
    return ir.Assign(name, _as_type(value, declared), tr.loc(node), tracked=False)  # type: ignore[arg-type]


def device_param_type(caller: FunctionTranslator, arg: ir.Expr, pty: ViewType, what: str, node: ast.AST) -> Type:
    """The type a device function's view parameter gets for ``arg`` in the instance called:
    the annotation itself for a view; for an array (shared or local, or a slice of one), the
    array's type, so the callee indexes it as the caller does (a ``Slice[T]`` parameter makes
    it read-only there; ``MutSlice[T]`` keeps it writable anywhere, as in the caller)."""
    aty = arg.ty
    if not isinstance(aty, ArrayType):
        return pty
    if pty.elem != aty.elem:
        raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(aty)}",
                           f"the elements must be {pty.elem.name}")
    if pty.kind == ViewKind.SLICE:
        return ArrayType(aty.space, aty.elem, aty.shape, aty.runtime_length, read_only=True)
    if pty.kind == ViewKind.MUT_SLICE:
        if aty.read_only:
            raise caller.error(node, f"{what} needs a writable view, got {type_name(aty)}",
                               "constant memory is read-only in kernels: take it as Slice[T]" if aty.space == "constant"
                               else "the caller received it as a read-only Slice: declare that parameter MutSlice[T]")
        return aty
    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(aty)}",
                       "take an array as Slice[T] (read) or MutSlice[T] (written anywhere, as in the caller)")
