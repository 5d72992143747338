"""Types as values inside a generic function: ``T(x)`` and ``ox.acc_type(T)(x)`` conversions, and
compile-time tests of a TypeVar (``if T is f64:``, ``if T in (f16, bf16):``) that choose one
branch per instance, so the other branch is never translated (nor type-checked).

Each instance of a generic kernel or device function has its TypeVars bound
(``TypeVarBinding.bound``); everything here reads those bindings, nothing reaches the IR but
the chosen code and plain conversions. A generic ``@extern`` stub is bound per call
(``bind_from_arguments``) and its C symbol made per instance (``extern_symbol``: a C++
template's wrapper, or a name pattern).
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Mapping

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import Type, ViewType, as_scalar, type_name
from ..link.boundary import c_type
from ..scan import ModuleSource
from .annotations import TypeVarBinding, accumulate_alias, accumulate_type, oxide_name, scalar_type_named

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["bind_from_arguments", "extern_symbol", "instance_key", "type_operand", "static_type_test", "type_spelling"]


def type_operand(tr: FunctionTranslator, node: ast.expr) -> ScalarType | None:
    """The scalar type ``node`` names inside a function body: a TypeVar of the instance (``T``),
    ``ox.acc_type(T)``, or a type name (``f32``, ``ox.bf16``); None when it names no type."""
    if isinstance(node, ast.Name) and node.id in tr.scope.type_aliases:
        return tr.scope.type_aliases[node.id]  # acc_t = ox.acc_type(T) earlier in the body
    if isinstance(node, ast.Name):
        sym = tr.module.symbols.get(node.id)
        if node.id not in tr.scope.locals and sym is not None and sym.kind == "typevar":
            binding = tr.typevars.get(node.id)
            if binding is None or binding.bound is None:
                raise tr.error(node, f"the TypeVar {node.id} is not a type parameter of "
                                     f"{tr.fdef.name!r}",
                               f"use {node.id} in a parameter's annotation (e.g. `x: Slice[{node.id}]`), "
                               "so each instance binds it")
            return binding.bound
        if node.id in tr.scope.locals:
            return None
        alias = accumulate_alias(tr.module, node.id)
        if alias is not None:  # Acc = ox.acc_type(T)
            return accumulate_type(tr.module, alias, tr.typevars, "ox.acc_type")
    if isinstance(node, ast.Call) and oxide_name(tr.module, node.func) == "acc_type":
        return accumulate_type(tr.module, node, tr.typevars, "ox.acc_type")
    if isinstance(node, (ast.Name, ast.Attribute)):
        return scalar_type_named(tr.module, node)
    return None


def _type_list(tr: FunctionTranslator, node: ast.expr) -> list[ScalarType] | None:
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return None
    types = []
    for elt in node.elts:
        ty = type_operand(tr, elt)
        if ty is None:
            raise tr.error(elt, f"{ast.unparse(elt)!r} is not a type",
                           "list scalar types, e.g. `T in (f16, bf16)`")
        types.append(ty)
    return types


def _names_type(tr: FunctionTranslator, n: ast.AST) -> bool:
    """``n`` is a TypeVar (``T``), an alias of an accumulate type, or ``ox.acc_type(T)``."""
    if isinstance(n, ast.Name) and n.id not in tr.scope.locals:
        sym = tr.module.symbols.get(n.id)
        return sym is not None and sym.kind == "typevar" or accumulate_alias(tr.module, n.id) is not None
    return isinstance(n, ast.Call) and oxide_name(tr.module, n.func) == "acc_type"


def _mentions_typevar(tr: FunctionTranslator, node: ast.expr) -> bool:
    """Whether ``node`` uses a type as a type (``T``, ``ox.acc_type(T)``). A conversion ``T(4.0)``
    is a value, not a type: ``xx + yy > T(4.0)`` is a run-time condition."""
    if _names_type(tr, node):
        return True
    if isinstance(node, ast.Call) and _names_type(tr, node.func):
        return any(_mentions_typevar(tr, a) for a in node.args)
    return any(_mentions_typevar(tr, child) for child in ast.iter_child_nodes(node)
               if isinstance(child, ast.expr))


def static_type_test(tr: FunctionTranslator, node: ast.expr) -> bool | None:
    """The value of a condition on types (``T is f64``, ``T is not f16``, ``T == f32``,
    ``T in (f16, bf16)``, and ``and``/``or``/``not`` of those) for this instance, or None when
    the condition does not test a type (then it is an ordinary run-time condition)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = static_type_test(tr, node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        values = [static_type_test(tr, v) for v in node.values]
        if all(v is None for v in values):
            return None
        if any(v is None for v in values):
            mixed = next(v for v, r in zip(node.values, values) if r is None)
            raise tr.error(mixed, "a condition on a type cannot be combined with a run-time condition",
                           "test the type in its own `if` (e.g. `if T is f16:`) and nest the run-time "
                           "condition inside it")
        return all(values) if isinstance(node.op, ast.And) else any(values)  # type: ignore[arg-type]
    if not isinstance(node, ast.Compare):
        if _mentions_typevar(tr, node):
            raise tr.error(node, f"{ast.unparse(node)!r} is not a test of a type",
                           "compare the TypeVar with a type: `T is f64`, `T is not f16`, `T in (f16, bf16)`")
        return None
    if len(node.ops) != 1:
        if _mentions_typevar(tr, node):
            raise tr.error(node, "a type test compares two things", "write `T is f64` or `T in (f16, bf16)`")
        return None
    left = type_operand(tr, node.left) if _mentions_typevar(tr, node.left) else None
    if left is None:
        if _mentions_typevar(tr, node.comparators[0]):
            raise tr.error(node, "write the TypeVar on the left of a type test", "e.g. `T is f64`")
        return None
    op, right_node = node.ops[0], node.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)):
        types = _type_list(tr, right_node)
        if types is None:
            raise tr.error(right_node, "`in` on a type takes a tuple of types", "write e.g. `T in (f16, bf16)`")
        return (left in types) == isinstance(op, ast.In)
    if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        right = type_operand(tr, right_node)
        if right is None:
            raise tr.error(right_node, f"{ast.unparse(right_node)!r} is not a type",
                           "compare a TypeVar with a scalar type, e.g. `T is f64`")
        return (left == right) == isinstance(op, (ast.Is, ast.Eq))
    raise tr.error(node, "a type is tested with `is`, `is not`, `==`, `!=`, `in` or `not in`",
                   "e.g. `if T is f64:` or `if T in (f16, bf16):`")


