"""The Python implementations the CPU device runs in place of CUDA C++: ``cpu=`` of ``@ox.extern``
and ``@ox.extern_kernel``.

``@ox.extern("fast_tanh", sources=[...], cpu=fast_tanh_on_cpu)`` names a function of the kernel
language with the extern's signature. On the CPU device (``CompileOptions.device == "cpu"``) a
call of the extern is a call of that device function; for an ``@extern_kernel``, the function is
compiled as the kernel the CPU device launches under the C++ kernel's symbol. The GPU build never
compiles it (its code is the C++'s, unchanged), but checks its signature all the same, so a CPU
implementation that disagrees with its extern fails the wheel build, not only the CPU tests.

Like every name the compiler follows, ``cpu=`` is read from the source (a function of the module,
or imported from another module of the project), never by importing it.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.abi.views import ViewKind
from oxide.lang.types import ScalarType

from ..ir.types import Type, ViewType, VoidType, type_name
from ..scan import ModuleSource, _names_oxide
from .annotations import TypeVarBinding, resolve_annotation

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["CpuImplementation", "cpu_implementation", "check_cpu_signature"]

CpuImplementation = tuple[ModuleSource, ast.FunctionDef]

_DECORATORS = ("kernel", "extern", "extern_kernel")


def cpu_implementation(builder: ProgramBuilder, module: ModuleSource, dec: ast.expr, stub: ast.FunctionDef,
                       what: str) -> CpuImplementation | None:
    """The function ``cpu=`` of the decorator ``dec`` names (None without one), a plain function
    of the kernel language."""
    if not isinstance(dec, ast.Call):
        return None
    node = next((kw.value for kw in dec.keywords if kw.arg == "cpu"), None)
    if node is None:
        return None
    found = builder.resolve_function(module, node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    if found is None:
        raise module.error(node, f"cpu= of @{what} {stub.name!r} must name a function of the kernel language "
                                 f"(defined in this module, or imported from one of the project's modules), "
                                 f"got {ast.unparse(node)!r}",
                           f"define the CPU implementation before the declaration: def {stub.name}_on_cpu(...): ...")
    impl_module, impl = found
    for d in impl.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        named = next((n for n in _DECORATORS if _names_oxide(impl_module, target, n)), None)
        if named is not None or impl.name in impl_module.kernels:
            raise module.error(node, f"the CPU implementation {impl.name}() of {stub.name!r} is "
                                     f"@{named or 'kernel'}, not a plain function",
                               "write it as a plain function (optionally @ox.device) with the declaration's "
                               "signature" + ("; for an @extern_kernel, its body is the kernel's"
                                              if what == "extern_kernel" else ""))
    args = impl.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        raise impl_module.error(impl, f"the CPU implementation {impl.name}() must take plain positional parameters")
    return found


def check_cpu_signature(builder: ProgramBuilder, impl: CpuImplementation, stub_module: ModuleSource, stub: ast.FunctionDef,
                        param_types: list[Type], ret: Type, what: str) -> None:
    """A located ``CompileError`` unless the CPU implementation takes ``param_types`` (the
    extern's, at this call: a generic one's TypeVars bound) and returns ``ret``. A ``Ptr[T]``
    parameter of the extern is a 1-D view of ``T`` in the implementation (it gets the view the
    call passes)."""
    impl_module, fdef = impl
    declared = f"the @{what} {stub.name}() it implements on the CPU device ({stub_module.path.name}:{stub.lineno})"
    shape = f"def {fdef.name}({', '.join(f'{a.arg}: {type_name(t)}' for a, t in zip(stub.args.args, param_types))})"
    if not isinstance(ret, VoidType):
        shape += f" -> {type_name(ret)}"
    hint = f"give it the signature of {stub.name}(): {shape}"
    params = fdef.args.args
    if len(params) != len(param_types):
        raise impl_module.error(fdef, f"the CPU implementation {fdef.name}() takes {len(params)} parameter(s), "
                                      f"{declared} takes {len(param_types)}", hint)
    own = builder.typevars_of(impl_module, fdef)
    # a generic implementation: its TypeVars bound by the extern's types, then compared
    for p, want in zip(params, param_types):
        if p.annotation is None:
            raise impl_module.error(p, f"parameter {p.arg!r} of the CPU implementation {fdef.name}() has no type "
                                       "annotation", hint)
        got = resolve_annotation(impl_module, p.annotation, own, f"parameter {p.arg!r} of {fdef.name}()")
        if isinstance(got, TypeVarBinding) and got.bound is None:
            scalar = want.elem if isinstance(want, ViewType) and isinstance(p.annotation, ast.Subscript) else want
            if isinstance(scalar, ScalarType) and scalar in got.constraints:
                own[got.name] = TypeVarBinding(got.name, got.constraints, scalar)
    for p, want in zip(params, param_types):
        got = resolve_annotation(impl_module, p.annotation, own, f"parameter {p.arg!r} of {fdef.name}()")
        if not _same_parameter(got, want):
            shown = got.name if isinstance(got, TypeVarBinding) else type_name(got)
            raise impl_module.error(p.annotation or p, f"parameter {p.arg!r} of the CPU implementation {fdef.name}() "
                                                       f"is {shown}; {declared} takes {type_name(want)} there", hint)
    got_ret: Type | TypeVarBinding = VoidType()
    if fdef.returns is not None:
        got_ret = resolve_annotation(impl_module, fdef.returns, own, f"the return type of {fdef.name}()")
    if isinstance(got_ret, TypeVarBinding):
        got_ret = got_ret.bound if got_ret.bound is not None else VoidType()
    if type(got_ret) is not type(ret) or got_ret != ret:
        raise impl_module.error(fdef.returns or fdef, f"the CPU implementation {fdef.name}() returns "
                                                      f"{type_name(got_ret)}; {declared} returns {type_name(ret)}", hint)


def _same_parameter(got: Type | TypeVarBinding, want: Type) -> bool:
    if isinstance(got, TypeVarBinding):
        return False  # unbound: the extern's type is not one of its constraints
    if isinstance(want, ViewType) and want.kind == ViewKind.PTR:
        return isinstance(got, ViewType) and not got.is_tensor and got.elem == want.elem
    return type(got) is type(want) and got == want
