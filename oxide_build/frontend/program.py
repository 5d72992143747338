"""Builds the typed IR program for one module: every kernel instance (one per TypeVar
constraint) and every device-function instance they reach (one per call-site types)."""
from __future__ import annotations

import ast
import os
import itertools
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Mapping

from oxide.abi.params import CONSTEXPR_PARAM, SCALAR_PARAM, STRUCT_PARAM, TENSOR_MAP_PARAM, VECTOR_PARAM
from oxide.abi.views import ViewKind
from oxide.errors import CompileError, SourceLocation
from oxide.lang.types import ScalarType
from oxide.runtime.manifest import ErrorSite, KernelSpec, ParamSpec

from ..ir import nodes as ir
from ..ir.verify import IRError, verify_program
from ..ir.types import (
    BOOL, ArrayType, StructType, TensorMapType, ThreadIndexType, Type, VectorType, ViewType, VoidType, as_scalar,
    scalar_leaves,
    type_name,
)
from ..scan import ModuleSource, ProjectIndex, _names_oxide, constant_value
from .annotations import TypeVarBinding, dotted_parts, optional_inner, oxide_name, resolve_annotation, scalar_type_named
from .optional_views import is_present_name, present_name
from .decorator_arguments import module_int, module_strings
from .cpu_implementations import check_cpu_signature, cpu_implementation
from .generics import bind_from_arguments, extern_symbol, instance_key
from .literal_types import LiteralTypes, decide_literal_types
from .translate import FunctionTranslator
from .module_memory import check_constant_memory, module_array_decl
from .view_values import device_param_type

__all__ = ["ProgramBuilder", "build_program", "extern_source_path", "FrontendResult", "located_error"]


@dataclass
class FrontendResult:
    program: ir.Program
    kernels: list[KernelSpec]
    error_sites: list[ErrorSite]


@dataclass(frozen=True)
class LiteralDisagreement:
    """A function whose translation recorded its literal locals meeting other types than
    literal_types.py's walk decided with (``met`` against ``decided.expected``), or that the
    walk found failing where the translation did not: the walk lacks one of the translation's
    rules. The translation stands (it checked every value it made); the record is for tests."""

    file: str
    function: str
    line: int
    decided: LiteralTypes
    met: dict[str, ScalarType]


@dataclass
class _Instance:
    function: ir.Function | None  # None while being translated (recursion check)


