"""Names and annotations: what an oxide name in the source stands for, and the type an
annotation denotes (scalars, views, tuples, type variables)."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from oxide.abi.views import MAX_TENSOR_NDIM, VIEW_ANNOTATIONS
from oxide.lang.types import SCALAR_TYPES, ScalarType
from oxide.lang.vectors import VECTOR_TYPES

from oxide.abi.params import TENSOR_MAP_MAX_NDIM

from ..ir.types import (
    BOOL, F64, I64, THREAD_INDEX, VOID, StructType, TensorMapType, TupleType, Type, VectorType, ViewType, type_name,
)
from ..project_imports import dotted_name
from ..scan import ModuleSource

__all__ = [
    "PYTHON_SCALARS", "TypeVarBinding", "accumulate_alias", "accumulate_type", "declared_accumulate_types", "dotted_parts",
    "oxide_name", "optional_inner", "resolve_annotation", "scalar_type_named", "struct_type",
]

PYTHON_SCALARS = {"int": I64, "float": F64, "bool": BOOL}


@dataclass
class TypeVarBinding:
    name: str
    constraints: tuple[ScalarType, ...]
    bound: ScalarType | None = None


def dotted_parts(node: ast.AST) -> list[str] | None:
    """``a.b.c`` → ["a", "b", "c"]; None for anything but names and attributes."""
    name = dotted_name(node)
    return None if name is None else name.split(".")


def oxide_name(module: ModuleSource, node: ast.AST) -> str | None:
    """``f32`` / ``ox.f32`` / ``oxide.lang.f32`` → "f32" when it names something from oxide."""
    parts = dotted_parts(node)
    if not parts:
        return None
    sym = module.symbols.get(parts[0])
    if sym is None or sym.kind != "oxide":
        return None
    rest = ([sym.target] if sym.target else []) + parts[1:]
    if not rest:
        return ""
    # `ox.lang.f32`, `ox.lang.types.f32`: submodules of oxide flatten to the final name
    while len(rest) > 1 and rest[0] in ("lang", "types", "intrinsics", "decorators"):
        rest = rest[1:]
    return ".".join(rest)


def scalar_type_named(module: ModuleSource, node: ast.expr) -> ScalarType | None:
    """``f32`` / ``ox.f32`` / ``bool`` → the scalar type; None when ``node`` names none."""
    if isinstance(node, ast.Name) and node.id in PYTHON_SCALARS and node.id not in module.symbols:
        return PYTHON_SCALARS[node.id]
    name = oxide_name(module, node)
    if name == "boolean":
        return BOOL
    return SCALAR_TYPES.get(name) if name else None


def declared_accumulate_types(module: ModuleSource, typevar: str) -> dict[ScalarType, ScalarType]:
    """The ``acc={f16: f32, ...}`` of ``T = ox.TypeVar("T", ..., acc=...)``, as written (the
    TypeVar's declaration is checked where its constraints are read)."""
    sym = module.symbols.get(typevar)
    node = getattr(sym, "node", None)
    call = getattr(node, "value", None)
    out: dict[ScalarType, ScalarType] = {}
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg == "acc" and isinstance(kw.value, ast.Dict):
                for k, v in zip(kw.value.keys, kw.value.values):
                    key = scalar_type_named(module, k) if k is not None else None
                    value = scalar_type_named(module, v)
                    if key is not None and value is not None:
                        out[key] = value
    return out


def accumulate_alias(module: ModuleSource, name: str) -> ast.Call | None:
    """The ``ox.acc_type(T)`` of a module-level ``Acc = ox.acc_type(T)``, or None."""
    sym = module.symbols.get(name)
    value = getattr(getattr(sym, "node", None), "value", None)
    if (sym is not None and sym.kind == "unknown" and isinstance(value, ast.Call)
            and oxide_name(module, value.func) == "acc_type"):
        return value
    return None


def accumulate_type(
    module: ModuleSource, node: ast.Call, typevars: dict[str, TypeVarBinding], what: str
) -> ScalarType:
    """``ox.acc_type(T)``: the type a generic function accumulates ``T`` values in — the
    TypeVar's ``acc=`` entry for the bound type, else f32 for f16/bf16/fp8, else the type itself."""
    if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
        raise module.error(node, "ox.acc_type takes one TypeVar", "write e.g. ox.acc_type(T)")
    name = node.args[0].id
    binding = typevars.get(name)
    if binding is None:
        sym = module.symbols.get(name)
        if sym is None or sym.kind != "typevar":
            raise module.error(node.args[0], f"ox.acc_type takes a TypeVar, not {name!r} ({what})",
                               "declare it with T = ox.TypeVar(\"T\", f16, bf16, f32)")
        raise module.error(node.args[0], f"the TypeVar {name} is not a type parameter here",
                           f"use {name} in a parameter's annotation, so each instance binds it")
    if binding.bound is None:
        raise module.error(node.args[0], f"type variable {name} in {what} is not bound by a parameter")
    declared = declared_accumulate_types(module, name)
    if binding.bound in declared:
        return declared[binding.bound]
    narrow = binding.bound.kind == "fp8" or binding.bound.kind == "float" and binding.bound.bits == 16
    return SCALAR_TYPES["f32"] if narrow else binding.bound


def optional_inner(module: ModuleSource, node: ast.expr | None) -> ast.expr | None:
    """``X`` of ``Optional[X]`` (``typing.Optional``), ``X | None`` or ``None | X``; None for any
    other annotation."""
    if isinstance(node, ast.Subscript):
        name = dotted_name(node.value)
        sym = module.symbols.get(name.split(".")[0]) if name else None
        if name in ("Optional", "typing.Optional", "t.Optional") and (
                sym is None or sym.kind != "struct") or oxide_name(module, node.value) == "Optional":
            return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, ast.Constant) and other.value is None:
                return side
    return None


