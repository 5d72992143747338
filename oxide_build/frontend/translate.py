"""Python AST → typed IR, one function instance at a time.

``FunctionTranslator.visit`` turns any exception that is not already a ``CompileError`` into a
``CompileError`` at the node being translated, so a compiler bug still points at user source
instead of showing our traceback.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oxide.abi.views import ViewKind
from oxide.errors import CompileError
from oxide.runtime.manifest import Precondition
from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.ops import BINARY_OPS_OF_AST, COMPARE_OPS_OF_AST, BinaryOp, CompareOp, LogicOp
from ..ir.types import (
    BOOL, F64, I32, I64, VOID, ArrayType, ThreadIndexType, TupleType, Type,
    ViewType, VoidType, as_scalar, is_int, type_name,
)
from ..intrinsics.thread import SPECIAL_REGISTERS
from ..scan import ModuleSource, Symbol
from ..passes.divergence import is_thread_dependent
from .annotations import PYTHON_SCALARS, TypeVarBinding, dotted_parts, oxide_name, resolve_annotation
from .bounds import Poly, Prover, add, atom, const, mul
from .views import refuse_slice_write, refuse_tensor_write, refuse_vector_store
from .promotion import PromotionError, fits, literal_type, promote

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["FunctionTranslator"]

BIN_OPS = BINARY_OPS_OF_AST
CMP_OPS = COMPARE_OPS_OF_AST
UNSUPPORTED_STMTS: dict[type, tuple[str, str]] = {
    ast.Try: ("try/except", "kernels cannot raise or catch exceptions; use `assert` for checks"),
    ast.Raise: ("raise", "kernels cannot raise exceptions; use `assert` for checks"),
    ast.ClassDef: ("class definitions", "define classes outside kernels"),
    ast.FunctionDef: ("nested functions", "define device functions at module level"),
    ast.Lambda: ("lambda", "define a device function at module level"),
    ast.Global: ("global", "kernels cannot assign module globals; pass a view instead"),
    ast.Nonlocal: ("nonlocal", "kernels have no closures"),
    ast.Delete: ("del", "remove the `del` statement"),
    ast.Import: ("import", "import at module level"),
    ast.ImportFrom: ("import", "import at module level"),
    ast.AsyncFunctionDef: ("async functions", "kernels are not coroutines"),
}


@dataclass
class Scope:
    """Per-block facts for bounds-check elimination: polynomials known to be ≥ 0 (see bounds.py)."""

    facts: list[Poly] = field(default_factory=list)


class FunctionTranslator(ast.NodeVisitor):
    def __init__(
        self,
        builder: ProgramBuilder,
        module: ModuleSource,
        fdef: ast.FunctionDef,
        typevars: dict[str, TypeVarBinding],
        is_kernel: bool,
        kernel_name: str,
        bounds_check: bool,
    ) -> None:
        self.builder = builder
        self.module = module
        self.fdef = fdef
        self.typevars = typevars
        self.is_kernel = is_kernel
        self.kernel_name = kernel_name
        self.bounds_check = bounds_check
        self.locals: dict[str, Type] = {}
        self.local_decl_line: dict[str, int] = {}
        self.params: list[ir.Param] = []
        self.param_names: set[str] = set()
        self.ret: Type | None = None
        self.loop_depth = 0
        self.unsafe_depth = 0
        self.scopes: list[Scope] = [Scope()]
        self.assign_counts = _count_assignments(fdef)
        self.constexprs: dict[str, int] = {}
        # names whose value may differ between the threads of a block, and how many enclosing
        # conditions depend on such values (block.sync() there could deadlock)
        self.thread_dependent: set[str] = set()
        self.divergent_depth = 0
        self.static_loop_depth = 0
        self.positive_names: set[str] = set()  # locals assigned once from block/grid sizes
        self.loop_bindings: set[str] = set()  # loop variables of the loops being translated
        self.proofs: dict[tuple[object, ...], tuple[bool, tuple[Poly, ...]]] = {}
        # kernel asserts checked by the runtime at launch (oxide/runtime/preconditions.py), and
        # whether every top-level statement so far left the launch preconditions unchanged
        self.preconditions: list[Precondition] = []
        self.prefix_open = is_kernel
        self.prover = Prover(self._stable, assume_grid=is_kernel)

    # ---- entry points -------------------------------------------------------------------

    def visit(self, node: ast.AST) -> Any:
        try:
            return super().visit(node)
        except CompileError:
            raise
        except Exception as exc:  # a compiler bug must still point at the user's source
            raise self.module.error(
                node, f"internal compiler error: {type(exc).__name__}: {exc}",
                "please report this at the oxide issue tracker with the kernel source",
            ) from None

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def loc(self, node: ast.AST) -> ir.Loc:
        return ir.Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)

    def translate_signature(self, param_types: list[Type] | None = None) -> None:
        args = self.fdef.args
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
            if arg.arg in self.constexprs:
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
            if self.is_kernel and isinstance(ty, ThreadIndexType):
                raise self.error(arg, "a kernel parameter cannot be a ThreadIndex",
                                 "call thread.index_1d() inside the kernel")
            self.params.append(ir.Param(arg.arg, ty))
            self.param_names.add(arg.arg)
            self.locals[arg.arg] = ty
        if self.fdef.returns is not None:
            ret = resolve_annotation(self.module, self.fdef.returns, self.typevars, "the return type")
            if isinstance(ret, TypeVarBinding):
                raise self.error(self.fdef.returns, f"the return type {ret.name} is not bound by any parameter",
                                 "a TypeVar in the return type must also appear in a parameter")
            if isinstance(ret, ViewType):
                raise self.error(self.fdef.returns, "functions cannot return views",
                                 "return scalars; write results into a view parameter")
            self.ret = ret
        if self.is_kernel and self.ret not in (None, VOID):
            raise self.error(self.fdef.returns or self.fdef, "a kernel cannot return a value",
                             "annotate it `-> None` and write results into a DisjointSlice parameter")
        if self.is_kernel:
            self.ret = VOID

    def translate_body(self) -> list[ir.Stmt]:
        body = self.block(self.fdef.body)
        if self.ret is None:
            self.ret = VOID
        self.record_grid_preconditions()
        return body

    def record_grid_preconditions(self) -> None:
        """The grid limits the bounds proofs assumed (bounds.py) become launch preconditions
        (checked by the runtime, so the device code has no check for them)."""
        for assumed in self.prover.grid_checks():
            loc = assumed.loc
            node = ast.Constant(0, lineno=loc.line, col_offset=loc.col - 1)
            site = self.builder.add_error_site(
                "assert", self.kernel_name, self.module, node,
                f"grid.{assumed.axis} <= {assumed.limit}: the i32 index arithmetic here assumes it "
                "(compute the index in i64 to lift the limit)")
            axis = "xyz".index(assumed.axis)
            self.preconditions.append(Precondition(site, ["le", ["grid", axis], ["const", assumed.limit]]))

    # ---- statements ---------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], scope: Scope | None = None) -> list[ir.Stmt]:
        parent = self.scopes[-1]
        self.scopes.append(scope or Scope(list(parent.facts)))
        defined_before = set(self.prover.defs)
        out: list[ir.Stmt] = []
        try:
            for stmt in stmts:
                result = self.visit(stmt)
                if self.prefix_open and len(self.scopes) == 2 and not (
                        result is None or isinstance(result, ir.Assign) and ir.is_pure(result.value)
                        or isinstance(result, ir.Check) and result.hoistable):
                    self.prefix_open = False  # later asserts may depend on what this statement did
                if result is None:
                    continue
                if isinstance(result, list):
                    out.extend(result)
                else:
                    out.append(result)
                if isinstance(stmt, ast.If) and not stmt.orelse and _always_exits(stmt.body):
                    # `if i >= len(x): return` proves `i < len(x)` for the rest of the block
                    assert isinstance(result, ir.If)
                    self.add_facts(result.cond, negated=True)
        finally:
            self.scopes.pop()
            # a local first assigned in this block may not be assigned on every path that reaches
            # the code after it (a branch not taken, a loop run zero times): forget its value
            for name in set(self.prover.defs) - defined_before:
                self.prover.forget(name)
        return out

    def generic_visit(self, node: ast.AST) -> Any:
        for cls, (what, hint) in UNSUPPORTED_STMTS.items():
            if isinstance(node, cls):
                raise self.error(node, f"{what} is not supported in kernels or device functions", hint)
        raise self.error(node, f"{type(node).__name__} is not supported in kernels or device functions",
                         "see docs/language.md for the supported subset")

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> ir.Stmt | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstring
        if isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
            return None
        if not isinstance(node.value, ast.Call):
            raise self.error(node, "this expression has no effect", "remove it or assign its value")
        if self.divergent_depth and oxide_name(self.module, node.value.func) == "warp.sync":
            pass  # warp-level sync under divergence is the user's documented responsibility
        value = self.expr(node.value)
        return ir.ExprStmt(value, self.loc(node))

    def visit_Assign(self, node: ast.Assign) -> ir.Stmt | list[ir.Stmt]:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported",
                             "assign each name separately")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.store(target, node.value, node)
        if isinstance(target, (ast.Tuple, ast.List)):
            return self.unpack(target, node.value, node)
        if not isinstance(target, ast.Name):
            raise self.error(target, f"cannot assign to {ast.unparse(target)!r}",
                             "assign to a local name or to a view element like out[i]")
        return self.assign_name(target, self.expr(node.value), node)

    def unpack(self, target: ast.Tuple | ast.List, value_node: ast.expr, node: ast.AST) -> list[ir.Stmt]:
        value = self.expr(value_node)
        if not isinstance(value.ty, TupleType):
            raise self.error(value_node, f"cannot unpack {type_name(value.ty)}",
                             "only tuples (from a device function or a tuple expression) unpack")
        if len(value.ty.elems) != len(target.elts):
            raise self.error(target, f"cannot unpack {len(value.ty.elems)} values into {len(target.elts)} names",
                             f"use exactly {len(value.ty.elems)} names on the left")
        temp = self.builder.fresh_name("tuple")
        self.locals[temp] = value.ty
        loc = self.loc(node)
        out: list[ir.Stmt] = [ir.Assign(temp, value, loc)]
        for i, (t, ety) in enumerate(zip(target.elts, value.ty.elems)):
            element = ir.TupleGet(ir.Var(temp, value.ty, loc), i, ety, loc)
            if isinstance(t, ast.Name):
                out.append(self.assign_name(t, element, node))
            elif isinstance(t, ast.Subscript):
                raise self.error(t, "unpack into names, then store them")
            else:
                raise self.error(t, f"cannot assign to {ast.unparse(t)!r}")
        return out

    def visit_Tuple(self, node: ast.Tuple) -> ir.Expr:
        values = [self.materialize(self.expr(e)) for e in node.elts]
        for v, e in zip(values, node.elts):
            if isinstance(v.ty, (ViewType, ArrayType, VoidType, TupleType)):
                raise self.error(e, f"tuples hold scalars, not {type_name(v.ty)}")
        return ir.MakeTuple(values, TupleType(tuple(v.ty for v in values)), self.loc(node))

    def is_thread_dependent(self, value: ir.Expr) -> bool:
        return is_thread_dependent(value, self.thread_dependent)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ir.Stmt | None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "annotated assignment needs a plain name")
        ty = resolve_annotation(self.module, node.annotation, self.typevars, f"local {node.target.id!r}")
        if not isinstance(ty, ScalarType):
            raise self.error(node.annotation, "local variables can only be declared with a scalar type")
        name = node.target.id
        if name in self.locals and self.locals[name] != ty:
            raise self.error(node, f"{name!r} was declared {type_name(self.locals[name])} at line "
                             f"{self.local_decl_line.get(name, '?')}, cannot redeclare it as {ty.name}")
        self.locals.setdefault(name, ty)
        self.local_decl_line.setdefault(name, node.lineno)
        if node.value is None:
            return ir.Assign(name, ir.Const(0, ty, self.loc(node)), self.loc(node))
        return self.assign_name(node.target, self.expr(node.value), node)

    def assign_name(self, target: ast.Name, value: ir.Expr, node: ast.AST) -> ir.Stmt:
        name = target.id
        if name in self.param_names and isinstance(self.locals[name], ViewType):
            raise self.error(target, f"cannot assign to the view parameter {name!r}",
                             "views are fixed for the whole kernel; use a new local name")
        if isinstance(value.ty, ViewType):
            raise self.error(node, "views cannot be copied into local variables",
                             "use the parameter directly")
        if isinstance(value.ty, ArrayType):
            if not isinstance(value, ir.Intrinsic):
                raise self.error(node, "arrays cannot be copied into other variables", "use the array's own name")
            if name in self.locals:
                raise self.error(target, f"{name!r} is already defined; an array needs a name of its own")
            if self.loop_depth and value.ty.space == "shared":
                raise self.error(node, "shared arrays must be declared outside loops",
                                 "declare it at the top of the kernel")
            self.locals[name] = value.ty
            self.local_decl_line[name] = getattr(node, "lineno", 0)
            return ir.ArrayDecl(name, value.ty, self.loc(node))
        if isinstance(value.ty, TupleType):
            raise self.error(node, "a tuple must be unpacked into names: a, b = ...")
        if self.is_thread_dependent(value):
            self.thread_dependent.add(name)
        if isinstance(value.ty, VoidType):
            raise self.error(node, "this call returns nothing; there is no value to assign")
        if name not in self.locals:
            value = self.materialize(value)
            if self.assign_counts.get(name, 0) == 1 and self._positive_step(value, node):  # type: ignore[arg-type]
                self.positive_names.add(name)
            self.locals[name] = value.ty
            self.local_decl_line[name] = getattr(node, "lineno", 0)
            self.define(name, value)
            return ir.Assign(name, value, self.loc(node))
        declared = self.locals[name]
        if isinstance(declared, ThreadIndexType):
            raise self.error(target, f"{name!r} holds a ThreadIndex and cannot be reassigned",
                             "use another name for the new value")
        value = self.convert_implicit(value, declared, node, f"assignment to {name!r}")
        self.define(name, value)
        return ir.Assign(name, value, self.loc(node))

    def visit_AugAssign(self, node: ast.AugAssign) -> ir.Stmt:
        op = BIN_OPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported")
        if isinstance(node.target, ast.Subscript):
            load = ast.copy_location(ast.Subscript(node.target.value, node.target.slice, ast.Load()), node.target)
            value = ast.copy_location(ast.BinOp(load, node.op, node.value), node)
            return self.store(node.target, value, node)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, f"cannot assign to {ast.unparse(node.target)!r}")
        if node.target.id not in self.locals:
            raise self.error(node.target, f"{node.target.id!r} is used before it is assigned",
                             "assign it a value first")
        current = ir.Var(node.target.id, self.locals[node.target.id], self.loc(node.target))
        result = self.binop(op, current, self.expr(node.value), node)
        return self.assign_name(node.target, result, node)

    def store(self, target: ast.Subscript, value_node: ast.expr, node: ast.AST) -> ir.Stmt:
        view = self.expr(target.value)
        if not isinstance(view.ty, (ViewType, ArrayType)):
            raise self.error(target.value, f"{ast.unparse(target.value)!r} is {type_name(view.ty)}, not a view",
                             "only Slice/DisjointSlice/MutSlice parameters and arrays can be indexed")
        if isinstance(view.ty, ArrayType):
            index = self.index_expr(target.slice, view.ty)
            value = self.convert_implicit(self.expr(value_node), view.ty.elem, value_node,
                                          f"store into {ast.unparse(target.value)}")
            site = self.check_site(target, view, index, f"{ast.unparse(target.value)}[{_index_text(target.slice)}]")
            return ir.Store(view, index, value, self.loc(node), site)
        vt = view.ty
        if vt.is_tensor:
            refuse_tensor_write(self, target, vt)
            flat = self.tensor_index(target.slice, view)
            value = self.convert_implicit(self.expr(value_node), vt.elem, value_node,
                                          f"store into {ast.unparse(target.value)}")
            return ir.Store(view, flat, value, self.loc(node), None)
        index = self.index_expr(target.slice)
        refuse_slice_write(self, target, vt, index)
        value = self.convert_implicit(self.expr(value_node), vt.elem, value_node,
                                      f"store into {ast.unparse(target.value)}")
        site = self.check_site(target, view, index, f"{ast.unparse(target.value)}[{_index_text(target.slice)}]")
        return ir.Store(view, index, value, self.loc(node), site)

    def visit_If(self, node: ast.If) -> ir.Stmt:
        cond = self.condition(node.test)
        divergent = self.is_thread_dependent(cond)
        self.divergent_depth += divergent
        try:
            then = self.block(node.body, self.scope_where(cond, negated=False))
            orelse = self.block(node.orelse, self.scope_where(cond, negated=True))
        finally:
            self.divergent_depth -= divergent
        return ir.If(cond, then, orelse, self.loc(node))

    def visit_While(self, node: ast.While) -> ir.Stmt:
        if node.orelse:
            raise self.error(node.orelse[0], "while/else is not supported", "move the else block after the loop")
        cond = self.condition(node.test)
        divergent = self.is_thread_dependent(cond)
        self.loop_depth += 1
        self.divergent_depth += divergent
        try:
            body = self.block(node.body, self.scope_where(cond, negated=False))
        finally:
            self.loop_depth -= 1
            self.divergent_depth -= divergent
        return ir.While(cond, body, self.loc(node))

    def visit_For(self, node: ast.For) -> list[ir.Stmt]:
        if node.orelse:
            raise self.error(node.orelse[0], "for/else is not supported", "move the else block after the loop")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        it = node.iter
        if isinstance(it, ast.Call) and oxide_name(self.module, it.func) == "static_range":
            return self.static_for(node, it)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.module.symbols):
            raise self.error(it, f"only `for ... in range(...)` loops are supported, not {ast.unparse(it)!r}",
                             "iterate over range(start, stop, step)")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments")
        args = [self.expr(a) for a in it.args]
        start: ir.Expr
        stop: ir.Expr
        step: ir.Expr
        if len(args) == 1:
            start, stop, step = ir.Const(0, I64, self.loc(it), weak=True), args[0], ir.Const(1, I64, self.loc(it), weak=True)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ir.Const(1, I64, self.loc(it), weak=True)
        else:
            start, stop, step = args
        for a, n in zip((start, stop, step), ("start", "stop", "step")):
            if not is_int(a.ty):
                raise self.error(it, f"range() {n} must be an integer, got {type_name(a.ty)}")
        ty = self.common_type([start, stop, step], it)
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.error(it, "range() step must not be zero")
        name = node.target.id
        if name in self.locals and self.locals[name] != ty:
            raise self.error(node.target, f"loop variable {name!r} is {type_name(self.locals[name])} "
                             f"but the range is {ty.name}")
        self.locals.setdefault(name, ty)
        stop_name = self.builder.fresh_name("stop")
        step_name = self.builder.fresh_name("step")
        self.locals[stop_name] = ty
        self.locals[step_name] = ty
        loc = self.loc(node)
        bounds = [self.convert(start, ty, it), self.convert(stop, ty, it), self.convert(step, ty, it)]
        init: list[ir.Stmt] = [ir.Assign(n, v, loc) for n, v in zip((name, stop_name, step_name), bounds)]
        var = ir.Var(name, ty, loc)
        stop_v, step_v = ir.Var(stop_name, ty, loc), ir.Var(step_name, ty, loc)
        if isinstance(step, ir.Const) or self._positive_step(step, it.args[2] if len(it.args) == 3 else None):
            op = CompareOp.LT if not isinstance(step, ir.Const) or step.value > 0 else CompareOp.GT
            cond: ir.Expr = ir.Compare(op, var, stop_v, ty, BOOL, loc)
        else:
            zero = ir.Const(0, ty, loc)
            cond = ir.BoolOp(LogicOp.OR, [
                ir.BoolOp(LogicOp.AND, [ir.Compare(CompareOp.GT, step_v, zero, ty, BOOL, loc), ir.Compare(CompareOp.LT, var, stop_v, ty, BOOL, loc)], BOOL, loc),
                ir.BoolOp(LogicOp.AND, [ir.Compare(CompareOp.LT, step_v, zero, ty, BOOL, loc), ir.Compare(CompareOp.GT, var, stop_v, ty, BOOL, loc)], BOOL, loc),
            ], BOOL, loc)
        divergent = any(self.is_thread_dependent(a) for a in (start, stop, step))
        if divergent:
            self.thread_dependent.add(name)
        rebinds = self._rebinds(name, node.body)
        self.prover.forget(name)
        facts: list[Poly] = []
        if not rebinds:
            self.loop_bindings.add(name)
        guard = None
        if not rebinds and self.bounds_check:
            facts, guard = self.range_facts(bounds[0], bounds[1], bounds[2], ty, node)
        self.loop_depth += 1
        self.divergent_depth += divergent
        try:
            body = self.block(node.body, Scope(self.scopes[-1].facts + facts))
        finally:
            self.loop_depth -= 1
            self.divergent_depth -= divergent
            self.loop_bindings.discard(name)
            self.prover.forget(name)
        if guard and any(id(f) in self.prover.used for f in facts):
            # a proof in the body relied on the loop variable's range: v + step must not wrap
            init.append(self.range_guard(stop_v, step_v, ty, node))
        step_stmt = ir.Assign(name, ir.BinOp(BinaryOp.ADD, var, step_v, ty, loc), loc)
        return [*init, ir.While(cond, body, loc, step=[step_stmt])]

    def _nonneg(self, value: ir.Expr, node: ast.expr) -> bool:
        if isinstance(value, ir.Const):
            return isinstance(value.value, (int, float)) and value.value >= 0
        if isinstance(value.ty, ThreadIndexType):
            return True
        scalar = as_scalar(value.ty)
        return scalar is not None and scalar.kind == "uint"

    def _positive_step(self, value: ir.Expr, node: ast.expr | None) -> bool:
        if node is None:
            return True
        if isinstance(value, ir.Const):
            return isinstance(value.value, int) and value.value > 0
        # products of block/grid dimensions are positive
        def dims_only(e: ir.Expr) -> bool:
            if isinstance(e, ir.SpecialReg):
                return e.name.startswith(("ntid.", "nctaid."))
            if isinstance(e, ir.Var):
                return e.name in self.positive_names
            if isinstance(e, ir.Cast):
                return dims_only(e.operand)
            if isinstance(e, ir.BinOp) and e.op == "*":
                return dims_only(e.left) and dims_only(e.right)
            if isinstance(e, ir.Const):
                return isinstance(e.value, int) and e.value > 0
            return False
        return dims_only(value)

    def element_type(self, node: ast.expr) -> ScalarType:
        """The scalar type an intrinsic's type argument names (``shared.array(n, f32)``)."""
        ty = resolve_annotation(self.module, node, self.typevars, "the element type")
        if isinstance(ty, TypeVarBinding) or not isinstance(ty, ScalarType):
            raise self.error(node, f"{ast.unparse(node)} is not a scalar element type")
        return ty

    def static_for(self, node: ast.For, it: ast.Call) -> list[ir.Stmt]:
        """``for k in oxide.static_range(n)``: the body is repeated n times with k a constant."""
        assert isinstance(node.target, ast.Name)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "static_range() takes 1 to 3 compile-time integers")
        from ..intrinsics.arguments import const_int

        bounds = [const_int(self, a) for a in it.args]
        for b, a in zip(bounds, it.args):
            if b is None:
                raise self.error(a, f"static_range() needs compile-time integers, got {ast.unparse(a)}",
                                 "use a literal or module-level constant, or a plain range()")
        if bounds[2:] == [0]:
            raise self.error(it.args[2], "static_range() step must not be zero")
        steps = range(*bounds)  # type: ignore[arg-type]
        count = max(0, -(-(steps.stop - steps.start) // steps.step))  # len() overflows past 2**63
        if count > 1024:
            raise self.error(it, f"static_range() would unroll {count} times (limit 1024)")
        values = list(steps)
        name = node.target.id
        if name in self.locals and self.locals[name] != I64:
            raise self.error(node.target, f"loop variable {name!r} is {type_name(self.locals[name])}, "
                             "static_range gives i64")
        self.locals[name] = I64
        out: list[ir.Stmt] = []
        self.static_loop_depth += 1
        rebinds = self._rebinds(name, node.body)
        outer = self.constexprs.get(name)
        try:
            for v in values:
                if rebinds:  # the body assigns it: an i64 variable set to each value
                    value = ir.Const(v, I64, self.loc(node))
                    self.define(name, value)
                    out.append(ir.Assign(name, value, self.loc(node)))
                else:  # a compile-time constant, typed by its use like a literal
                    self.constexprs[name] = v
                out.extend(self.block(node.body))
        finally:
            self.static_loop_depth -= 1
            if not rebinds:
                if outer is None:
                    self.constexprs.pop(name, None)
                else:
                    self.constexprs[name] = outer
            self.prover.forget(name)
        if values and not rebinds:  # after the loop it holds its last value, as in Python
            out.append(ir.Assign(name, ir.Const(values[-1], I64, self.loc(node)), self.loc(node)))
        return out

    def visit_Break(self, node: ast.Break) -> ir.Stmt:
        if self.static_loop_depth and self.loop_depth == 0:
            raise self.error(node, "`break` is not allowed in a static_range loop", "use range() instead")
        if self.loop_depth == 0:
            raise self.error(node, "`break` outside a loop")
        return ir.Break(self.loc(node))

    def visit_Continue(self, node: ast.Continue) -> ir.Stmt:
        if self.static_loop_depth and self.loop_depth == 0:
            raise self.error(node, "`continue` is not allowed in a static_range loop", "use range() instead")
        if self.loop_depth == 0:
            raise self.error(node, "`continue` outside a loop")
        return ir.Continue(self.loc(node))

    def visit_Return(self, node: ast.Return) -> ir.Stmt:
        if node.value is None:
            if self.ret not in (None, VOID):
                raise self.error(node, f"this function returns {type_name(self.ret)}; `return` needs a value")  # type: ignore[arg-type]
            self.ret = VOID
            return ir.Return(None, self.loc(node))
        if self.is_kernel:
            raise self.error(node, "a kernel cannot return a value",
                             "write results into a DisjointSlice parameter")
        value = self.expr(node.value)
        if isinstance(value.ty, (ViewType, VoidType, ArrayType)):
            raise self.error(node.value, f"cannot return {type_name(value.ty)}")
        if isinstance(value.ty, TupleType):
            if self.ret is None:
                self.ret = value.ty
            elif self.ret != value.ty:
                raise self.error(node.value, f"this function returns {type_name(self.ret)}, "  # type: ignore[arg-type]
                                 f"not {type_name(value.ty)}", "return the same kind of value on every path")
            return ir.Return(value, self.loc(node))
        if self.ret is None:
            value = self.materialize(value)
            if isinstance(value.ty, ThreadIndexType):
                value = ir.Cast(value, I64, value.loc)
            self.ret = value.ty
        else:
            if isinstance(self.ret, VoidType):
                raise self.error(node, "this function is declared `-> None` but returns a value")
            value = self.convert_implicit(value, self.ret, node.value, "return value")  # type: ignore[arg-type]
        return ir.Return(value, self.loc(node))

    def visit_With(self, node: ast.With) -> list[ir.Stmt]:
        if len(node.items) != 1:
            raise self.error(node, "only `with oxide.unsafe():` is supported")
        item = node.items[0]
        ctx = item.context_expr
        if not (isinstance(ctx, ast.Call) and oxide_name(self.module, ctx.func) == "unsafe" and not ctx.args):
            raise self.error(ctx, f"`with {ast.unparse(ctx)}` is not supported in kernels",
                             "the only context manager is `with oxide.unsafe():`")
        if item.optional_vars is not None:
            raise self.error(item.optional_vars, "`with oxide.unsafe()` binds no name")
        self.unsafe_depth += 1
        try:
            return self.block(node.body)
        finally:
            self.unsafe_depth -= 1

    def visit_Assert(self, node: ast.Assert) -> ir.Stmt | None:
        cond = self.condition(node.test)
        what = ast.unparse(node.test)
        if node.msg is not None:
            if not (isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str)):
                raise self.error(node.msg, "an assert message must be a string literal")
            what = f"{what}: {node.msg.value}"
        site = self.builder.add_error_site("assert", self.kernel_name, self.module, node, what)
        self.add_facts(cond, negated=False)
        # in the prefix, the launch-preconditions pass may move it to the runtime
        return ir.Check(cond, site, self.loc(node), hoistable=self.prefix_open and len(self.scopes) == 2)

    # ---- bounds-check facts (bounds.py proves; these keep the scopes) ----------------------

    def _rebinds(self, name: str, body: list[ast.stmt]) -> bool:
        """Does a loop over ``name`` rebind it: an enclosing loop's variable, or assigned in ``body``?"""
        return name in self.loop_bindings or any(
            isinstance(t, ast.Name) and t.id == name for t in _assignment_targets(body))

    def _stable(self, name: str) -> bool:
        """Does ``name`` keep one value while it is visible (so facts about it stay true)?"""
        if name in self.loop_bindings:
            return True
        if name in self.param_names:
            return self.assign_counts.get(name, 0) == 0
        return self.assign_counts.get(name, 0) == 1

    def define(self, name: str, value: ir.Expr | None) -> None:
        if self.bounds_check:
            self.prover.define(name, value if self._stable(name) else None, self.scopes[-1].facts)

    def add_facts(self, cond: ir.Expr, negated: bool) -> None:
        if self.bounds_check:
            self.scopes[-1].facts += self.prover.facts_of(cond, negated, self.scopes[-1].facts)

    def scope_where(self, cond: ir.Expr, negated: bool) -> Scope:
        """The current facts plus those of ``cond`` (or of its negation)."""
        facts = self.scopes[-1].facts
        if not self.bounds_check:
            return Scope(list(facts))
        return Scope(facts + self.prover.facts_of(cond, negated, facts))

    def range_facts(self, start: ir.Expr, stop: ir.Expr, step: ir.Expr, ty: ScalarType,
                    node: ast.For) -> tuple[list[Poly], bool]:
        """Facts on the variable of ``for v in range(start, stop, step)`` inside the body, and
        whether they need a check at loop entry that ``v + step`` cannot wrap around."""
        assert isinstance(node.target, ast.Name)
        facts = self.scopes[-1].facts
        p = self.prover
        lo, hi, st = p.poly(start, facts), p.poly(stop, facts), p.poly(step, facts)
        if lo is None or hi is None or st is None:
            return [], False
        v = p.poly(ir.Var(node.target.id, ty, self.loc(node.target)), facts)
        assert v is not None
        limits = _int_limits(ty)
        positive = p.nonneg(add(st, const(-1)), facts)
        if positive:  # step ≥ 1: start ≤ v < stop
            body = [add(v, lo, -1), add(add(hi, v, -1), const(-1))]
            # v + step must not wrap: stop - 1 + step ≤ max
            no_wrap = add(add(const(limits[1] + 1), hi, -1), st, -1)
        elif p.nonneg(add(const(-1), st, -1), facts):  # step ≤ -1: stop < v ≤ start
            body = [add(lo, v, -1), add(add(v, hi, -1), const(-1))]
            no_wrap = add(add(hi, const(1 - limits[0])), st)
        else:
            return [], False
        if p.nonneg(no_wrap, facts):
            return body, False
        if ty.bits > 32 or not positive:
            return [], False  # no wider type to check in (or no guard for negative steps): keep the checks
        return body + [no_wrap], True  # using any of them adds the entry check (range_guard)

    def range_guard(self, stop: ir.Expr, step: ir.Expr, ty: ScalarType, node: ast.For) -> ir.Stmt:
        """``stop + step <= max + 1``, computed in i64 (both are values of 32 bits or fewer)."""
        loc = self.loc(node.iter)
        limits = _int_limits(ty)
        limit = ir.Const(limits[1] + 1, I64, loc)
        total = ir.BinOp(BinaryOp.ADD, ir.Cast(stop, I64, loc), ir.Cast(step, I64, loc), I64, loc)
        site = self.builder.add_error_site(
            "assert", self.kernel_name, self.module, node.iter,
            f"{ast.unparse(node.iter)}: stop + step must not exceed {limits[1] + 1} ({ty.name} loop variable)")
        return ir.Check(ir.Compare(CompareOp.LE, total, limit, I64, BOOL, loc), site, loc)

    def proves_vector(self, index: ir.Expr, width: int, view: ir.Expr) -> bool:
        """Elements width·index … width·index + width - 1 all in range?"""
        facts = self.scopes[-1].facts
        bound = self.view_bound(view)
        p = self.prover.poly(index, facts)
        if p is None or bound is None:
            return False
        first = mul(p, const(width)) or Poly()
        return self.prover.nonneg(first, facts) and self.prover.in_range(add(first, const(width - 1)), bound, facts)

    def proves(self, index: ir.Expr, bound: Poly) -> bool:
        """Is ``0 <= index < bound`` proven by the facts in scope?"""
        facts = self.scopes[-1].facts
        p = self.prover.poly(index, facts)
        if p is None:
            return False
        # unrolled loops ask the same question under the same facts many times; the entry keeps
        # the facts alive, so their ids in the key cannot be reused by other objects
        key = (_poly_key(p), _poly_key(bound), tuple(map(id, facts)))
        if key not in self.proofs:
            self.proofs[key] = (self.prover.in_range(p, bound, facts), tuple(facts))
        return self.proofs[key][0]

    def view_bound(self, view: ir.Expr, axis: int | None = None) -> Poly | None:
        if not (isinstance(view, ir.Var) and isinstance(view.ty, ViewType)):
            return None
        if axis is None or not view.ty.is_tensor:
            return atom(("len", view.name))
        return atom(("shape", view.name, str(axis)))

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        if not self.bounds_check:
            return None
        if isinstance(index, ir.Intrinsic) and index.name == "flat_index":
            return None  # an array indexed per axis: each axis was proven or checked
        bound = self.view_bound(view)
        if bound is None and isinstance(view.ty, ArrayType) and view.ty.size is not None:
            bound = const(view.ty.size)
        if bound is not None and self.proves(index, bound):
            return None
        if isinstance(index, ir.Const) and isinstance(index.value, int) and index.value < 0:
            raise self.error(node, "negative indices are not supported",
                             "views have no wrap-around indexing; index from 0")
        if isinstance(view.ty, ArrayType):
            size = view.ty.size
            if size is None:
                return None  # dynamic shared memory: its size is known only at launch
            if isinstance(index, ir.Const) and isinstance(index.value, int):
                if index.value >= size:
                    raise self.error(node, f"index {index.value} is out of bounds for an array of {size} elements",
                                     f"valid indices are 0 to {size - 1}")
                return None
        return self.builder.add_error_site("bounds", self.kernel_name, self.module, node, what)

    # ---- expressions --------------------------------------------------------------------

    def expr(self, node: ast.expr) -> ir.Expr:
        result = self.visit(node)
        assert result is not None
        return result  # type: ignore[no-any-return]

    def condition(self, node: ast.expr) -> ir.Expr:
        value = self.expr(node)
        return self.truth(value, node)

    def truth(self, value: ir.Expr, node: ast.AST) -> ir.Expr:
        if value.ty == BOOL:
            return value
        if isinstance(value.ty, ViewType):
            raise self.error(node, f"a view ({type_name(value.ty)}) has no truth value",
                             "compare len(view) with 0 instead")
        if isinstance(value.ty, VoidType):
            raise self.error(node, "this call returns nothing and has no truth value")
        scalar = self.materialize(value)
        st = as_scalar(scalar.ty)
        if st is None:
            raise self.error(node, f"{type_name(value.ty)} has no truth value", "test a number or a comparison")
        return ir.Compare(CompareOp.NE, scalar, ir.Const(0, st, value.loc), st, BOOL, value.loc)

    def visit_Constant(self, node: ast.Constant) -> ir.Expr:
        v = node.value
        if isinstance(v, bool):
            return ir.Const(v, BOOL, self.loc(node))
        if isinstance(v, (int, float)):
            return ir.Const(v, literal_type(v), self.loc(node), weak=True)
        what = "None" if v is None else type(v).__name__
        raise self.error(node, f"{what} constants are not supported in kernels",
                         "kernels compute with numbers and booleans only")

    def visit_Name(self, node: ast.Name) -> ir.Expr:
        name = node.id
        if name in self.constexprs:
            return ir.Const(self.constexprs[name], I64, self.loc(node), weak=True)
        if name in self.locals:
            return ir.Var(name, self.locals[name], self.loc(node))
        sym = self.module.symbols.get(name)
        if sym is not None and sym.kind == "constant":
            value = _constant_value(sym)
            if isinstance(value, bool):
                return ir.Const(value, BOOL, self.loc(node))
            return ir.Const(value, literal_type(value), self.loc(node), weak=True)
        if name in self.assign_counts:  # assigned somewhere, just not before this use
            raise self.error(node, f"{name!r} is used before it is assigned",
                             "assign it on every path before this use")
        value_node = getattr(sym.node, "value", None) if sym is not None else None
        if value_node is not None and _is_number_expression(value_node):
            raise self.error(node, f"the module constant {name!r} = {ast.unparse(value_node)} does not fold to a "
                                   f"64-bit number", f"fix its definition at {self.module.path.name}:"
                                                     f"{sym.node.lineno}: no division by zero, no value past 64 bits")  # type: ignore[union-attr]
        if sym is not None:
            raise self.error(node, f"{name!r} cannot be used as a value in a kernel",
                             "only local variables, parameters and module-level number constants are values")
        raise self.error(node, f"unknown name {name!r}", "define it, or pass it as a parameter")

    def visit_Attribute(self, node: ast.Attribute) -> ir.Expr:
        parts = dotted_parts(node)
        if parts and len(parts) >= 2:
            full = oxide_name(self.module, node.value)
            if full is not None:
                pieces = tuple(full.split("."))
                if len(pieces) == 2 and pieces in SPECIAL_REGISTERS and node.attr in ("x", "y", "z"):
                    return ir.SpecialReg(f"{SPECIAL_REGISTERS[pieces]}.{node.attr}", I32, self.loc(node))
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.locals:
            raise self.error(node, f"{type_name(self.locals[base.id])} has no attribute {node.attr!r}")
        raise self.error(node, f"unknown attribute {ast.unparse(node)!r}",
                         "available: thread.idx.x/y/z, block.idx.x, block.dim.x, grid.dim.x")

    def visit_Subscript(self, node: ast.Subscript) -> ir.Expr:
        if (isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "strides")
                and isinstance(node.value.value, ast.Name)
                and isinstance(self.locals.get(node.value.value.id), ViewType)):
            tv = self.expr(node.value.value)
            assert isinstance(tv.ty, ViewType)
            axis = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < tv.ty.ndim:
                raise self.error(node.slice, f"{node.value.attr} takes a constant axis from 0 to {tv.ty.ndim - 1}")
            which = "shape" if node.value.attr == "shape" else "stride"
            if not tv.ty.is_tensor:
                if which == "shape":
                    return ir.ViewLen(tv, I64, self.loc(node))
                return ir.Const(1, I64, self.loc(node))
            return ir.ViewDim(tv, axis, which, I64, self.loc(node))
        view = self.expr(node.value)
        if not isinstance(view.ty, (ViewType, ArrayType)):
            raise self.error(node.value, f"{ast.unparse(node.value)!r} is {type_name(view.ty)}, not a view",
                             "only Slice/DisjointSlice/MutSlice parameters and arrays can be indexed")
        if isinstance(view.ty, ViewType) and view.ty.is_tensor:
            return ir.ViewLoad(view, self.tensor_index(node.slice, view), view.ty.elem, self.loc(node), None)
        index = self.index_expr(node.slice, view.ty)
        site = self.check_site(node, view, index, f"{ast.unparse(node.value)}[{_index_text(node.slice)}]")
        return ir.ViewLoad(view, index, view.ty.elem, self.loc(node), site)

    def tensor_index(self, node: ast.expr, view: ir.Expr) -> ir.Expr:
        """``t[i, j]`` → the element offset Σ index·stride, each axis checked against its size."""
        vt = view.ty
        assert isinstance(vt, ViewType)
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(elts) != vt.ndim:
            raise self.error(node, f"this tensor has {vt.ndim} dimension(s): index it with {vt.ndim} value(s)",
                             f"write t[{', '.join('i' + str(k) for k in range(vt.ndim))}]")
        loc = self.loc(node)
        offset: ir.Expr | None = None
        for axis, elt in enumerate(elts):
            part = self.index_expr(elt)
            part64 = ir.Cast(part, I64, loc) if isinstance(part.ty, ThreadIndexType) else self.convert(self.materialize(part), I64, elt)
            bound = self.view_bound(view, axis)
            if self.bounds_check and not (bound is not None and self.proves(part64, bound)):
                view_text = view.name if isinstance(view, ir.Var) else "tensor"
                site = self.builder.add_error_site("bounds", self.kernel_name, self.module, elt,
                                                   f"{view_text}[{_index_text(node)}] axis {axis}")
                part64 = ir.Intrinsic("checked_index", [part64, ir.ViewDim(view, axis, "shape", I64, loc)], I64, loc, site)
            term: ir.Expr = ir.BinOp(BinaryOp.MUL, part64, ir.ViewDim(view, axis, "stride", I64, loc), I64, loc)
            offset = term if offset is None else ir.BinOp(BinaryOp.ADD, offset, term, I64, loc)
        assert offset is not None
        return ir.Intrinsic("flat_index", [offset], I64, loc)

    def index_expr(self, node: ast.expr, container: Type | None = None) -> ir.Expr:
        if isinstance(node, ast.Slice):
            raise self.error(node, "slicing a view is not supported", "index one element at a time")
        if isinstance(container, ArrayType) and container.shape is not None and len(container.shape) > 1:
            if not (isinstance(node, ast.Tuple) and len(node.elts) == len(container.shape)):
                raise self.error(node, f"this array has {len(container.shape)} dimensions: index it as "
                                 f"a[{', '.join('i' + str(k) for k in range(len(container.shape)))}]",
                                 "give one index per dimension, separated by commas")
            flat: ir.Expr | None = None
            loc = self.loc(node)
            for axis, (dim, elt) in enumerate(zip(container.shape, node.elts)):
                part = self.index_expr(elt)
                part = self.convert(self.materialize(part), I64, elt) if not isinstance(part.ty, ThreadIndexType) else ir.Cast(part, I64, loc)
                if isinstance(part, ir.Const):
                    if not 0 <= int(part.value) < dim:
                        raise self.error(elt, f"index {part.value} is out of bounds for axis {axis} of size {dim}")
                elif self.bounds_check and not self.proves(part, const(dim)):
                    # one check per axis: identical checks (e.g. of thread.idx.y) fold together
                    site = self.builder.add_error_site("bounds", self.kernel_name, self.module, elt,
                                                       f"axis {axis} index {ast.unparse(elt)} (size {dim})")
                    part = ir.Intrinsic("checked_index", [part, ir.Const(dim, I64, loc)], I64, loc, site)
                flat = part if flat is None else ir.BinOp(BinaryOp.ADD, ir.BinOp(BinaryOp.MUL, flat, ir.Const(dim, I64, loc), I64, loc), part, I64, loc)
            assert flat is not None
            return ir.Intrinsic("flat_index", [flat], I64, loc)
        if isinstance(node, ast.Tuple):
            raise self.error(node, "1-D views take one index", "use a single integer index")
        index = self.expr(node)
        if not is_int(index.ty):
            raise self.error(node, f"view index must be an integer, got {type_name(index.ty)}",
                             "convert it with i64(...)")
        return index

    def visit_BinOp(self, node: ast.BinOp) -> ir.Expr:
        op = BIN_OPS.get(type(node.op))
        if op is None:
            what = {ast.Pow: "**", ast.MatMult: "@"}.get(type(node.op), type(node.op).__name__)
            raise self.error(node, f"operator {what} is not supported",
                             "write x * x for squares" if what == "**" else "")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: BinaryOp, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        for side in (left, right):
            if as_scalar(side.ty) is None:  # views, tuples, arrays, nothing
                raise self.error(node, f"operator {op} cannot take {type_name(side.ty)}",
                                 "index the view to get an element" if isinstance(side.ty, ViewType) else "")
        loc = self.loc(node)
        if isinstance(left, ir.Const) and isinstance(right, ir.Const) and left.weak and right.weak:
            return self.fold(op, left, right, node)
        left, right, ty = self.unify(left, right, node, op)
        if ty.kind == "bool":
            if op in ("&", "|", "^"):
                return ir.BinOp(op, left, right, ty, loc)
            raise self.error(node, f"operator {op} cannot take bool operands", "convert with i32(...) first")
        if op in ("&", "|", "^", "<<", ">>") and ty.kind == "float":
            raise self.error(node, f"operator {op} needs integers, got {ty.name}")
        if op == "/" and ty.kind != "float":
            left, right, ty = self.convert(left, F64, node), self.convert(right, F64, node), F64
        if op in ("//", "%") and ty.kind != "float" and isinstance(right, ir.Const) and int(right.value) == 0:
            raise self.error(node, f"integer {'division' if op == '//' else 'modulo'} by the constant 0",
                             "x // 0 is 0 and x % 0 is x (docs/language.md): write that value instead")
        if op in ("<<", ">>") and isinstance(right, ir.Const) and not 0 <= int(right.value) < ty.bits:
            raise self.error(node, f"shift by {right.value}: {ty.name} shifts by 0 to {ty.bits - 1}",
                             f"{'x << n' if op == '<<' else 'x >> n'} by {ty.bits} or more gives "
                             f"{'0' if op == '<<' or ty.kind == 'uint' else '0 or -1'}; write that value instead")
        if op == "*" and ty.kind == "int" and ty.bits == 64:
            self.mark_nonneg_widening(left, right)
        return ir.BinOp(op, left, right, ty, loc)

    def mark_nonneg_widening(self, *sides: ir.Expr) -> None:
        """``i64(r) * cols`` with r, cols ≥ 0 proven: both widen with zext, so the product is one
        32×32→64 multiply (mul.wide.u32) instead of a 64-bit one (sext and zext do not pair)."""
        if not self.bounds_check:
            return
        if not all(isinstance(s, ir.Cast) or (isinstance(s, ir.Const) and int(s.value) >= 0) for s in sides):
            return
        casts = [s for s in sides if isinstance(s, ir.Cast)]
        for c in casts:
            src = as_scalar(c.operand.ty)
            if src is None or src.kind != "int" or src.bits > 32:
                return
            p = self.prover.poly(c.operand, self.scopes[-1].facts)
            if p is None or not self.prover.proves_nonneg(p, self.scopes[-1].facts):
                return
        for c in casts:
            c.nonneg = True

    def fold(self, op: BinaryOp, left: ir.Const, right: ir.Const, node: ast.AST) -> ir.Expr:
        a, b = left.value, right.value
        if op in ("<<", ">>") and isinstance(b, int) and not isinstance(a, float) and not 0 <= b <= 64:
            raise self.error(node, f"shift by {b} in a constant expression: the amount must be 0 to 64")
        try:
            value = op.evaluate(a, b)
        except ZeroDivisionError:
            raise self.error(node, "division by zero in a constant expression") from None
        except TypeError:
            raise self.error(node, f"operator {op} cannot take these constants") from None
        if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 64):
            raise self.error(node, f"the constant expression's value {value} does not fit in 64 bits")
        return ir.Const(value, literal_type(value), self.loc(node), weak=True)

    def unify(self, left: ir.Expr, right: ir.Expr, node: ast.AST, op: str) -> tuple[ir.Expr, ir.Expr, ScalarType]:
        lw = isinstance(left, ir.Const) and left.weak
        rw = isinstance(right, ir.Const) and right.weak
        lt, rt = as_scalar(left.ty), as_scalar(right.ty)
        assert lt is not None and rt is not None
        if lw and not rw:
            ty = self.literal_partner_type(left, rt)  # type: ignore[arg-type]
        elif rw and not lw:
            ty = self.literal_partner_type(right, lt)  # type: ignore[arg-type]
        else:
            try:
                ty = promote(lt, rt)
            except PromotionError as exc:
                raise self.error(node, f"operator {op}: {exc}",
                                 f"convert one side explicitly, e.g. {rt.name}(...) or {lt.name}(...)") from None
        return self.convert(left, ty, node), self.convert(right, ty, node), ty

    def literal_partner_type(self, lit: ir.Const, other: ScalarType) -> ScalarType:
        if other.kind == "bool":
            return lit.ty if lit.ty.kind != "bool" else other
        if isinstance(lit.value, float) and other.kind != "float":
            return F64
        if isinstance(lit.value, int) and other.kind in ("int", "uint") and not fits(lit.value, other):
            raise self.builder.error_at(self.module, lit.loc,
                                        f"the literal {lit.value} does not fit in {other.name}",
                                        "use a wider type")
        return other

    def common_type(self, values: list[ir.Expr], node: ast.AST) -> ScalarType:
        strong = [as_scalar(v.ty) for v in values if not (isinstance(v, ir.Const) and v.weak)]
        if not strong:
            return I64
        ty = strong[0]
        assert ty is not None
        for other in strong[1:]:
            assert other is not None
            try:
                ty = promote(ty, other)
            except PromotionError as exc:
                raise self.error(node, str(exc), "convert explicitly") from None
        return ty

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ir.Expr:
        operand = self.expr(node.operand)
        loc = self.loc(node)
        if isinstance(node.op, ast.Not):
            return ir.Not(self.truth(operand, node.operand), BOOL, loc)
        if as_scalar(operand.ty) is None:
            raise self.error(node, f"unary operator cannot take {type_name(operand.ty)}")
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand, ir.Const) and operand.weak:
                return ir.Const(-operand.value, operand.ty, loc, weak=True)
            operand = self.materialize(operand)
            st = as_scalar(operand.ty)
            assert st is not None
            if st.kind == "bool":
                raise self.error(node, "cannot negate a bool")
            if isinstance(operand.ty, ThreadIndexType):
                operand = ir.Cast(operand, I64, loc)
            return ir.Neg(operand, st, loc)
        # Invert
        operand = self.materialize(operand)
        st = as_scalar(operand.ty)
        assert st is not None
        if st.kind not in ("int", "uint"):
            raise self.error(node, f"operator ~ needs an integer, got {st.name}")
        return ir.BinOp(BinaryOp.BIT_XOR, self.convert(operand, st, node), ir.Const(-1 if st.kind == "int" else (1 << st.bits) - 1, st, loc), st, loc)

    def visit_BoolOp(self, node: ast.BoolOp) -> ir.Expr:
        # `i < len(x) and x[i] > 0`: later operands run only where the earlier ones allow
        negated = isinstance(node.op, ast.Or)
        values: list[ir.Expr] = []
        scope = Scope(list(self.scopes[-1].facts))
        for v in node.values:
            value = self.truth(self.expr_where(v, scope), v)
            values.append(value)
            self.scopes.append(scope)
            try:
                scope = self.scope_where(value, negated)
            finally:
                self.scopes.pop()
        return ir.BoolOp(LogicOp.OR if negated else LogicOp.AND, values, BOOL, self.loc(node))

    def expr_where(self, node: ast.expr, scope: Scope) -> ir.Expr:
        """``node`` translated under the facts of ``scope``."""
        self.scopes.append(scope)
        try:
            return self.expr(node)
        finally:
            self.scopes.pop()

    def visit_Compare(self, node: ast.Compare) -> ir.Expr:
        parts: list[ir.Expr] = []
        left_node = node.left
        left = self.expr(left_node)
        for op_node, right_node in zip(node.ops, node.comparators):
            op = CMP_OPS.get(type(op_node))
            if op is None:
                raise self.error(node, f"comparison {type(op_node).__name__} is not supported",
                                 "use <, <=, >, >=, == or !=")
            if len(node.ops) > 1 and not isinstance(right_node, (ast.Name, ast.Constant)):
                raise self.error(right_node, "chained comparisons need plain names or constants in the middle",
                                 "split it into two comparisons joined by `and`")
            right = self.expr(right_node)
            for side in (left, right):
                if as_scalar(side.ty) is None:
                    raise self.error(node, f"cannot compare {type_name(side.ty)}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const) and left.weak and right.weak:
                left, right = self.materialize(left), self.materialize(right)
            l2, r2, ty = self.unify(left, right, node, op)
            if ty.kind == "bool" and op not in ("==", "!="):
                raise self.error(node, f"cannot order booleans with {op}")
            parts.append(ir.Compare(op, l2, r2, ty, BOOL, self.loc(node)))
            left = right
        if len(parts) == 1:
            return parts[0]
        return ir.BoolOp(LogicOp.AND, parts, BOOL, self.loc(node))

    def visit_IfExp(self, node: ast.IfExp) -> ir.Expr:
        cond = self.condition(node.test)
        a = self.expr_where(node.body, self.scope_where(cond, negated=False))
        b = self.expr_where(node.orelse, self.scope_where(cond, negated=True))
        if as_scalar(a.ty) is None or as_scalar(b.ty) is None:
            raise self.error(node, "a conditional expression must produce scalars")
        if isinstance(a, ir.Const) and isinstance(b, ir.Const) and a.weak and b.weak:
            a, b = self.materialize(a), self.materialize(b)
        a2, b2, ty = self.unify(a, b, node, "if/else")
        return ir.Select(cond, a2, b2, ty, self.loc(node))

    def visit_Call(self, node: ast.Call) -> ir.Expr:
        from ..intrinsics import KEYWORD_INTRINSICS

        keyword_name = oxide_name(self.module, node.func) if node.keywords else None
        if keyword_name in KEYWORD_INTRINSICS and not any(isinstance(a, ast.Starred) for a in node.args):
            return self.oxide_call(keyword_name, node)  # the intrinsic's typing checks the keywords
        if node.keywords:
            raise self.error(node.keywords[0].value if node.keywords[0].value else node,
                             "keyword arguments are not supported in kernel calls", "pass arguments by position")
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "*args in calls is not supported")
        loc = self.loc(node)
        func = node.func
        name = oxide_name(self.module, func)
        if name is not None:
            return self.oxide_call(name, node)
        if isinstance(func, ast.Name) and func.id not in self.module.symbols and func.id not in self.locals:
            builtin = func.id
            if builtin == "len":
                if len(node.args) != 1:
                    raise self.error(node, "len() takes one view")
                view = self.expr(node.args[0])
                if isinstance(view.ty, ArrayType) and view.ty.shape is not None:
                    return ir.Const(view.ty.shape[0], I64, loc, weak=True)
                if not isinstance(view.ty, ViewType):
                    raise self.error(node.args[0], f"len() needs a view, got {type_name(view.ty)}")
                if view.ty.is_tensor:
                    return ir.ViewDim(view, 0, "shape", I64, loc)
                return ir.ViewLen(view, I64, loc)
            if builtin in PYTHON_SCALARS:
                return self.conversion(PYTHON_SCALARS[builtin], node)
            if builtin in ("min", "max"):
                return self.minmax(builtin, node)
            if builtin == "abs":
                if len(node.args) != 1:
                    raise self.error(node, "abs() takes one argument")
                value = self.materialize(self.expr(node.args[0]))
                st = as_scalar(value.ty)
                if st is None or st.kind == "bool":
                    raise self.error(node, f"abs() needs a number, got {type_name(value.ty)}")
                value = self.convert(value, st, node)
                if st.kind == "uint":
                    return value
                zero = ir.Const(0, st, loc)
                return ir.Select(ir.Compare(CompareOp.LT, value, zero, st, BOOL, loc), ir.Neg(value, st, loc), value, st, loc)
            if builtin == "range":
                raise self.error(node, "range() is only allowed as the iterable of a for loop")
            if builtin in ("print", "input", "open"):
                raise self.error(node, f"{builtin}() is not available on the GPU",
                                 "return values through a view and print them on the host")
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and isinstance(self.locals.get(func.value.id), ViewType)):
            return self.view_method(func, node)
        target = self.builder.resolve_function(self.module, func)
        if target is None:
            raise self.error(func, f"unknown function {ast.unparse(func)!r}",
                             "call a function defined at module level in this project, or an oxide intrinsic")
        callee_module, callee = target
        args = [self.expr(a) for a in node.args]
        return self.builder.call_device(self, callee_module, callee, args, node)

    def view_method(self, func: ast.Attribute, node: ast.Call) -> ir.Expr:
        """``x.load4(k)`` and the other view methods: registry entries ``view.<method>``
        (``oxide_build/intrinsics/vector.py``)."""
        from ..intrinsics import INTRINSICS

        info = INTRINSICS.get(f"view.{func.attr}")
        if info is None or not info.method:
            raise self.error(func, f"views have no method {func.attr!r}", "view methods: load2, load4, store2, store4")
        return info.typing(self, info, node)

    def refuse_vector_store(self, func: ast.Attribute, node: ast.Call, vt: ViewType, index: ir.Expr) -> None:
        """``frontend/views.py``'s rule for a vector store, for the registry's typing (which
        cannot import the frontend)."""
        refuse_vector_store(self, func, node, vt, index)

    def oxide_call(self, name: str, node: ast.Call) -> ir.Expr:
        from ..intrinsics import INTRINSICS

        info = INTRINSICS.get(name)
        if info is not None and not info.method:
            return info.typing(self, info, node)
        if name == "static_range":
            # unrolling is IR structure (the for loop's body repeated), done by static_for
            raise self.error(node, "static_range() is only allowed as the iterable of a for loop")
        if name == "boolean":
            return self.conversion(BOOL, node)
        if name in SCALAR_TYPES:
            return self.conversion(SCALAR_TYPES[name], node)
        if name in ("kernel", "device", "extern", "TypeVar"):
            raise self.error(node, f"oxide.{name} cannot be called inside a kernel")
        raise self.error(node.func, f"oxide.{name} is not a device intrinsic (or not supported yet)",
                         "see docs/language.md for the intrinsics available in kernels")

    def conversion(self, ty: ScalarType, node: ast.Call) -> ir.Expr:
        if len(node.args) != 1:
            raise self.error(node, f"{ty.name}() takes exactly one argument")
        value = self.expr(node.args[0])
        if as_scalar(value.ty) is None:
            raise self.error(node.args[0], f"cannot convert {type_name(value.ty)} to {ty.name}")
        if isinstance(value, ir.Const) and value.weak:
            if ty.kind in ("int", "uint"):
                if isinstance(value.value, float):
                    v: int | float | bool = int(value.value)
                else:
                    v = value.value
                if not fits(int(v), ty):
                    raise self.error(node, f"{value.value} does not fit in {ty.name}")
                return ir.Const(int(v), ty, self.loc(node))
            if ty.kind == "float":
                return ir.Const(float(value.value), ty, self.loc(node))
            return ir.Const(bool(value.value), ty, self.loc(node))
        return self.convert(value, ty, node)

    def minmax(self, which: str, node: ast.Call) -> ir.Expr:
        if len(node.args) < 2:
            raise self.error(node, f"{which}() takes two or more numbers")
        values = [self.expr(a) for a in node.args]
        result = values[0]
        for v in values[1:]:
            for side in (result, v):
                if as_scalar(side.ty) is None:
                    raise self.error(node, f"{which}() needs numbers, got {type_name(side.ty)}")
            if isinstance(result, ir.Const) and isinstance(v, ir.Const) and result.weak and v.weak:
                result = ir.Const(min(result.value, v.value) if which == "min" else max(result.value, v.value),
                                  literal_type(result.value), self.loc(node), weak=True)
                continue
            a, b, ty = self.unify(result, v, node, which)
            op = CompareOp.LT if which == "min" else CompareOp.GT
            result = ir.Select(ir.Compare(op, a, b, ty, BOOL, self.loc(node)), a, b, ty, self.loc(node))
        return result

    # ---- conversions ----------------------------------------------------------------------

    def materialize(self, value: ir.Expr) -> ir.Expr:
        """Gives a weak literal its default type (i64 / f64)."""
        if isinstance(value, ir.Const) and value.weak:
            if isinstance(value.value, int) and not isinstance(value.value, bool) and not fits(value.value, value.ty):
                raise self.builder.error_at(self.module, value.loc, f"the literal {value.value} does not fit in {value.ty.name}",
                                            "give it a type that holds it, e.g. u64(...), or use a smaller value")
            return ir.Const(value.value, value.ty, value.loc)
        return value

    def convert(self, value: ir.Expr, ty: ScalarType, node: ast.AST) -> ir.Expr:
        if isinstance(value, ir.Const) and value.weak:
            if ty.kind in ("int", "uint"):
                if isinstance(value.value, float):
                    raise self.error(node, f"the float literal {value.value} cannot become {ty.name}",
                                     f"write an integer, or convert with {ty.name}(...)")
                if not fits(int(value.value), ty):
                    raise self.error(node, f"the literal {value.value} does not fit in {ty.name}",
                                     "use a wider type, e.g. i64 or u32")
                return ir.Const(int(value.value), ty, value.loc)
            if ty.kind == "float":
                return ir.Const(float(value.value), ty, value.loc)
            return ir.Const(bool(value.value), ty, value.loc)
        if value.ty == ty:
            return value
        return ir.Cast(value, ty, value.loc)

    def convert_implicit(self, value: ir.Expr, ty: Type, node: ast.AST, what: str) -> ir.Expr:
        """Implicit conversion at an assignment, argument or return: literals adapt; other
        values must already have the type, or widen without loss (i32 → i64, f32 → f64)."""
        if isinstance(ty, ThreadIndexType):
            if isinstance(value.ty, ThreadIndexType):
                return value
            raise self.error(node, f"{what} needs a ThreadIndex, got {type_name(value.ty)}",
                             "only thread.index_1d() makes a ThreadIndex")
        if isinstance(ty, (ViewType, VoidType, ArrayType, TupleType)):
            if value.ty == ty:
                return value
            raise self.error(node, f"{what} needs {type_name(ty)}, got {type_name(value.ty)}",
                             "return the same kind of value on every path" if what == "return value" else
                             f"pass a {type_name(ty)}")
        if isinstance(value.ty, (ViewType, VoidType, ArrayType, TupleType)):
            raise self.error(node, f"{what} needs {ty.name}, got {type_name(value.ty)}")
        if isinstance(value, ir.Const) and value.weak:
            if isinstance(value.value, float) and ty.kind != "float":
                raise self.error(node, f"{what} needs {ty.name}, got the float literal {value.value}",
                                 f"convert explicitly with {ty.name}(...)")
            return self.convert(value, ty, node)
        src = as_scalar(value.ty)
        assert src is not None
        if src == ty:
            return self.convert(value, ty, node)
        if _widens(src, ty):
            return ir.Cast(value, ty, value.loc)
        raise self.error(node, f"{what} needs {ty.name}, got {src.name}",
                         f"convert explicitly with {ty.name}(...)")