@dataclass
class ProgramBuilder:
    index: ProjectIndex
    module: ModuleSource
    bounds_check: bool = True
    # CompileOptions.device: on "cpu", the CPU implementations (cpu=) of externs take their place
    device: str = "cuda"
    functions: list[ir.Function] = field(default_factory=list)
    # (module, function, argument types, Constexpr arguments) -> its instance
    instances: dict[tuple[str, str, tuple[str, ...], tuple[tuple[str, int | bool], ...]], _Instance] = field(default_factory=dict)
    error_sites: list[ErrorSite] = field(default_factory=list)
    site_files: dict[Path, str] = field(default_factory=dict)  # a module's path -> its error sites' file
    call_stack: list[tuple[str, str]] = field(default_factory=list)
    externs: dict[str, ir.ExternFunction] = field(default_factory=dict)
    extern_kernels: list[ir.ExternFunction] = field(default_factory=list)
    arrays: dict[str, ir.ModuleArrayDecl] = field(default_factory=dict)  # symbol -> module-level array
    # translations that met literal locals otherwise than literal_types.py decided (none is
    # expected: tests/test_literal_types.py holds every example and fixture to that)
    literal_disagreements: list[LiteralDisagreement] = field(default_factory=list)
    _counter: int = 0

    def module_array(self, module: ModuleSource, name: str) -> ir.ModuleArrayDecl | None:
        """The module-level constant/global array ``name`` of ``module`` (declared in the program
        on first use), or None when ``name`` is none."""
        decl = module_array_decl(self, module, name)
        if decl is not None and decl.symbol not in self.arrays:
            self.arrays[decl.symbol] = decl
            check_constant_memory(module, decl, list(self.arrays.values()))
        return decl

    def fresh_name(self, hint: str) -> str:
        self._counter += 1
        return f"${hint}{self._counter}"

    def error_at(self, module: ModuleSource, loc: ir.Loc, message: str, hint: str = "") -> CompileError:
        lines = module.lines
        src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else ""
        return CompileError(message, SourceLocation(str(module.path), loc.line, loc.col, src), hint)

    def relative_file(self, module: ModuleSource) -> str:
        """The module's path relative to the source root: what artifacts record (no build paths)."""
        return _relative_to_root(self.index, module)

    def add_error_site(self, kind: str, kernel: str, module: ModuleSource, node: ast.AST, what: str) -> int:
        file = self.site_files.get(module.path)
        if file is None:
            try:  # relative, so the manifest does not leak build paths and wheels are reproducible
                file = module.path.resolve().relative_to(self.index.root).as_posix()
            except ValueError:
                file = module.path.name
            self.site_files[module.path] = file  # a path resolves once (every bounds check has a site)
        site = ErrorSite(
            id=len(self.error_sites) + 1, kind=kind, kernel=kernel, file=file,
            line=getattr(node, "lineno", 0), col=getattr(node, "col_offset", 0) + 1, what=what,
        )
        self.error_sites.append(site)
        return site.id

    # ---- name resolution ---------------------------------------------------------------------

    def resolve_function(self, module: ModuleSource, func: ast.expr, depth: int = 0) -> tuple[ModuleSource, ast.FunctionDef] | None:
        if depth > 8:
            return None
        if isinstance(func, ast.Name):
            return self._resolve_symbol(module, func.id, depth)
        parts = dotted_parts(func)
        if not parts or len(parts) < 2:
            return None
        sym = module.symbols.get(parts[0])
        if sym is None:
            return None
        if sym.kind == "module":
            base = sym.target
        elif sym.kind == "from":
            src, name = sym.target.split(":")
            base = f"{src}.{name}" if src else name
        else:
            return None
        mod_name = ".".join([base, *parts[1:-1]])
        target = self.index.module(mod_name)
        if target is None:
            return None
        return self._resolve_symbol(target, parts[-1], depth + 1)

    def _resolve_symbol(self, module: ModuleSource, name: str, depth: int) -> tuple[ModuleSource, ast.FunctionDef] | None:
        sym = module.symbols.get(name)
        if sym is None:
            return None
        if sym.kind == "function":
            return module, module.functions[name]
        if sym.kind == "from":
            src, attr = sym.target.split(":")
            target = self.index.module(src) if src else None
            if target is None:
                return None
            return self._resolve_symbol(target, attr, depth + 1) if depth < 8 else None
        return None

    def typevars_of(self, module: ModuleSource, fdef: ast.FunctionDef) -> dict[str, TypeVarBinding]:
        result: dict[str, TypeVarBinding] = {}
        annotations = [a.annotation for a in fdef.args.args if a.annotation is not None]
        if fdef.returns is not None:
            annotations.append(fdef.returns)
        for ann in annotations:
            for n in ast.walk(ann):
                if isinstance(n, ast.Name) and n.id not in result:
                    sym = module.symbols.get(n.id)
                    if sym is not None and sym.kind == "typevar":
                        result[n.id] = TypeVarBinding(n.id, self._constraints(module, sym.node))
        return result

    def _constraints(self, module: ModuleSource, node: ast.AST | None) -> tuple[ScalarType, ...]:
        assert isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call)
        call = node.value
        if not call.args or not isinstance(call.args[0], ast.Constant):
            raise module.error(call, "TypeVar needs a name string first: TypeVar(\"T\", f32, f64)")
        if len(call.args) < 2:
            raise module.error(call, "a TypeVar needs its constraints listed",
                               "write e.g. TypeVar(\"T\", f32, f64); every constraint is compiled")
        out = []
        for arg in call.args[1:]:
            ty = resolve_annotation(module, arg, {}, "a TypeVar constraint")
            if not isinstance(ty, ScalarType):
                raise module.error(arg, "TypeVar constraints must be scalar types")
            if ty in out:
                raise module.error(arg, f"the TypeVar lists {ty.name} twice", "list each type once")
            out.append(ty)
        for kw in call.keywords:
            if kw.arg != "acc":
                raise module.error(kw.value if kw.arg is None else kw, f"unknown TypeVar option {kw.arg or '**'!r}",
                                   "TypeVar takes a name, its constraints and optionally acc={f16: f32, ...}")
            self._check_accumulate_types(module, kw.value, out)
        return tuple(out)

    def _check_accumulate_types(self, module: ModuleSource, node: ast.expr, constraints: list[ScalarType]) -> None:
        """``acc={f16: f32, bf16: f32}``: constraints mapped to the type ``ox.acc_type(T)`` gives."""
        if not isinstance(node, ast.Dict):
            raise module.error(node, "acc= takes a dict from constraints to types", "write e.g. acc={f16: f32, bf16: f32}")
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise module.error(value, "acc= takes a dict written out", "write e.g. acc={f16: f32}")
            k, v = scalar_type_named(module, key), scalar_type_named(module, value)
            if k is None or k not in constraints:
                raise module.error(key, f"{ast.unparse(key)} in acc= is not one of the TypeVar's constraints",
                                   f"the constraints are {', '.join(c.name for c in constraints)}")
            if v is None:
                raise module.error(value, f"{ast.unparse(value)!r} in acc= is not a scalar type", "e.g. f32")

    # ---- kernels -----------------------------------------------------------------------------

    def kernel_options(self, module: ModuleSource, fdef: ast.FunctionDef) -> dict[str, Any]:
        """The keywords of ``@kernel(...)``: bounds_check, launch_bounds, max_registers, constexprs."""
        for dec in fdef.decorator_list:
            if isinstance(dec, ast.Call) and _names_oxide(module, dec.func, "kernel"):
                opts: dict[str, Any] = {}
                if dec.args:
                    raise module.error(dec, "@kernel options are keywords, e.g. @kernel(bounds_check=False)")
                for kw in dec.keywords:
                    if kw.arg in ("bounds_check", "index32"):
                        if not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)):
                            raise module.error(kw.value, f"{kw.arg} must be True or False")
                        opts[kw.arg] = kw.value.value
                    elif kw.arg in ("launch_bounds", "max_registers"):
                        value = module_int(module, kw.value)
                        limit = 1024 if kw.arg == "launch_bounds" else 255
                        if value is None or not 0 < value <= limit:
                            got = "" if value is None else f" (it is {value})"
                            raise module.error(kw.value, f"{kw.arg} must be an integer from 1 to {limit}{got}",
                                               "write a literal or a module-level integer constant, e.g. BLOCK = 256")
                        opts[kw.arg] = value
                    elif kw.arg == "constexprs":
                        opts["constexprs"] = self._constexpr_values(module, fdef, kw.value)
                    else:
                        raise module.error(kw.value, f"unknown @kernel option {kw.arg!r}",
                                           "known options: bounds_check, launch_bounds, max_registers, constexprs, index32")
                return opts
        return {}

    def _constexpr_values(self, module: ModuleSource, fdef: ast.FunctionDef, node: ast.expr
                          ) -> dict[str, list[int | bool]]:
        if not isinstance(node, ast.Dict):
            raise module.error(node, "constexprs must be a dict literal: {\"BLOCK\": [128, 256]}")
        params = {a.arg: a for a in fdef.args.args}
        out: dict[str, list[int | bool]] = {}
        for key, value in zip(node.keys, node.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise module.error(key or node, "constexprs keys are parameter names (strings)")
            param = params.get(key.value)
            if param is None:
                raise module.error(key, f"{fdef.name} has no parameter {key.value!r}")
            if not (param.annotation is not None and isinstance(param.annotation, ast.Subscript)
                    and oxide_name(module, param.annotation.value) == "Constexpr"):
                raise module.error(param, f"parameter {key.value!r} must be annotated ox.Constexpr[int] "
                                   "to be listed in constexprs")
            elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            values = [constant_value(e, _constants(module)) for e in elts]
            if _constexpr_kind(module, param.annotation) == "bool":
                if not values or any(not isinstance(v, bool) for v in values):
                    raise module.error(value, f"the values of {key.value!r} must be True and/or False")
            elif not values or any(not isinstance(v, int) or isinstance(v, bool) for v in values):
                raise module.error(value, f"the values of {key.value!r} must be integer constants")
            if len(set(values)) != len(values):
                raise module.error(value, f"the values of {key.value!r} repeat a value", "list each value once")
            out[key.value] = values  # type: ignore[assignment]
        for name, arg in params.items():
            if (isinstance(arg.annotation, ast.Subscript) and oxide_name(module, arg.annotation.value) == "Constexpr"
                    and name not in out):
                raise module.error(arg, f"the Constexpr parameter {name!r} needs its values listed",
                                   f"write @kernel(constexprs={{\"{name}\": [...]}})")
        return out

    def build_kernels(self) -> list[KernelSpec]:
        specs: list[KernelSpec] = []
        for name in self.module.kernels:
            fdef = self.module.functions[name]
            if name in self.module.extern_kernels:
                specs.append(self.extern_kernel(fdef))
                continue
            opts = self.kernel_options(self.module, fdef)
            bounds = opts.get("bounds_check", self.bounds_check)
            typevars = self.typevars_of(self.module, fdef)
            constexprs: dict[str, list[int | bool]] = opts.get("constexprs", {})
            for arg in fdef.args.args:
                if (isinstance(arg.annotation, ast.Subscript) and oxide_name(self.module, arg.annotation.value) == "Constexpr"
                        and arg.arg not in constexprs):
                    raise self.module.error(arg, f"the Constexpr parameter {arg.arg!r} needs its values listed",
                                            f"write @kernel(constexprs={{\"{arg.arg}\": [...]}})")
            names = list(typevars)
            cnames = list(constexprs)
            type_combos = list(itertools.product(*(typevars[n].constraints for n in names))) or [()]
            value_combos = list(itertools.product(*(constexprs[n] for n in cnames))) or [()]
            for combo, values in itertools.product(type_combos, value_combos):
                bound = {n: TypeVarBinding(n, typevars[n].constraints, t) for n, t in zip(names, combo)}
                # a bool's variant is named and picked by its int (the runtime reads True as 1)
                parts = [t.name for t in combo] + [f"{n}{int(v)}".replace("-", "m") for n, v in zip(cnames, values)]
                symbol = name if not parts else f"{name}_{'_'.join(parts)}"
                spec = {n: t.name for n, t in zip(names, combo)}
                spec.update({n: str(int(v)) for n, v in zip(cnames, values)})
                translator, function = self.translate_function(
                    self.module, fdef, bound, symbol, kernel_name=name, bounds_check=bounds, is_kernel=True,
                    constexprs=dict(zip(cnames, values)))
                function.specialization = spec
                function.launch_bounds = opts.get("launch_bounds")
                function.max_registers = opts.get("max_registers")
                function.index32 = opts.get("index32", True)
                function.preconditions = list(translator.launch.preconditions)
                self.functions.append(function)
                # an optional view's flag is its ParamSpec's last slot, no parameter of its own
                by_name = {p.name: _param_spec(p, p.name in translator.scope.optional_views)
                           for p in translator.scope.params if not is_present_name(p.name)}
                specs.append(KernelSpec(
                    name=name, symbol=symbol,
                    params=tuple(by_name.get(a.arg) or ParamSpec(a.arg, CONSTEXPR_PARAM, "i64") for a in fdef.args.args),
                    specialization=spec, file=self.module.path.name, line=fdef.lineno,
                ))
        return specs

    def extern_kernel(self, fdef: ast.FunctionDef) -> KernelSpec:
        """A CUDA C++ ``__global__`` function launched like a Python kernel: its stub gives the
        parameters, its sources give the code."""
        module = self.module
        dec = next(d for d in fdef.decorator_list if isinstance(d, ast.Call) and _names_oxide(module, d.func, "extern_kernel"))
        symbol, sources = self._extern_decorator(module, dec, "extern_kernel")
        generic = self.typevars_of(module, fdef)
        if generic:
            raise module.error(fdef, f"the @extern_kernel stub {fdef.name!r} cannot be generic (it uses "
                                     f"{', '.join(sorted(generic))}): a C++ kernel is one entry point with one signature",
                               "declare one stub per type, each naming its C++ kernel "
                               "(@ox.extern_kernel(\"scale_f32\", ...) def scale_f32(a: f32, ...)), and choose "
                               "between them in Python; or call a generic @ox.extern device function from a "
                               "generic Python kernel")
        translator = FunctionTranslator(self, module, fdef, {}, True, fdef.name, False)
        translator.translate_signature()
        for name in translator.scope.optional_views:
            arg = next(a for a in fdef.args.args if a.arg == name)
            raise module.error(arg, f"a parameter of an @extern_kernel cannot be an optional view ({name!r})",
                               "take the view (C++ gets its pointer) and pass an empty array where there is none, "
                               "or write the kernel in Python")
        for p, arg in zip(translator.scope.params, (a for a in fdef.args.args if a.arg in translator.scope.param_names)):
            if isinstance(p.ty, (StructType, VectorType)):  # oxide passes it as its fields; C++ takes one value
                raise module.error(arg, f"a parameter of an @extern_kernel cannot be a {'struct' if isinstance(p.ty, StructType) else 'vector'} "
                                        f"({p.ty.name})",
                                   "pass its fields as scalar parameters, or write the kernel in Python")
        impl = cpu_implementation(self, module, dec, fdef, "extern_kernel")
        if impl is not None:
            check_cpu_signature(self, impl, module, fdef, [p.ty for p in translator.scope.params], VoidType(),
                                "extern_kernel")
        if impl is not None and self.device == "cpu":
            # the CPU device launches the Python implementation, compiled as a kernel under the C++ symbol
            compiled, function = self.translate_function(impl[0], impl[1], {}, symbol, kernel_name=fdef.name,
                                                         bounds_check=self.bounds_check, is_kernel=True)
            function.preconditions = list(compiled.launch.preconditions)
            self.functions.append(function)
        else:
            self.extern_kernels.append(ir.ExternFunction(symbol, translator.scope.params, VoidType(), sources,
                                                         str(module.path), fdef.lineno))
        return KernelSpec(name=fdef.name, symbol=symbol, params=tuple(_param_spec(p) for p in translator.scope.params),
                          specialization={}, file=module.path.name, line=fdef.lineno)

    def _extern_decorator(self, module: ModuleSource, dec: ast.expr, what: str) -> tuple[str, list[str]]:
        if not (isinstance(dec, ast.Call) and dec.args and isinstance(dec.args[0], ast.Constant)
                and isinstance(dec.args[0].value, str)):
            raise module.error(dec, f"@{what} needs the C symbol name first: @{what}(\"name\", sources=[...])")
        sources: list[str] = []
        for kw in dec.keywords:
            if kw.arg == "cpu":
                continue  # the CPU implementation: cpu_implementations.py
            if kw.arg != "sources":
                raise module.error(kw.value, f"unknown @{what} option {kw.arg!r}", "known options: sources, cpu")
            names = module_strings(module, kw.value)
            if names is None:
                raise module.error(kw.value, "sources must be a list of file names (strings)",
                                   "write string literals or module-level string constants, or name a "
                                   "module-level list of them: SOURCES = [\"csrc/f.cu\"]")
            sources = [str(extern_source_path(module.path, name)) for name in names]
        return dec.args[0].value, sources

    def build_exports(self) -> None:
        """Compiles each ``@device(export="name")`` function of the module with C linkage."""
        for name, symbol in self.module.exports.items():
            fdef = self.module.functions[name]
            if self.typevars_of(self.module, fdef):
                raise self.module.error(fdef, f"the exported device function {name!r} cannot be generic",
                                        "give its parameters concrete types; C++ sees one signature")
            _, function = self.translate_function(self.module, fdef, {}, symbol, kernel_name=name,
                                                  bounds_check=self.bounds_check)
            for p in function.params:
                if isinstance(p.ty, ThreadIndexType):
                    raise self.module.error(fdef, f"the exported function {name!r} cannot take a ThreadIndex")
                if is_present_name(p.name):
                    view = p.name[:-len(present_name(""))]
                    arg = next((a for a in fdef.args.args if a.arg == view), fdef)
                    raise self.module.error(arg, f"the exported function {name!r} cannot take an optional view ({view!r})",
                                            "C++ calls it through a C signature: take the view, and pass a length of "
                                            "0 where there is none")
                if not _has_c_type(p.ty):  # C++ sees scalars, pointers and lengths
                    arg = next((a for a in fdef.args.args if a.arg == p.name), fdef)
                    raise self.module.error(arg, f"the exported function {name!r} takes {p.name!r} as a "
                                                 f"{type_name(p.ty)}, which has no C type",
                                            "take its fields or lanes as scalar parameters (C++ calls it through "
                                            "a C signature)")
            if not (isinstance(function.ret, (VoidType, ThreadIndexType)) or _has_c_type(function.ret)
                    and not isinstance(function.ret, ViewType)):
                raise self.module.error(fdef.returns or fdef, f"the exported function {name!r} returns "
                                                              f"{type_name(function.ret)}, which has no C type",
                                        "C++ calls it through a C signature: return one scalar, or write the "
                                        "results into MutSlice parameters (a pointer each on the C++ side)")
            function.export = True
            self.functions.append(function)

    def translate_function(
        self, module: ModuleSource, fdef: ast.FunctionDef, typevars: dict[str, TypeVarBinding], symbol: str,
        kernel_name: str, bounds_check: bool, is_kernel: bool = False, param_types: list[Type] | None = None,
        constexprs: Mapping[str, int | bool] | None = None,
    ) -> tuple[FunctionTranslator, ir.Function]:
        """One instance of ``fdef`` (a kernel specialization, an export or a device function for
        one list of argument types) as an IR function, with the translator that made it."""
        # A local first assigned a bare literal takes the type of the typed values it meets
        # (`acc = 0.0; acc += x[i]`: f32 with an f32 x). literal_types.py decides those types
        # before the body is translated, and the body is translated once, with them.
        translator = FunctionTranslator(self, module, fdef, typevars, is_kernel, kernel_name, bounds_check, constexprs)
        self.call_stack.append((module.name, fdef.name))
        try:
            translator.translate_signature(param_types)
            try:
                decided = decide_literal_types(translator)
            except CompileError:
                raise
            except Exception:  # a bug of the walk's: no decision (a disagreement), never a traceback
                decided = LiteralTypes({}, {}, settled=False)
            translator.literals.retype.update(decided.types)
            body = translator.translate_body()
        finally:
            self.call_stack.pop()
        met = translator.literals.met_types()
        if not decided.settled or met != decided.expected:
            # the walk and the translation typed something those locals meet differently (or the
            # walk could not type it): the function keeps the walk's types, and the record is
            # an internal-consistency error for the tests to find (tests/test_literal_types.py)
            self.literal_disagreements.append(LiteralDisagreement(str(module.path), fdef.name, fdef.lineno, decided, met))
        function = ir.Function(
            symbol=symbol, python_name=fdef.name, file=self.relative_file(module), params=translator.scope.params,
            ret=translator.scope.ret or VoidType(), body=body, locals=translator.scope.locals, is_kernel=is_kernel,
            line=fdef.lineno, assign_counts=translator.scope.assign_counts, grid_sites=translator.checks.grid_sites,
            unit_extents=dict(translator.launch.unit_extents),
        )
        return translator, function

    # ---- device functions ------------------------------------------------------------------

    def call_device(
        self, caller: FunctionTranslator, module: ModuleSource, fdef: ast.FunctionDef,
        args: list[ir.Expr], node: ast.Call,
    ) -> ir.Expr:
        if fdef.name in module.kernels:
            raise caller.error(node, f"{fdef.name!r} is a kernel and cannot be called from device code",
                               "move the shared code into a plain function and call that")
        for dec in fdef.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if _names_oxide(module, target, "extern"):
                return self.call_extern(caller, module, fdef, dec, args, node)
            if oxide_name(module, target) not in ("device",):
                raise caller.error(node, f"{fdef.name!r} has a decorator ({ast.unparse(dec)}) oxide cannot compile",
                                   "device functions are plain functions, optionally marked @oxide.device")
        params = fdef.args.args
        if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs or fdef.args.defaults:
            raise module.error(fdef, f"device function {fdef.name!r} must take plain positional parameters")
        if len(args) != len(params):
            raise caller.error(node, f"{fdef.name}() takes {len(params)} argument(s), got {len(args)}",
                               f"see its definition at {module.path.name}:{fdef.lineno}")
        typevars, param_types, constexprs = self.call_signature(caller, module, fdef, args, node)
        converted: list[ir.Expr] = []
        for position, (arg, param, pty) in enumerate(zip(args, params, param_types)):
            what = f"argument {param.arg!r} of {fdef.name}()"
            if param.arg in constexprs:
                continue
            if isinstance(arg.ty, ViewType) and arg.ty.optional and not (isinstance(pty, ViewType) and pty.optional):
                raise caller.error(node, f"{what} is {type_name(pty)}; {ast.unparse(node.args[position])!r} is "
                                   f"{type_name(arg.ty)} and may be None here",
                                   f"test it first (`if {ast.unparse(node.args[position])} is not None:`), or declare "
                                   f"the parameter Optional[{type_name(pty)}] at {module.path.name}:{param.lineno}")
            if isinstance(arg, ir.NullView):
                if not (isinstance(pty, ViewType) and pty.optional):
                    raise caller.error(node.args[position], f"{what} is {type_name(pty)}, which cannot be None",
                                       f"declare the parameter Optional[{type_name(pty)}] at {module.path.name}:"
                                       f"{param.lineno} to take None" if isinstance(pty, ViewType) else "")
                converted += [ir.NullView(pty.present, arg.loc), ir.Const(False, BOOL, arg.loc)]
            elif isinstance(pty, ViewType) and pty.optional:
                # the view and its flag (frontend/optional_views.py): a view proven present passes True
                if not isinstance(arg.ty, ViewType):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}",
                                       "an optional parameter takes a view (a parameter, optional or not) or None")
                present = pty.present
                if (arg.ty.is_tensor != present.is_tensor or arg.ty.ndim != present.ndim or arg.ty.elem != present.elem
                        or (present.kind != ViewKind.SLICE and present.kind != arg.ty.kind)):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}",
                                       "a writable view can be passed where a Slice is expected, not the reverse")
                if arg.ty.optional:
                    assert isinstance(arg, ir.Var)
                    converted += [ir.Var(arg.name, arg.ty.present, arg.loc),
                                  ir.Var(present_name(arg.name), BOOL, arg.loc)]
                else:
                    converted += [arg, ir.Const(True, BOOL, arg.loc)]
            elif isinstance(pty, ViewType) and isinstance(arg.ty, ArrayType) and not pty.is_tensor:
                param_types[position] = device_param_type(caller, arg, pty, what, node)
                converted.append(arg)
            elif isinstance(pty, TensorMapType):
                if arg.ty != pty:
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}")
                converted.append(arg)
            elif isinstance(pty, ViewType):
                if not isinstance(arg.ty, ViewType):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}")
                if arg.ty.is_tensor != pty.is_tensor or (pty.is_tensor and arg.ty.ndim != pty.ndim):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}",
                                       f"declare the parameter {type_name(arg.ty)} at {module.path.name}:"
                                       f"{param.lineno}, or pass a view of that shape")
                if arg.ty.elem != pty.elem or (pty.kind != ViewKind.SLICE and pty.kind != arg.ty.kind):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}",
                                       "a writable view can be passed where a Slice is expected, not the reverse")
                converted.append(arg)
            else:
                converted.append(caller.convert_implicit(arg, pty, node, what))
        key = instance_key(module, fdef, param_types, constexprs)
        inst = self.instances.get(key)
        if inst is None:
            if (module.name, fdef.name) in self.call_stack:
                chain = " -> ".join(n for _, n in self.call_stack) + f" -> {fdef.name}"
                raise caller.error(node, f"recursion is not supported on the GPU ({chain})",
                                   "rewrite the recursion as a loop")
            inst = _Instance(None)
            self.instances[key] = inst
            suffix = "_".join([t.symbol_part if isinstance(t, (ArrayType, TensorMapType)) else type_name(t).replace("[", "_").replace("]", "")
                               .replace("(", "_").replace(")", "")
                               for p, t in zip(params, param_types) if p.arg not in constexprs]
                              + [f"{n}{int(v)}".replace("-", "m") for n, v in constexprs.items()])
            symbol = f"__ox_{module.name.replace('.', '_')}_{fdef.name}" + (f"__{suffix}" if suffix else "")
            try:
                _, inst.function = self.translate_function(module, fdef, typevars, symbol, kernel_name=caller.kernel_name,
                                                           bounds_check=caller.bounds_check, param_types=param_types,
                                                           constexprs=constexprs)
            except CompileError:
                del self.instances[key]
                raise
            self.functions.append(inst.function)
        elif inst.function is None:
            chain = " -> ".join(n for _, n in self.call_stack) + f" -> {fdef.name}"
            raise caller.error(node, f"recursion is not supported on the GPU ({chain})",
                               "rewrite the recursion as a loop")
        fn = inst.function
        return ir.Call(fn.symbol, converted, fn.ret, caller.loc(node))

    def call_signature(
        self, caller: FunctionTranslator, module: ModuleSource, fdef: ast.FunctionDef, args: list[ir.Expr],
        node: ast.Call,
    ) -> tuple[dict[str, TypeVarBinding], list[Type], dict[str, int | bool]]:
        """The instance of the device function ``fdef`` that a call with ``args`` (typed values:
        only their types and which are literals are read) makes: its TypeVars bound, its
        parameter types and its compile-time arguments. The translation's ``call_device`` and
        literal_types.py's walk both type a call by it."""
        params = fdef.args.args
        typevars = self.typevars_of(module, fdef)
        # bind TypeVars from the argument types: typed arguments first, literals after
        for weak_pass in (False, True):
            for arg, param in zip(args, params):
                is_weak = isinstance(arg, ir.Const) and arg.weak
                if is_weak != weak_pass or isinstance(arg, ir.NullView):  # None binds nothing
                    continue
                if param.annotation is None:  # at the parameter, not at the module (line 0)
                    raise module.error(param, f"parameter {param.arg!r} of {fdef.name}() has no type annotation",
                                       f"annotate it with what the call at {caller.module.path.name}:"
                                       f"{getattr(node, 'lineno', 0)} passes: `{param.arg}: "
                                       f"{_annotation_for(arg.ty)}` (parameters are not inferred from calls)")
                if isinstance(param.annotation, ast.Call):
                    continue  # ox.acc_type(T) binds nothing: another parameter binds T
                ann = resolve_annotation(module, param.annotation, typevars, f"parameter {param.arg!r}")
                annotation = optional_inner(module, param.annotation) or param.annotation  # X of Optional[X]
                if isinstance(ann, TypeVarBinding) and isinstance(annotation, ast.Subscript):
                    # a view of T (Tensor[T, 2]: the element is not the subscript itself)
                    if not isinstance(arg.ty, (ViewType, TensorMapType)):
                        raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() needs a view, "
                                           f"got {type_name(arg.ty)}")
                    if arg.ty.elem not in ann.constraints:
                        raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() has elements "
                                           f"{arg.ty.elem.name}, not allowed by {ann.name}")
                    typevars[ann.name] = TypeVarBinding(ann.name, ann.constraints, arg.ty.elem)
                elif isinstance(ann, TypeVarBinding):
                    ty = arg.ty
                    if isinstance(ty, ViewType):
                        raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() is a scalar {ann.name}, "
                                           f"got {type_name(ty)}")
                    scalar = as_scalar(ty)
                    if scalar is None:
                        raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() has no value")
                    if scalar not in ann.constraints:
                        raise caller.error(
                            node, f"argument {param.arg!r} of {fdef.name}() is {scalar.name}, but {ann.name} allows "
                            f"only {', '.join(c.name for c in ann.constraints)}",
                            "convert the argument, or add the type to the TypeVar's constraints",
                        )
                    typevars[ann.name] = TypeVarBinding(ann.name, ann.constraints, scalar)
                elif isinstance(annotation, ast.Subscript):
                    inner = annotation.slice
                    if isinstance(inner, ast.Name) and inner.id in typevars and typevars[inner.id].bound is None:
                        if not isinstance(arg.ty, (ViewType, ArrayType)):
                            raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() needs a view, "
                                               f"got {type_name(arg.ty)}")
                        tv = typevars[inner.id]
                        if arg.ty.elem not in tv.constraints:
                            raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() has elements "
                                               f"{arg.ty.elem.name}, not allowed by {tv.name}")
                        typevars[inner.id] = TypeVarBinding(tv.name, tv.constraints, arg.ty.elem)
        param_types: list[Type] = []
        for arg, param in zip(args, params):
            ann = resolve_annotation(module, param.annotation, typevars, f"parameter {param.arg!r}")
            if isinstance(ann, TypeVarBinding):
                raise caller.error(node, f"cannot infer {ann.name} for {fdef.name}()")
            if isinstance(ann, ThreadIndexType) and isinstance(arg.ty, ThreadIndexType):
                # the instance keeps the argument's axis: a row index is no 1-D index inside
                ann = arg.ty
            param_types.append(ann)
        # Constexpr parameters: one instance per value, which sizes arrays and bounds static_range
        constexprs: dict[str, int | bool] = {}
        for arg, param in zip(args, params):
            kind = _constexpr_kind(module, param.annotation)
            if kind is None:
                continue
            want = bool if kind == "bool" else int
            if not (isinstance(arg, ir.Const) and isinstance(arg.value, want)
                    and (kind == "bool" or not isinstance(arg.value, bool))):
                raise caller.error(node, f"argument {param.arg!r} of {fdef.name}() is a compile-time {kind}",
                                   "pass a literal, a module constant or a Constexpr parameter")
            constexprs[param.arg] = arg.value  # type: ignore[assignment]
        return typevars, param_types, constexprs

    def call_extern(
        self, caller: FunctionTranslator, module: ModuleSource, fdef: ast.FunctionDef, dec: ast.expr,
        args: list[ir.Expr], node: ast.Call,
    ) -> ir.Expr:
        pattern, sources = self._extern_decorator(module, dec, "extern")
        params = fdef.args.args
        if len(args) != len(params):
            raise caller.error(node, f"{fdef.name}() takes {len(params)} argument(s), got {len(args)}",
                               f"see its declaration at {module.path.name}:{fdef.lineno}")
        # a generic stub: its TypeVars bound by this call, its symbol one instance of the pattern
        typevars = self.typevars_of(module, fdef)
        if typevars:
            typevars = bind_from_arguments(caller, fdef, typevars, args, node)
        assert isinstance(dec, ast.Call)
        symbol, cpp_template = extern_symbol(module, dec.args[0], pattern, typevars)
        if cpp_template and not (sources and sources[0].endswith(".cu")):
            raise module.error(dec, f"the C++ template {pattern!r} needs sources= naming first the .cu that defines it",
                               "oxide instantiates it there, behind an extern \"C\" wrapper")
        param_types: list[Type] = []
        for p in params:
            if p.annotation is None:
                raise module.error(p, f"parameter {p.arg!r} of the extern {fdef.name!r} has no type annotation")
            ty = resolve_annotation(module, p.annotation, typevars, f"parameter {p.arg!r} of extern {fdef.name!r}")
            if not isinstance(ty, (ScalarType, ViewType)):  # a C function takes no tuple, type variable, ...
                raise module.error(p.annotation, f"extern parameters must be concrete scalars or views, "
                                   f"not {ast.unparse(p.annotation)}")
            param_types.append(ty)
        ret: Type = VoidType()
        if fdef.returns is not None:
            r = resolve_annotation(module, fdef.returns, typevars, f"the return type of extern {fdef.name!r}")
            if not isinstance(r, (ScalarType, VoidType)):
                raise module.error(fdef.returns, "an extern returns a scalar or None",
                                   "return several values through a MutSlice parameter")
            ret = r
        converted: list[ir.Expr] = []
        for arg, p, pty in zip(args, params, param_types):
            what = f"argument {p.arg!r} of {fdef.name}()"
            if isinstance(pty, ViewType) and pty.optional:
                raise module.error(p.annotation or p, f"the extern {fdef.name!r} cannot take an optional view ({p.arg!r})",
                                   "take the view (C++ gets its pointer) and test for None in the Python caller")
            if isinstance(arg, ir.NullView):
                raise caller.error(node.args[len(converted)], f"{what} cannot be None (an extern takes no optional view)",
                                   "test for None in the caller and call the extern where there is a view")
            if isinstance(arg.ty, ViewType) and arg.ty.optional:
                raise caller.error(node, f"{what}: {ast.unparse(node.args[len(converted)])!r} is {type_name(arg.ty)} "
                                   "and may be None here", "test it first: call the extern inside "
                                   f"`if {ast.unparse(node.args[len(converted)])} is not None:`")
            if isinstance(pty, ViewType) and pty.kind == ViewKind.PTR:
                if not isinstance(arg.ty, ViewType) or arg.ty.elem != pty.elem:
                    raise caller.error(node, f"{what} needs a view of {pty.elem.name} (its data pointer is passed), "
                                       f"got {type_name(arg.ty)}", "pass a Slice/DisjointSlice/MutSlice/Tensor parameter")
                converted.append(arg)
            elif isinstance(pty, ViewType):
                if not isinstance(arg.ty, ViewType) or arg.ty.elem != pty.elem or (pty.kind != ViewKind.SLICE and pty.kind != arg.ty.kind):
                    raise caller.error(node, f"{what} needs {type_name(pty)}, got {type_name(arg.ty)}")
                converted.append(arg)
            else:
                converted.append(caller.convert_implicit(arg, pty, node, what))
        impl = cpu_implementation(self, module, dec, fdef, "extern")
        if impl is not None:
            check_cpu_signature(self, impl, module, fdef, param_types, ret, "extern")
            if self.device == "cpu":  # the Python implementation in its place: no C++ to link
                return self.call_device(caller, impl[0], impl[1], converted, node)
        existing = self.externs.get(symbol)
        decl = ir.ExternFunction(symbol, [ir.Param(p.arg, t) for p, t in zip(params, param_types)], ret, sources,
                                 str(module.path), fdef.lineno, str(caller.module.path), node.lineno,
                                 cpp_template)
        if existing is None:
            self.externs[symbol] = decl
        elif [p.ty for p in existing.params] != param_types or existing.ret != ret:
            raise caller.error(node, f"the C symbol {symbol!r} is declared twice with different types "
                               f"({existing.file}:{existing.line} and {module.path}:{fdef.lineno})")
        return ir.Call(symbol, converted, ret, caller.loc(node))