def type_spelling(typevars: dict[str, TypeVarBinding], ty: ScalarType) -> str:
    """How the source names ``ty`` in a hint: ``T`` where a TypeVar of the instance is bound to
    it (the conversion must work for every instance), else the type's own name."""
    for name, binding in typevars.items():
        if binding.bound == ty:
            return name
    return ty.name


def _element_typevar(annotation: ast.expr | None, typevars: dict[str, TypeVarBinding]) -> str | None:
    """``T`` of ``x: T``, ``Slice[T]``, ``Ptr[T]``, ``Tensor[T, 2]`` when T is one of ``typevars``."""
    node = annotation
    if isinstance(node, ast.Subscript):
        node = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
    return node.id if isinstance(node, ast.Name) and node.id in typevars else None


def bind_from_arguments(
    caller: FunctionTranslator, fdef: ast.FunctionDef, typevars: dict[str, TypeVarBinding], args: list[ir.Expr],
    node: ast.Call,
) -> dict[str, TypeVarBinding]:
    """Each TypeVar of ``fdef``'s parameters bound from the call's arguments (scalars by their
    type, views by their element type; literals only where no typed argument binds it)."""
    bound = dict(typevars)
    for weak_pass in (False, True):
        for arg, param in zip(args, fdef.args.args):
            name = _element_typevar(param.annotation, typevars)
            if name is None or (isinstance(arg, ir.Const) and arg.weak) != weak_pass:
                continue
            if bound[name].bound is not None:
                continue
            is_view = isinstance(param.annotation, ast.Subscript)
            if is_view != isinstance(arg.ty, ViewType):
                raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() needs "
                                         f"{'a view' if is_view else 'a scalar'}, got {type_name(arg.ty)}")
            ty = arg.ty.elem if isinstance(arg.ty, ViewType) else as_scalar(arg.ty)
            tv = typevars[name]
            if ty is None or ty not in tv.constraints:
                raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() is {type_name(arg.ty)}, but "
                                         f"{name} allows only {', '.join(c.name for c in tv.constraints)}",
                                   "convert the argument, or add the type to the TypeVar's constraints")
            bound[name] = TypeVarBinding(name, tv.constraints, ty)
    for name, binding in bound.items():
        if binding.bound is None:
            raise caller.error(node, f"cannot infer {name} for {fdef.name}() from its arguments",
                               f"pass a typed value for a parameter annotated {name}")
    return bound


def extern_symbol(module: ModuleSource, node: ast.expr, pattern: str,
                  typevars: dict[str, TypeVarBinding]) -> tuple[str, str]:
    """The C symbol of one instance of an ``@extern`` and, for a C++ template (``"f<{T}>"``),
    the call its generated ``extern "C"`` wrapper makes: ``("__ox_tpl_f_float", "f<float>")``.
    A name pattern (``"f_{T}"``) takes oxide's type names: ``("f_f32", "")``."""
    template = "<" in pattern
    named = _PLACEHOLDER.findall(pattern)
    for name in named:
        if name not in typevars:
            raise module.error(node, f"the @extern symbol {pattern!r} names {{{name}}}, which is not a TypeVar of "
                                     "its parameters", "each {T} must be a TypeVar its parameters use")
    for name in typevars:
        if name not in named:
            example = pattern.split("<")[0]
            raise module.error(node, f"the generic @extern symbol {pattern!r} does not name its type {name}",
                               f"write e.g. \"{example}_{{{name}}}\" (one C function per type) or "
                               f"\"{example}<{{{name}}}>\" (a C++ template)")
    text = pattern
    for name, binding in typevars.items():
        assert binding.bound is not None
        text = text.replace("{" + name + "}", c_type(binding.bound) if template else binding.bound.name)
    if template:
        return "__ox_tpl_" + "_".join(part for part in _IDENT_SPLIT.split(text) if part), text
    if not _C_IDENT.fullmatch(text):
        raise module.error(node, f"the @extern symbol {text!r} is not a C identifier",
                           "a C++ template is written with its arguments: \"f<{T}>\"")
    return text, ""


_IDENT_SPLIT = re.compile(r"\W+")
_PLACEHOLDER = re.compile(r"\{(\w*)\}")
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def instance_key(module: ModuleSource, fdef: ast.FunctionDef, param_types: list[Type],
                 constexprs: Mapping[str, int | bool]) -> tuple[str, str, tuple[str, ...], tuple[tuple[str, int | bool], ...]]:
    """What tells apart the instances of a device function: its parameter types (a view's kind
    too) and its compile-time arguments."""
    return (module.name, fdef.name, tuple(type_name(t) + (":" + t.kind if isinstance(t, ViewType) else "")
                                          for t in param_types), tuple(sorted(constexprs.items())))