def _index_text(node: ast.expr) -> str:
    if isinstance(node, ast.Tuple):
        return ", ".join(ast.unparse(e) for e in node.elts)
    return ast.unparse(node)


def _widens(src: ScalarType, dst: ScalarType) -> bool:
    if src.kind == dst.kind and src.kind in ("int", "uint", "float"):
        return dst.bits > src.bits
    if src.kind == "uint" and dst.kind == "int":
        return dst.bits > src.bits
    return False


def _is_number_expression(node: ast.AST) -> bool:
    """Only number literals and operators: a constant that failed to fold (past 64 bits, a
    division by zero), not a name the kernel cannot use."""
    return all(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
               or (isinstance(n, ast.Constant) and isinstance(n.value, (int, float)))
               for n in ast.walk(node))


def _always_exits(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _poly_key(p: Poly) -> object:
    return tuple(sorted(p.items()))


def _assignment_targets(body: list[ast.stmt]) -> list[ast.expr]:
    """Every name-like target assigned anywhere in ``body``."""
    out: list[ast.expr] = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                out.extend(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                out.append(node.target)
    expanded: list[ast.expr] = []
    while out:
        t = out.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(t.elts)
        else:
            expanded.append(t)
    return expanded


def _int_limits(ty: ScalarType) -> tuple[int, int]:
    if ty.kind == "uint":
        return 0, (1 << ty.bits) - 1
    return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1


def _count_assignments(fdef: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(fdef):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.For):
            targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, ast.Name):
                counts[t.id] = counts.get(t.id, 0) + 1
            elif isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
    return counts


def _constant_value(sym: Symbol) -> int | float | bool:
    from ..scan import constant_value

    node = sym.node
    assert isinstance(node, (ast.Assign, ast.AnnAssign))
    value = constant_value(node.value)
    assert value is not None
    return value