def _constants(module: ModuleSource) -> dict[str, int | float | bool]:
    return {n: s.value for n, s in module.symbols.items() if s.kind == "constant" and s.value is not None}


def _constexpr_kind(module: ModuleSource, annotation: ast.expr | None) -> str | None:
    """"int" or "bool" for ``ox.Constexpr[int]`` / ``ox.Constexpr[bool]``, None if it is not one."""
    if not (isinstance(annotation, ast.Subscript) and oxide_name(module, annotation.value) == "Constexpr"):
        return None
    inner = annotation.slice
    return "bool" if isinstance(inner, ast.Name) and inner.id == "bool" or oxide_name(module, inner) == "boolean" else "int"


def _annotation_for(ty: Type) -> str:
    """How a parameter receiving a value of ``ty`` is annotated: a shared or local array passes
    as a ``MutSlice`` of its elements (``Slice`` where only read)."""
    if isinstance(ty, ArrayType):
        return f"MutSlice[{ty.elem.name}]" if not ty.read_only else f"Slice[{ty.elem.name}]"
    return type_name(ty)


def _has_c_type(ty: Type) -> bool:
    """Whether C++ can spell ``ty`` across an exported function's signature (link/boundary.py): a
    scalar other than fp8, or a view of such scalars (a pointer, and its length or shape)."""
    elem = ty.elem if isinstance(ty, ViewType) else ty
    return isinstance(elem, ScalarType) and elem.kind != "fp8"


