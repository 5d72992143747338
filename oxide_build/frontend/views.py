"""What each view kind lets a kernel write (docs/language.md, "Views"): a ``Slice`` or
``Tensor`` nothing, a ``DisjointSlice`` / ``DisjointTensor`` only at the calling thread's own
index, a ``MutSlice`` / ``MutTensor`` anything inside ``with oxide.unsafe():``. Each function
raises the located error for a write its view does not allow."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.abi.views import ViewKind


from ..intrinsics.thread import SPECIAL_REGISTERS
from ..ir import nodes as ir
from ..ir.types import THREAD_INDEX_DIM, ArrayType, ThreadIndexType, ViewType, type_name
from .annotations import oxide_name
from .split_indices import looks_split, split_coordinates, split_problem

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["record_unit_extents", "refuse_tensor_write", "refuse_disjoint_tensor_write", "refuse_slice_write", "refuse_vector_store",
           "refuse_array_write"]


def refuse_tensor_write(tr: FunctionTranslator, target: ast.Subscript, vt: ViewType) -> None:
    """``t[i, j] = v`` into a tensor view."""
    if vt.kind == ViewKind.TENSOR:
        raise tr.error(target, f"{ast.unparse(target.value)!r} is a read-only Tensor",
                       "declare it MutTensor (writes inside `with oxide.unsafe():`) or DisjointTensor")
    if vt.kind == ViewKind.MUT_TENSOR and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing the MutTensor {ast.unparse(target.value)!r} needs `with oxide.unsafe():`")
    if vt.kind == ViewKind.DISJOINT_TENSOR:
        refuse_disjoint_tensor_write(tr, target, vt)


# what each index of a disjoint write may be, as the hardware coordinates of the calling thread it
# determines: a ThreadIndex axis its global index (block and thread index along one dimension),
# block.idx / thread.idx one coordinate each
_THREAD_INDEX_COORDINATES = {
    axis: frozenset({f"ctaid.{dim}", f"tid.{dim}"}) for axis, dim in THREAD_INDEX_DIM.items()
}
_REGISTER_COORDINATES = {f"{r}.{d}": frozenset({f"{r}.{d}"}) for r in ("ctaid", "tid") for d in "xyz"}
_EXTENT = {"ctaid": "grid.dim", "tid": "block.dim"}


def refuse_disjoint_tensor_write(tr: FunctionTranslator, target: ast.Subscript, vt: ViewType) -> None:
    """``t[i, j, ...] = v`` into a DisjointTensor: every index is a ThreadIndex axis
    (``thread.index_1d/2d/3d()``), ``block.idx.*`` or ``thread.idx.*`` (or a local assigned once
    from one), so distinct threads write distinct elements as long as every block/thread
    coordinate the indices leave out has extent 1 — which becomes a launch precondition
    (``block.dim.y == 1`` for ``out[block.idx.y, col]``)."""
    elts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    if len(elts) != vt.ndim:
        return  # the indexing reports the count
    covered: set[str] = set()
    axes: list[str | None] = []
    others: list[int] = []  # the indices that are no coordinate: the digits of a split ThreadIndex?
    for k, elt in enumerate(elts):
        coords, axis = _thread_coordinates(tr, elt)
        if coords is None:
            others.append(k)
            continue
        covered |= coords
        axes.append(axis)
    if others:
        split = split_coordinates(tr, elts, others)  # frontend/split_indices.py
        if split is None:
            elt = elts[others[0]]
            digits = looks_split(tr, elts)
            raise tr.error(elt, "a DisjointTensor is written only at the calling thread's own index; "
                                f"{ast.unparse(elt)!r} is not one"
                                + (f" ({split_problem(tr, elts, others)})" if digits else ""),
                           _disjoint_hint(vt.ndim) + "; or at every digit of a ThreadIndex split by "
                           "values every thread shares (c = i % dim, r = i // dim, then out[r, c]), in the kernel")
        covered |= _THREAD_INDEX_COORDINATES[split]
        axes = []  # checked below as the coordinates it covers
    if axes == (["1d"] if vt.ndim == 1 else ["row", "col"] if vt.ndim == 2 else None):
        # index_1d / index_2d as documented: distinct threads of a launch without the
        # dimensions they leave out (passes/disjoint_launch_shape.py makes that a precondition)
        record_unit_extents(tr, "1d" if vt.ndim == 1 else "row", target)
        return
    missing = sorted(c for c in _REGISTER_COORDINATES if c not in covered)
    if not missing:
        return
    if not tr.is_kernel:
        raise tr.error(target.slice, "a device function writes a DisjointTensor only at indices that tell "
                                     "every thread of the launch apart",
                       "index it with thread.index_3d() (or the kernel's own ThreadIndex values), or write "
                       "it in the kernel, where the launch can be checked")
    text = f"{ast.unparse(target.value)}[{', '.join(ast.unparse(e) for e in elts)}]"
    for coord in missing:
        register, dim = coord.split(".")
        extent = f"{_EXTENT[register]}.{dim}"
        if (extent, text) in tr.launch.disjoint_extents:
            continue
        tr.launch.disjoint_extents.add((extent, text))
        site = tr.checks.site(
            "assert", target,
            f"{extent} == 1: the DisjointTensor write {text} tells threads apart only if it is "
            f"(launch with {extent} = 1, or index with thread.index_3d())")
        kind = "grid" if register == "ctaid" else "block"
        tr.launch.preconditions.append(ir.LaunchCondition(site, ["eq", [kind, "xyz".index(dim)], ["const", 1]]))


# the launch extents a ThreadIndex axis leaves out: index_1d() is block.idx.x * block.dim.x +
# thread.idx.x, so threads that differ only in y or z share it
_LEFT_OUT = {
    "1d": ("grid.dim.y", "grid.dim.z", "block.dim.y", "block.dim.z"),
    "row": ("grid.dim.z", "block.dim.z"), "col": ("grid.dim.z", "block.dim.z"),
    "depth": (),
}


def record_unit_extents(tr: FunctionTranslator, axis: str, write: ast.expr) -> None:
    """A disjoint write at a ThreadIndex of ``axis``: the extents it leaves out must be 1 at
    launch (the launch shape pass turns them into the kernel's precondition)."""
    for extent in _LEFT_OUT.get(axis, ()):
        tr.launch.unit_extents.setdefault(extent, (ast.unparse(write), write.lineno, write.col_offset + 1))


def _disjoint_hint(ndim: int) -> str:
    if ndim == 1:
        return "index it with thread.index_1d()"
    if ndim == 2:
        return "index it with `row, col = thread.index_2d()` as out[row, col], or out[block.idx.y, col]"
    if ndim == 3:
        return "index it with `d, row, col = thread.index_3d()` as out[d, row, col]"
    return (f"a {ndim}-D DisjointTensor takes thread.index_3d() values, block.idx and thread.idx; "
            "or use MutTensor inside `with oxide.unsafe():`")


def _thread_coordinates(tr: FunctionTranslator, elt: ast.expr) -> tuple[frozenset[str] | None, str | None]:
    """The hardware coordinates an index determines, and its ThreadIndex axis if it is one."""
    if isinstance(elt, ast.Name):
        ty = tr.scope.locals.get(elt.id)
        if isinstance(ty, ThreadIndexType):
            return _THREAD_INDEX_COORDINATES[ty.axis], ty.axis
        if tr.scope.assign_counts.get(elt.id, 0) == 1 and elt.id not in tr.scope.param_names:
            value = _single_assignment(tr.fdef, elt.id)
            if value is not None:
                return _thread_coordinates(tr, value)[0], None
        return None, None
    if (isinstance(elt, ast.Call) and len(elt.args) == 1 and not elt.keywords
            and (oxide_name(tr.module, elt.func) in ("i64", "u64")
                 or isinstance(elt.func, ast.Name) and elt.func.id == "int" and "int" not in tr.module.symbols)):
        return _thread_coordinates(tr, elt.args[0])[0], None  # widening keeps distinct values distinct
    register = _special_register(tr, elt)
    return _REGISTER_COORDINATES.get(register or ""), None


def _special_register(tr: FunctionTranslator, node: ast.expr) -> str | None:
    """``block.idx.y`` → "ctaid.y" (thread.idx → tid; sizes are no coordinates)."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("x", "y", "z")):
        return None
    parts = (oxide_name(tr.module, node.value) or "").split(".")
    register = SPECIAL_REGISTERS.get((parts[0], parts[1])) if len(parts) == 2 else None
    return f"{register}.{node.attr}" if register in ("ctaid", "tid") else None


def _single_assignment(fdef: ast.FunctionDef, name: str) -> ast.expr | None:
    """The value of ``name = value``, the one assignment of ``name`` in ``fdef``."""
    for node in ast.walk(fdef):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def refuse_array_write(tr: FunctionTranslator, target: ast.Subscript, ty: ArrayType) -> None:
    """``a[i] = v`` into an array: shared and local arrays anywhere; module-level global memory
    (``ox.global_memory.array``) and another block's shared array (``ox.cluster.map_shared``)
    like a ``MutSlice``; constant memory and arrays passed to a ``Slice`` parameter never."""
    text = ast.unparse(target.value)
    if ty.space == "constant":
        raise tr.error(target, f"{text!r} is in constant memory, which kernels only read",
                       "fill it from the host (NAME.write(values)), or use ox.global_memory.array")
    if ty.read_only:
        raise tr.error(target, f"{text!r} is a read-only view of a {ty.space} array (a Slice parameter)",
                       "declare the parameter MutSlice[T] to write it")
    if ty.space == "cluster" and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing {text!r}, the shared memory of another block of the cluster, needs "
                       "`with oxide.unsafe():`",
                       "that block's threads may read or write the element meanwhile: order the accesses "
                       "(ox.cluster.sync(), or arrive()/wait()) and wrap the write in `with oxide.unsafe():`, "
                       "or update it with ox.atomic.*")
    if ty.space == "global" and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing the global memory array {text!r} needs `with oxide.unsafe():`",
                       "every thread may write any element (like a MutSlice): wrap the write in "
                       "`with oxide.unsafe():`, or update it with ox.atomic.*")


def refuse_slice_write(tr: FunctionTranslator, target: ast.Subscript, vt: ViewType, index: ir.Expr) -> None:
    """``x[i] = v`` into a 1-D view."""
    if vt.kind == ViewKind.SLICE:
        is_param = isinstance(target.value, ast.Name) and target.value.id in tr.scope.param_names
        raise tr.error(target, f"{ast.unparse(target.value)!r} is a read-only Slice",
                       "declare the parameter DisjointSlice[T] to write one element per thread" if is_param else
                       "a slice of a Slice or DisjointSlice is read-only (a DisjointSlice is written only at the "
                       "thread's own index); write through the parameter, or slice a MutSlice inside `with ox.unsafe():`")
    if vt.kind == ViewKind.DISJOINT_SLICE and not (isinstance(index.ty, ThreadIndexType) and index.ty.axis == "1d"):
        reassigned = isinstance(target.slice, ast.Name) and target.slice.id in tr.scope.reassigned_thread_indices
        raise tr.error(
            target.slice,
            f"a DisjointSlice can only be written at the calling thread's ThreadIndex; "
            f"{ast.unparse(target.slice)!r} is {type_name(index.ty)}, which two threads may share"
            + (" (it held thread.index_1d(), but the function assigns it again, so it is a plain i64)"
               if reassigned else ""),
            ("keep thread.index_1d() in a name that is never assigned again, and compute the new value "
             "into another name; " if reassigned else "") +
            "index with the value of thread.index_1d() (one element per thread); for any other write "
            "(one thread per block at out[block.idx.x], a loop) declare the parameter MutSlice[T] and "
            "write inside `with oxide.unsafe():`",
        )
    if vt.kind == ViewKind.MUT_SLICE and tr.unsafe_depth == 0:
        raise tr.error(target, f"writing the MutSlice {ast.unparse(target.value)!r} needs `with oxide.unsafe():`",
                       "wrap the write in `with oxide.unsafe():`, or use a DisjointSlice")
    if vt.kind == ViewKind.DISJOINT_SLICE:
        record_unit_extents(tr, "1d", target)


def refuse_vector_store(tr: FunctionTranslator, func: ast.Attribute, node: ast.Call, vt: ViewType,
                        index: ir.Expr) -> None:
    """``x.store4(k, a, b, c, d)``."""
    if vt.kind == ViewKind.SLICE:
        raise tr.error(func, f"{ast.unparse(func.value)!r} is a read-only Slice")
    if vt.kind == ViewKind.DISJOINT_SLICE and not isinstance(index.ty, ThreadIndexType):
        raise tr.error(node.args[0], "a DisjointSlice vector store needs the thread's ThreadIndex",
                       "index with the value of thread.index_1d()")
    if vt.kind == ViewKind.DISJOINT_SLICE:
        assert isinstance(index.ty, ThreadIndexType)
        record_unit_extents(tr, index.ty.axis, node)
    if vt.kind == ViewKind.MUT_SLICE and tr.unsafe_depth == 0:
        raise tr.error(node, f"writing the MutSlice {ast.unparse(func.value)!r} needs `with oxide.unsafe():`")
