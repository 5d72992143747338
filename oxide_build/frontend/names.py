"""Names in the translator: the signature (parameters and the return type from their
annotations, annotations.py), what a name or a dotted attribute denotes in an expression (a
local, a compile-time value, a module constant, a special register), and element types.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING
import math

from oxide.abi.views import ViewKind
from oxide.errors import CompileError
from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import BOOL, F64, VOID, VectorType, ThreadIndexType, Type, ViewType, VoidType
from ..scan import ModuleSource
from .oxide_names import known_oxide_names, unknown_oxide_name
from .annotations import TypeVarBinding, oxide_name, resolve_annotation
from .optional_views import may_be_none_error, present_name
from .promotion import literal_type
from .constants import Constants, _constant_value, _is_number_expression
from .scope import Scope, node_loc

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["Names"]

# Python's math constants, usable in kernels as float literals
PYTHON_MATH_CONSTANTS: dict[str, float] = {
    "pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}


class Names:
    """The signature, what a name denotes in an expression, element types."""

    def __init__(self, builder: ProgramBuilder, module: ModuleSource, typevars: dict[str, TypeVarBinding],
                 scope: Scope, constants: Constants) -> None:
        self.builder = builder
        self.module = module
        self.typevars = typevars
        self.scope = scope
        self.constants = constants

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def translate_signature(self, is_kernel: bool, param_types: list[Type] | None = None) -> None:
        """The parameters and the return type of ``scope.fdef`` (``param_types``: a device
        function instance's, from its call; else from the annotations)."""
        fdef = self.scope.fdef
        args = fdef.args
        for bad, label in ((args.vararg, "*args"), (args.kwarg, "**kwargs")):
            if bad is not None:
                raise self.error(bad, f"{label} parameters are not supported", "list every parameter with its type")
        if args.kwonlyargs or args.posonlyargs:
            node = (args.kwonlyargs or args.posonlyargs)[0]
            raise self.error(node, "keyword-only and positional-only parameters are not supported",
                             "use plain positional parameters")
        if args.defaults:
            raise self.error(args.defaults[0], "default parameter values are not supported",
                             "pass every argument explicitly")
        for i, arg in enumerate(args.args):
            if arg.arg in self.constants.values:
                continue  # a compile-time value, not a kernel parameter
            if param_types is not None:
                ty = param_types[i]
            else:
                if arg.annotation is None:
                    raise self.error(arg, f"parameter {arg.arg!r} has no type annotation",
                                     "annotate it, e.g. `x: Slice[f32]` or `a: f32`")
                resolved = resolve_annotation(self.module, arg.annotation, self.typevars,
                                              f"parameter {arg.arg!r}")
                if isinstance(resolved, TypeVarBinding):
                    raise self.error(arg, f"type variable {resolved.name} of {arg.arg!r} is not bound")
                ty = resolved
            if isinstance(ty, VoidType):
                raise self.error(arg, f"parameter {arg.arg!r} cannot be None")
            if isinstance(ty, ViewType) and ty.kind == ViewKind.PTR:
                raise self.error(arg, f"Ptr[{ty.elem.name}] is only for the parameters of @extern C++ functions",
                                 "take a Slice/DisjointSlice/MutSlice here and pass it to the extern")
            if is_kernel and isinstance(ty, ScalarType) and ty.kind == "fp8":
                raise self.error(arg, f"a kernel parameter cannot be an {ty.name} scalar",
                                 f"take an f32 and convert it in the kernel, ox.{ty.name}(x); views of "
                                 f"{ty.name} (Slice[ox.{ty.name}]) are fine")
            if is_kernel and isinstance(ty, ThreadIndexType):
                raise self.error(arg, "a kernel parameter cannot be a ThreadIndex",
                                 "call thread.index_1d() inside the kernel")
            if isinstance(ty, ViewType) and ty.optional:
                # the view and its flag (frontend/optional_views.py; the flag slot of oxide.abi.params)
                flag = present_name(arg.arg)
                self.scope.params += [ir.Param(arg.arg, ty.present), ir.Param(flag, BOOL)]
                self.scope.optional_views[arg.arg] = flag
                self.scope.locals[flag] = BOOL
            else:
                self.scope.params.append(ir.Param(arg.arg, ty))
            self.scope.param_names.add(arg.arg)
            self.scope.locals[arg.arg] = ty
        if fdef.returns is not None:
            ret = resolve_annotation(self.module, fdef.returns, self.typevars, "the return type")
            if isinstance(ret, TypeVarBinding):
                raise self.error(fdef.returns, f"the return type {ret.name} is not bound by any parameter",
                                 "a TypeVar in the return type must also appear in a parameter")
            if isinstance(ret, ViewType):
                raise self.error(fdef.returns, "functions cannot return views",
                                 "return scalars; write results into a view parameter")
            self.scope.ret = ret
        if is_kernel and self.scope.ret not in (None, VOID):
            raise self.error(fdef.returns or fdef, "a kernel cannot return a value",
                             "annotate it `-> None` and write results into a DisjointSlice parameter")
        if is_kernel:
            self.scope.ret = VOID

    def name(self, node: ast.Name) -> ir.Expr:
        name = node.id
        if name in self.constants.values:
            return self.constants.constant_expr(self.constants.values[name], node)
        if name in self.scope.locals:
            ty = self.scope.locals[name]
            if isinstance(ty, ViewType) and ty.optional:
                if name not in self.scope.present:
                    raise may_be_none_error(self.module, node, ty)
                return ir.Var(name, ty.present, node_loc(node))
            return ir.Var(name, ty, node_loc(node))
        sym = self.module.symbols.get(name)
        if sym is not None and sym.kind == "constant":
            value = _constant_value(sym)
            if isinstance(value, bool):
                return ir.Const(value, BOOL, node_loc(node))
            return ir.Const(value, literal_type(value), node_loc(node), weak=True)
        if sym is not None and sym.kind == "unknown":
            decl = self.builder.module_array(self.module, name)
            if decl is not None:  # ox.constant.array / ox.global_memory.array / a tuple of numbers
                return ir.ModuleArray(decl.symbol, decl.ty, node_loc(node))
        if sym is not None and sym.kind == "from" and sym.target.startswith("math:") \
                and sym.target[5:] in PYTHON_MATH_CONSTANTS:  # from math import pi
            return ir.Const(PYTHON_MATH_CONSTANTS[sym.target[5:]], F64, node_loc(node), weak=True)
        if name in self.scope.assign_counts:  # assigned somewhere, just not before this use
            raise self.error(node, f"{name!r} is used before it is assigned",
                             "assign it on every path before this use")
        value_node = getattr(sym.node, "value", None) if sym is not None else None
        if value_node is not None and _is_number_expression(value_node):
            raise self.error(node, f"the module constant {name!r} = {ast.unparse(value_node)} does not fold to a "
                                   f"64-bit number", f"fix its definition at {self.module.path.name}:"
                                                     f"{sym.node.lineno}: no division by zero, no value past 64 bits")  # type: ignore[union-attr]
        if isinstance(value_node, ast.Call):  # c = ox.const.array(...): a misspelled oxide name at module level
            called = oxide_name(self.module, value_node.func)
            if called and called not in known_oxide_names():
                message, hint = unknown_oxide_name(called)
                raise self.error(value_node.func, f"{message} (in the definition of {name!r}, used at line "
                                 f"{node.lineno})", hint)
        if sym is not None:
            raise self.error(node, f"{name!r} cannot be used as a value in a kernel",
                             "only local variables, parameters and module-level number constants are values")
        raise self.error(node, f"unknown name {name!r}", "define it, or pass it as a parameter")

    def array_element_type(self, node: ast.expr) -> ScalarType | VectorType:
        """The element type of a shared or local array: a scalar, or a vector
        (``ox.shared.array(128, f32x4)``, CUDA's ``__shared__ float4 pos[128]``)."""
        ty = resolve_annotation(self.module, node, self.typevars, "the element type")
        if isinstance(ty, VectorType):
            return ty
        return self.element_type(node)

    def element_type(self, node: ast.expr) -> ScalarType:
        """The scalar type an intrinsic's type argument names (``shared.array(n, f32)``)."""
        ty = resolve_annotation(self.module, node, self.typevars, "the element type")
        if isinstance(ty, VectorType):
            raise self.error(node, f"{ty.name} is a vector type; a scalar element type goes here",
                             f"name one of i8 … u64, f16, bf16, f32, f64, bool (e.g. {ty.elem.name})")
        if isinstance(ty, TypeVarBinding) or not isinstance(ty, ScalarType):
            raise self.error(node, f"{ast.unparse(node)} is not a scalar element type",
                             "name one of i8 … u64, f16, bf16, f32, f64, bool (or a TypeVar bound to them)")
        return ty