def _param_spec(p: ir.Param, optional: bool = False) -> ParamSpec:
    if isinstance(p.ty, TensorMapType):
        return ParamSpec(p.name, TENSOR_MAP_PARAM, p.ty.elem.name, p.ty.ndim)
    if isinstance(p.ty, (StructType, VectorType)):
        kind = STRUCT_PARAM if isinstance(p.ty, StructType) else VECTOR_PARAM
        return ParamSpec(p.name, kind, p.ty.name, 1, tuple((path, leaf.name) for path, leaf in scalar_leaves(p.ty)))
    if isinstance(p.ty, ViewType):
        elem = p.ty.elem.record_dtype() if isinstance(p.ty.elem, StructType) else p.ty.elem.name
        return ParamSpec(p.name, p.ty.kind.value, elem, p.ty.ndim, optional=optional)
    scalar = as_scalar(p.ty)
    assert scalar is not None
    return ParamSpec(p.name, SCALAR_PARAM, scalar.name)


def build_program(index: ProjectIndex, module: ModuleSource, bounds_check: bool = True,
                  device: str = "cuda") -> FrontendResult:
    """The IR program of ``module``'s kernels for ``device`` (``CompileOptions.device``: "cpu"
    calls the CPU implementations of externs in their place, ``cpu_implementations.py``)."""
    builder = ProgramBuilder(index, module, bounds_check, device)
    kernels = builder.build_kernels()
    builder.build_exports()
    if kernels:  # the module's own arrays, used or not: the host may read and write them
        for name, sym in module.symbols.items():
            if sym.kind == "unknown":
                builder.module_array(module, name)
    program = ir.Program(builder.functions, list(builder.externs.values()), builder.extern_kernels,
                         builder.error_sites, list(builder.arrays.values()))
    _check_symbols(builder, program)
    try:
        verify_program(program)
    except IRError as e:
        raise located_error(builder.index, e.file, e.loc, e.message, e.hint) from None
    if builder.literal_disagreements and os.environ.get("OXIDE_VERIFY_IR", "").strip() not in ("", "0"):
        # checked with the IR's contract (the tests set it): the walk must have every rule of
        # the translation's that types what a literal local meets
        d = builder.literal_disagreements[0]
        decided = (f"decided their types expecting {_type_names(d.decided.expected)}" if d.decided.settled
                   else "found no decision")
        raise located_error(builder.index, d.file, ir.Loc(d.line, 1),
                            f"internal compiler error: the translation of {d.function}() met its literal-initialized "
                            f"locals as {_type_names(d.met)}, but literal_types.py {decided}",
                            "please report this at the oxide issue tracker with the kernel source")
    return FrontendResult(program, kernels, builder.error_sites)