def resolve_annotation(
    module: ModuleSource, node: ast.expr | None, typevars: dict[str, TypeVarBinding], what: str
) -> Type | TypeVarBinding:
    inner = optional_inner(module, node)
    if inner is not None:
        maybe = resolve_annotation(module, inner, typevars, what)
        if isinstance(maybe, TypeVarBinding):
            return maybe  # a view of an unbound T: bound from the argument, resolved again then
        if not (isinstance(maybe, ViewType) and maybe.kind.is_kernel_param) or maybe.optional:
            raise module.error(node, f"only a view may be None: {ast.unparse(node)} ({what})",  # type: ignore[arg-type]
                               "write Optional[Tensor[f32, 2]] (or Tensor[f32, 2] | None) of a view type; a scalar "
                               "that may be absent is a flag or a sentinel value")
        return ViewType(maybe.kind, maybe.elem, maybe.ndim, optional=True)
    if node is None:
        raise module.error(
            _anchor(node, module), f"{what} has no type annotation",
            "annotate every parameter, e.g. `x: Slice[f32]` or `a: f32`",
        )
    if isinstance(node, ast.Constant) and node.value is None:
        return VOID
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        raise module.error(node, f"string annotations are not supported ({what})",
                           "write the type itself, not a string")
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id in ("tuple", "Tuple") and node.value.id not in module.symbols or
            isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "Tuple"):
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        resolved = [resolve_annotation(module, e, typevars, what) for e in elts]
        elems: list[Type] = []
        for r, e in zip(resolved, elts):
            if isinstance(r, TypeVarBinding):
                if r.bound is None:
                    raise module.error(e, f"type variable {r.name} in {what} is not bound by a parameter")
                r = r.bound
            if not isinstance(r, ScalarType):
                raise module.error(e, f"tuples hold scalars, not {type_name(r)}")
            elems.append(r)
        return TupleType(tuple(elems))
    if isinstance(node, ast.Call) and oxide_name(module, node.func) == "acc_type":
        return accumulate_type(module, node, typevars, what)
    if isinstance(node, ast.Subscript):
        view = oxide_name(module, node.value)
        if view == "Constexpr":
            return I64
        if view == "tma.Descriptor":
            return _tensor_map_annotation(module, node, typevars, what)
        kind = VIEW_ANNOTATIONS.get(view or "")
        if view is None or kind is None:
            raise module.error(node, f"unknown generic type {ast.unparse(node.value)!r} in {what}",
                               "views are Slice[T], DisjointSlice[T], MutSlice[T] and Tensor[T, N] from oxide")
        ndim = 1
        elem_node = node.slice
        if kind.is_tensor:
            if not (isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
                raise module.error(node, f"{view} takes an element type and a dimension count: {view}[f32, 2]")
            elem_node, ndim_node = node.slice.elts
            n = ndim_node.value if isinstance(ndim_node, ast.Constant) else None
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_TENSOR_NDIM:
                raise module.error(ndim_node, f"the dimension count of {view} must be an integer from 1 to {MAX_TENSOR_NDIM}")
            ndim = n
        elem = resolve_annotation(module, elem_node, typevars, what)
        if isinstance(elem, TypeVarBinding):
            if elem.bound is None:
                return elem
            elem = elem.bound
        if isinstance(elem, StructType) and not kind.is_tensor and kind.is_kernel_param:
            bad = [name for name, t in elem.fields if not isinstance(t, ScalarType) or t.kind == "bool"]
            if bad:
                raise module.error(elem_node, f"a view of {elem.name} records needs scalar fields (not bool); "
                                   f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not",
                                   "give the record scalar fields (a vector as two fields: x, y)")
            return ViewType(kind, elem, ndim)  # type: ignore[arg-type]
        if isinstance(elem, VectorType):
            return ViewType(kind, elem, ndim)  # type: ignore[arg-type]
        if not isinstance(elem, ScalarType):
            raise module.error(elem_node, f"{view} elements must be scalars, not {type_name(elem)}",
                               "a Tensor of records is not supported: take a 1-D Slice of them"
                               if isinstance(elem, StructType) else "")
        return ViewType(kind, elem, ndim)
    if isinstance(node, ast.Name):
        if node.id in typevars:
            tv = typevars[node.id]
            return tv.bound if tv.bound is not None else tv
        sym = module.symbols.get(node.id)
        if sym is not None and sym.kind == "struct":
            return struct_type(module, node.id)
        alias = accumulate_alias(module, node.id)
        if alias is not None:  # Acc = ox.acc_type(T)
            return accumulate_type(module, alias, typevars, what)
        if node.id in PYTHON_SCALARS and node.id not in module.symbols:
            return PYTHON_SCALARS[node.id]
    name = oxide_name(module, node)
    if name is not None:
        if name == "boolean":
            return BOOL
        if name in SCALAR_TYPES:
            return SCALAR_TYPES[name]
        if name in VECTOR_TYPES:
            return VECTOR_TYPES[name]
        if name == "ThreadIndex":
            return THREAD_INDEX
        if name in VIEW_ANNOTATIONS:
            raise module.error(node, f"{name} needs an element type ({what})", f"write {name}[f32]")
        if name == "tma.Descriptor":
            raise module.error(node, f"ox.tma.Descriptor needs an element type and a rank ({what})",
                               "write ox.tma.Descriptor[bf16, 2]")
    raise module.error(
        node, f"unknown type {ast.unparse(node)!r} in {what}",
        "use a scalar type from oxide (i32, i64, u32, u64, f32, f64, bool), a view like Slice[f32], "
        "or a TypeVar",
    )


def _tensor_map_annotation(
    module: ModuleSource, node: ast.Subscript, typevars: dict[str, TypeVarBinding], what: str
) -> Type | TypeVarBinding:
    """``ox.tma.Descriptor[T, N]``: a TMA tensor map of an N-d array of scalars T."""
    if not (isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
        raise module.error(node, f"ox.tma.Descriptor takes an element type and a rank ({what})",
                           "write ox.tma.Descriptor[bf16, 2]")
    elem_node, ndim_node = node.slice.elts
    n = ndim_node.value if isinstance(ndim_node, ast.Constant) else None
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= TENSOR_MAP_MAX_NDIM:
        raise module.error(ndim_node, f"the rank of ox.tma.Descriptor must be an integer from 1 to {TENSOR_MAP_MAX_NDIM}",
                           "TMA copies boxes of 1 to 5 dimensions")
    elem = resolve_annotation(module, elem_node, typevars, what)
    if isinstance(elem, TypeVarBinding):
        if elem.bound is None:
            return elem
        elem = elem.bound
    if not isinstance(elem, ScalarType) or elem.kind == "bool":
        raise module.error(elem_node, f"the elements of ox.tma.Descriptor are numbers, not {type_name(elem)}")
    return TensorMapType(elem, n)


_STRUCTS: dict[tuple[str, str, int], StructType] = {}  # (module, class, id of its node) -> type


def struct_type(module: ModuleSource, name: str) -> StructType:
    """The type of the ``@oxide.struct`` class ``name`` of ``module``: its annotated fields, in
    order (scalars, vectors, other structs)."""
    sym = module.symbols[name]
    cls = sym.node
    assert isinstance(cls, ast.ClassDef)
    key = (module.name, name, id(cls))
    found = _STRUCTS.get(key)
    if found is not None:
        return found
    fields: list[tuple[str, Type]] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Pass):
            continue
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            raise module.error(stmt, f"the struct {name} may hold only annotated fields (`x: f32`)",
                               "define functions on it at module level, taking it as a parameter")
        if stmt.value is not None:
            raise module.error(stmt.value, f"field {stmt.target.id!r} of the struct {name} has a default value",
                               "structs have no defaults on the device: pass every field when constructing it")
        if stmt.annotation is not None and isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == name:
            raise module.error(stmt.annotation, f"the struct {name} cannot contain itself")
        ty = resolve_annotation(module, stmt.annotation, {}, f"field {stmt.target.id!r} of {name}")
        if not isinstance(ty, (ScalarType, VectorType, StructType)):
            raise module.error(stmt.annotation, f"field {stmt.target.id!r} of the struct {name} must be a scalar, a "
                               f"vector or a struct, not {type_name(ty) if not isinstance(ty, TypeVarBinding) else ty.name}",
                               "pass views as parameters next to the struct")
        fields.append((stmt.target.id, ty))
    if not fields:
        raise module.error(cls, f"the struct {name} has no fields", "declare them as `x: f32` in the class body")
    found = StructType(name, sym.target, tuple(fields))
    _STRUCTS[key] = found
    return found


def _anchor(node: ast.AST | None, module: ModuleSource) -> ast.AST:
    return node if node is not None else module.tree