def _type_names(types: Mapping[str, ScalarType]) -> str:
    return "{" + ", ".join(f"{name}: {ty.name}" for name, ty in sorted(types.items())) + "}"


RESERVED_SYMBOL_PREFIXES = ("__oxide", "__nv_", "llvm.")  # the generated code's own globals, libdevice


def located_error(index: ProjectIndex, file: str, loc: ir.Loc, message: str, hint: str = "") -> CompileError:
    """A CompileError at ``loc`` of ``file`` (as IR functions record it: relative to the source
    root, or a path), with the source line when the file is one of the index's modules."""
    modules = list(index.modules())
    module = next((m for m in modules if file in (str(m.path), _relative_to_root(index, m))), None)
    if module is None:
        module = next((m for m in modules if m.path.name == file), None)
    lines = module.lines if module is not None else []
    src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else ""
    return CompileError(message, SourceLocation(str(module.path) if module else file, loc.line, loc.col, src), hint)


def _relative_to_root(index: ProjectIndex, module: ModuleSource) -> str:
    try:
        return module.path.resolve().relative_to(index.root).as_posix()
    except ValueError:
        return module.path.name


def _check_symbols(builder: ProgramBuilder, program: ir.Program) -> None:
    """Every function of the compiled module needs a symbol of its own: two kernels (or a
    kernel's specialization and another kernel, an export, an extern) of one name would clash
    in the LLVM module, and a name of the generated code's own would be taken over."""
    seen: dict[str, tuple[str, int]] = {}
    entries = [(f.symbol, f.file, f.line, f.python_name) for f in program.functions]
    entries += [(e.symbol, e.file, e.line, e.symbol) for e in [*program.externs, *program.extern_kernels]]
    for symbol, file, line, name in entries:

        def error(message: str, hint: str) -> CompileError:
            return located_error(builder.index, file, ir.Loc(line, 1), message, hint)

        if symbol.startswith(RESERVED_SYMBOL_PREFIXES):
            raise error(f"the name {symbol!r} is reserved for oxide's generated code and libdevice",
                        f"rename it; names starting with {', '.join(RESERVED_SYMBOL_PREFIXES)} are taken")
        if symbol in seen:
            first_file, first_line = seen[symbol]
            raise error(f"{name!r} compiles to the symbol {symbol!r}, which {Path(first_file).name}:{first_line} "
                        f"also defines", "rename one of them")
        seen.setdefault(symbol, (file, line))


def extern_source_path(declaring_file: Path, name: str) -> Path:
    """Where a ``sources=`` entry of ``@ox.extern`` / ``@ox.extern_kernel`` is: relative to the
    directory of the Python file that declares it (``"fastmath.cu"`` next to the module,
    ``"../csrc/fastmath.cu"``), or else, when no file is there, relative to the project root
    (the nearest directory above the file with a ``pyproject.toml``: ``"csrc/fastmath.cu"``).
    An absolute path is taken as it is. A name found in neither place keeps the first meaning,
    and the link reports the missing file."""
    beside = (declaring_file.parent / name).resolve()
    if Path(name).is_absolute() or beside.exists():
        return beside
    for directory in declaring_file.resolve().parents:
        if (directory / "pyproject.toml").is_file():
            from_root = (directory / name).resolve()
            return from_root if from_root.exists() else beside
    return beside
