"""Python AST → typed IR, one function instance at a time: the visitor of statements and
expressions. It builds the IR; the translator holds its state by concern, in parts that each
own theirs and get only what they need:

- ``scope.py`` (``Scope``): parameters, return type, locals and their types, the blocks being
  translated, what the function's AST says of each name (assignment counts, reads);
- ``constants.py`` (``Constants``): literals, weak-literal folding, module constants, the
  compile-time values of names (Constexpr parameters, static_range variables, named constants);
- ``literal_locals.py`` (``LiteralLocals``): the locals first assigned a bare literal and the
  typed values they meet, from which they take their types;
- ``names.py`` (``Names``): the signature, what a name denotes, element types;
- ``semantics.py`` (``Semantics``): the typing rules (operators, unification, conversions);
- ``checks.py`` (``BoundsChecks``): the error sites of bounds checks and asserts;
- ``thread_values.py`` (``ThreadValues``): the values that differ between threads, and the
  divergent conditions around a statement;
- ``launch_facts.py`` (``LaunchFacts``): what a kernel's writes and asserts ask of its launch;
- ``indexing.py`` (``Indexing``) and ``loops.py`` (``Loops``): element access and loops, which
  translate through the visitor (the loops being translated are the loops part's state).
"""
from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING, Any, Mapping

from oxide.errors import CompileError
from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.ops import BINARY_OPS_OF_AST, COMPARE_OPS_OF_AST, BinaryOp, LogicOp
from ..intrinsics.thread import SPECIAL_REGISTERS
from ..scan import constant_value
from ..ir.types import (
    BOOL, F64, I32, I64, VOID, VECTOR_TYPES, ArrayType, StructType, TensorMapType, VectorType, ThreadIndexType, TupleType, ViewType,
    Type, VoidType, as_scalar, type_name,
)
from .annotations import PYTHON_SCALARS, TypeVarBinding, accumulate_alias, dotted_parts, oxide_name, resolve_annotation
from .views import refuse_vector_store
from . import structs, vectors
from .annotations import struct_type
from . import optional_views, view_values
from .checks import BoundsChecks
from .constants import Constants
from .generics import static_type_test, type_operand
from .indexing import Indexing
from .launch_facts import LaunchFacts
from .literal_locals import LiteralLocals
from .loops import Loops, RenameName
from .names import PYTHON_MATH_CONSTANTS, Names
from .oxide_names import WARP_SIZE_NAME, known_oxide_names, unknown_oxide_name
from .scope import Scope, node_loc
from .semantics import Semantics, choice_literal, is_literal_choice
from .thread_values import ThreadValues

if TYPE_CHECKING:
    from ..scan import ModuleSource
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
    ast.Nonlocal: ("nonlocal", "kernels have no closures"),
    ast.Delete: ("del", "remove the `del` statement"),
    ast.Import: ("import", "import at module level"),
    ast.ImportFrom: ("import", "import at module level"),
    ast.AsyncFunctionDef: ("async functions", "kernels are not coroutines"),
}
# expressions, named as a Python user knows them (not by their AST class)
_ARRAY_HINT = "use ox.local.array(n, T) (per thread) or ox.shared.array(n, T) (per block)"
UNSUPPORTED_EXPRS: dict[type, tuple[str, str]] = {
    ast.ListComp: ("a list comprehension", _ARRAY_HINT + " and a for loop"),
    ast.SetComp: ("a set comprehension", "kernels have no sets; use a loop"),
    ast.DictComp: ("a dict comprehension", "kernels have no dicts; use a loop"),
    ast.GeneratorExp: ("a generator expression", "use a for loop over range()"),
    ast.List: ("a list", _ARRAY_HINT),
    ast.Set: ("a set", "kernels have no sets"),
    ast.Dict: ("a dict", "kernels have no dicts"),
    ast.Lambda: ("a lambda", "define a device function at module level"),
    ast.NamedExpr: ("the walrus operator (:=)", "assign in a statement of its own"),
    ast.Await: ("await", "kernels are not coroutines"),
    ast.Yield: ("yield", "kernels are not generators; write results into a view"),
    ast.YieldFrom: ("yield from", "kernels are not generators; write results into a view"),
    ast.Starred: ("a starred expression (*x)", "pass each value by itself"),
    ast.Slice: ("a slice (a:b)", "index one element at a time"),
    ast.JoinedStr: ("an f-string outside print()", "strings exist only as print()'s arguments"),
}
_OPERATOR_TEXT: dict[type, str] = {
    ast.Pow: "**", ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


def _syntax_words(node: ast.AST) -> str:
    """``ast.SetComp`` -> "set comp": an unlisted AST class in words rather than as a class name."""
    name = type(node).__name__
    return "".join(" " + c.lower() if c.isupper() else c for c in name).strip()


def _declares_array(value: ir.Expr) -> bool:
    """``name = ox.shared.array(...)`` (any intrinsic of an array type) declares that array;
    ``name = ox.cluster.map_shared(arr, rank)`` holds a view of memory that exists."""
    return isinstance(value, ir.Intrinsic) and not (isinstance(value.ty, ArrayType) and value.ty.space == "cluster")


class FunctionTranslator(ast.NodeVisitor):
    """The visitor: statements and expressions of one function instance into IR. Its state is
    held by concern, each part owning its own (see the module docstring); the visitor hands
    each part what it needs, and implements ``intrinsics.context.TypingContext`` for the
    typing of intrinsic calls."""

    def __init__(
        self,
        builder: ProgramBuilder,
        module: ModuleSource,
        fdef: ast.FunctionDef,
        typevars: dict[str, TypeVarBinding],
        is_kernel: bool,
        kernel_name: str,
        bounds_check: bool,
        constexprs: Mapping[str, int | bool] | None = None,
    ) -> None:
        # the function instance: fixed for the whole translation
        self.builder = builder
        self.module = module
        self.fdef = fdef
        self.typevars = typevars
        self.is_kernel = is_kernel
        self.kernel_name = kernel_name
        # the parts, each owning its state
        self.scope = Scope(fdef)
        self.constants = Constants(module, self.scope)
        if constexprs:
            self.constants.values.update(constexprs)
        self.literals = LiteralLocals(self.scope.locals)  # its retype: literal_types.py's decision
        self.names = Names(builder, module, typevars, self.scope, self.constants)
        self.semantics = Semantics(builder, module, typevars, self.constants, self.literals,
                                   self.scope.thread_coordinates)
        self.checks = BoundsChecks(builder, module, fdef, kernel_name, bounds_check, is_kernel)
        self.threads = ThreadValues()
        self.launch = LaunchFacts(prefix_open=is_kernel)
        self.indexing = Indexing(self)
        self.loops = Loops(self)
        self.unsafe_depth = 0  # how many `with ox.unsafe():` blocks enclose the statement

    # ---- the translation ----------------------------------------------------------------

    def translate_signature(self, param_types: list[Type] | None = None) -> None:
        self.names.translate_signature(self.is_kernel, param_types)

    def translate_body(self) -> list[ir.Stmt]:
        body = self.block(self.fdef.body)
        if self.scope.ret is None:
            self.scope.ret = VOID
        self.checks.reserve_grid_sites()
        return body

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

    # ---- TypingContext: what the typing of an intrinsic call may ask ------------------------

    @property
    def bounds_check(self) -> bool:
        return self.checks.enabled

    @property
    def divergent_depth(self) -> int:
        return self.threads.divergent_depth

    @property
    def declared_arrays(self) -> set[str]:
        return self.scope.declared_arrays

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def loc(self, node: ast.AST) -> ir.Loc:
        return node_loc(node)

    def bounds_site(self, node: ast.AST, what: str) -> int:
        """A new bounds-check error site of this kernel at ``node``."""
        return self.checks.site("bounds", node, what)

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        return self.checks.check_site(node, view, index, what)

    def expr(self, node: ast.expr) -> ir.Expr:
        result = self.visit(node)
        assert result is not None
        return result  # type: ignore[no-any-return]

    def materialize(self, value: ir.Expr) -> ir.Expr:
        return self.semantics.materialize(value)

    def convert(self, value: ir.Expr, ty: ScalarType, node: ast.AST) -> ir.Expr:
        return self.semantics.convert(value, ty, node)

    def convert_implicit(self, value: ir.Expr, ty: Type, node: ast.AST, what: str) -> ir.Expr:
        return self.semantics.convert_implicit(value, ty, node, what)

    def unify(self, left: ir.Expr, right: ir.Expr, node: ast.AST, op: str) -> tuple[ir.Expr, ir.Expr, ScalarType]:
        return self.semantics.unify(left, right, node, op)

    def truth(self, value: ir.Expr, node: ast.AST) -> ir.Expr:
        return self.semantics.truth(value, node)

    def index_expr(self, node: ast.expr, container: Type | None = None) -> ir.Expr:
        return self.indexing.index_expr(node, container)

    def refuse_fp8(self, node: ast.AST, what: str, *types: ScalarType) -> None:
        self.semantics.refuse_fp8(node, what, *types)

    def const_int(self, node: ast.expr) -> int | None:
        return self.constants.const_int(node)

    def const_str(self, node: ast.expr) -> str | None:
        return self.constants.const_str(node)

    def not_constant_hint(self, node: ast.expr) -> str:
        return self.constants.not_constant_hint(node)

    def element_type(self, node: ast.expr) -> ScalarType:
        return self.names.element_type(node)

    def array_element_type(self, node: ast.expr) -> ScalarType | VectorType:
        return self.names.array_element_type(node)

    # ---- names, constants, element access, loops: the parts' visitors ---------------------

    def visit_Constant(self, node: ast.Constant) -> ir.Expr:
        return self.constants.literal(node)

    def visit_Name(self, node: ast.Name) -> ir.Expr:
        return self.names.name(node)

    def visit_Subscript(self, node: ast.Subscript) -> ir.Expr:
        return self.indexing.subscript(node)

    def store(self, target: ast.Subscript, value_node: ast.expr, node: ast.AST,
              value: ir.Expr | None = None) -> ir.Stmt:
        return self.indexing.store(target, value_node, node, value)

    def visit_While(self, node: ast.While) -> ir.Stmt:
        return self.loops.while_loop(node)

    def visit_For(self, node: ast.For) -> list[ir.Stmt]:
        return self.loops.for_loop(node)

    def visit_Break(self, node: ast.Break) -> ir.Stmt:
        return self.loops.break_stmt(node)

    def visit_Continue(self, node: ast.Continue) -> ir.Stmt:
        return self.loops.continue_stmt(node)

    def register_or_constant(self, node: ast.Attribute, locals_: Mapping[str, Type] | None = None) -> ir.Expr | None:
        """``thread.idx.x`` and the other special registers, ``ox.warp.size``, ``math.pi``: the
        attributes that are values of their own; None for any other (``locals_``: the names that
        are locals, the scope's by default)."""
        known = self.scope.locals if locals_ is None else locals_
        if (isinstance(node.value, ast.Name) and node.attr in PYTHON_MATH_CONSTANTS and node.value.id not in known
                and getattr(self.module.symbols.get(node.value.id), "target", None) == "math"):
            # math.pi, math.inf: float literals (typed by their use, so 2 * math.pi * x stays f32)
            return ir.Const(PYTHON_MATH_CONSTANTS[node.attr], F64, self.loc(node), weak=True)
        parts = dotted_parts(node)
        if parts and len(parts) >= 2 and oxide_name(self.module, node) == WARP_SIZE_NAME:
            return ir.Const(32, I32, self.loc(node))  # CUDA's warpSize (an int, as every lane count here)
        if parts and len(parts) >= 2:
            full = oxide_name(self.module, node.value)
            if full is not None:
                pieces = tuple(full.split("."))
                if len(pieces) == 2 and pieces in SPECIAL_REGISTERS and node.attr in ("x", "y", "z"):
                    return ir.SpecialReg(f"{SPECIAL_REGISTERS[pieces]}.{node.attr}", I32, self.loc(node))
        return None

    def visit_Attribute(self, node: ast.Attribute) -> ir.Expr:
        value = self.register_or_constant(node)
        if value is not None:
            return value
        base = node.value
        if isinstance(base, ast.Name) and isinstance(self.scope.locals.get(base.id), (VectorType, StructType)) or not isinstance(
                base, (ast.Name, ast.Attribute)) or isinstance(base, ast.Attribute) and oxide_name(self.module, base) is None:
            value = self.expr(base)  # a lane of a vector: v.x, x.load4(k).y, (a + b).z; a field: p.pos.x
            if isinstance(value.ty, VectorType):
                return vectors.component(self, value, node.attr, node)  # type: ignore[arg-type]
            if isinstance(value.ty, StructType):
                return structs.field(self, value, node.attr, node)  # type: ignore[arg-type]
            raise self.error(node, f"{type_name(value.ty)} has no attribute {node.attr!r}")
        if isinstance(base, ast.Name) and base.id in self.scope.locals:
            if node.attr in ("shape", "strides") and isinstance(self.scope.locals[base.id], ViewType):
                raise self.error(node, f"{ast.unparse(node)} is not a value on its own",
                                 f"index it ({ast.unparse(node)}[0]) or unpack it into names "
                                 f"(h, w = {ast.unparse(node)})")
            raise self.error(node, f"{type_name(self.scope.locals[base.id])} has no attribute {node.attr!r}")
        full_name = oxide_name(self.module, node)
        if full_name and full_name not in known_oxide_names():
            raise self.error(node, *unknown_oxide_name(full_name))
        raise self.error(node, f"unknown attribute {ast.unparse(node)!r}",
                         "available: thread.idx.x/y/z, block.idx.x, block.dim.x, grid.dim.x")

    def condition(self, node: ast.expr) -> ir.Expr:
        value = self.expr(node)
        return self.truth(value, node)

    def conversion(self, ty: ScalarType, node: ast.Call) -> ir.Expr:
        """``ty(x)``: an explicit conversion of its one argument."""
        if len(node.args) != 1:
            raise self.error(node, f"{ty.name}() takes exactly one argument")
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and ty.kind == "float":
            # float('-inf'), float('nan'): a float literal spelled as text, typed by its use
            try:
                return ir.Const(float(arg.value), F64, self.loc(node), weak=True)
            except ValueError:
                raise self.error(arg, f"{arg.value!r} is not a number", "write float('inf'), float('-inf') or "
                                 "float('nan')") from None
        return self.semantics.explicit_conversion(self.expr(arg), ty, node)

    # ---- statements ---------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        self.scope.block_depth += 1
        constants_before = set(self.constants.named)
        present_before = set(self.scope.present)  # what `if x is None: return` proved holds to its end
        self.scope.block_statements.append(stmts)
        out: list[ir.Stmt] = []
        try:
            k = 0
            renamed_at: set[int] = set()  # statements already given a block-scoped name: once each
            while k < len(stmts):
                stmt = stmts[k]
                try:
                    result = self.visit(stmt)
                except CompileError as err:
                    scoped = None if k in renamed_at else self._block_scoped_name(stmt, stmts, err)
                    if scoped is None:
                        raise
                    renamed_at.add(k)
                    # C's `float d = ...;` in a block after an `unsigned d` elsewhere: a new
                    # variable from here to the end of this block, as C scopes a declaration
                    stmts = stmts[:k] + [RenameName(scoped[0], scoped[1]).visit(copy.deepcopy(s)) for s in stmts[k:]]
                    self.scope.block_statements[-1] = stmts
                    self.scope.assign_counts[scoped[1]] = self.scope.assign_counts.get(scoped[0], 1)
                    continue
                k += 1
                if self.launch.prefix_open and self.scope.block_depth == 1 and not (
                        result is None or isinstance(result, ir.Assign) and ir.is_pure(result.value)
                        or isinstance(result, ir.Check) and result.hoistable):
                    self.launch.prefix_open = False  # later asserts may depend on what this statement did
                if result is None:
                    continue
                if isinstance(result, list):
                    out.extend(result)
                else:
                    out.append(result)
        finally:
            self.scope.block_depth -= 1
            self.scope.block_statements.pop()
            self.scope.present.clear()
            self.scope.present |= present_before
            for name in self.constants.named - constants_before:  # they name nothing after it
                del self.constants.values[name]
            self.constants.named = constants_before
        return out

    def _block_scoped_name(self, stmt: ast.stmt, stmts: list[ast.stmt], err: CompileError) -> tuple[str, str] | None:
        """``(name, scoped name)`` where ``stmt``, in a nested block, assigns ``name`` a value of
        another type than the local has (``err`` says so) and nothing after the block reads it:
        in C that is a declaration in the block (``float d`` after an ``unsigned d`` in a sibling
        block), so the block gets a variable of its own; None otherwise (the error stands)."""
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
            stmt.target if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else None)
        if not isinstance(target, ast.Name) or self.scope.block_depth < 2:
            return None
        name = target.id
        if (f"assignment to {name!r} needs" not in str(err) or not isinstance(self.scope.locals.get(name), ScalarType)
                or name in self.scope.param_names or name in self.literals.names or name in self.literals.copies):
            return None
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if value is None or any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)):
            return None  # `d = f32(d) * q` reads the old d: an assignment, not a declaration
        if any(isinstance(n, ast.Name) and (n.id in self.literals.names or n.id in self.literals.copies)
               for n in ast.walk(value)):
            return None  # a literal local's type decides (literal_types.py, program.py)
        for enclosing in self.scope.block_statements:
            for s in enclosing:
                if s is stmt:
                    continue
                direct = [t for t in (s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(
                    s, (ast.AnnAssign, ast.AugAssign)) else [s.target] if isinstance(s, ast.For) and any(
                        n is stmt for n in ast.walk(s)) else []) if isinstance(t, ast.Name)]
                if any(t.id == name for t in direct):
                    return None  # declared in this block or one around it: C assigns that variable
        inside = {id(n) for s in stmts for n in ast.walk(s)}
        end = max(getattr(s, "end_lineno", 0) or 0 for s in stmts)
        if any(isinstance(n, ast.Name) and n.id == name and id(n) not in inside and getattr(n, "lineno", 0) > end
               for n in ast.walk(self.fdef)):
            return None  # read after the block: one variable, whose types disagree
        return name, f"{name}${getattr(stmt, 'lineno', 0)}"

    def generic_visit(self, node: ast.AST) -> Any:
        for cls, (what, hint) in UNSUPPORTED_STMTS.items():
            if isinstance(node, cls):
                raise self.error(node, f"{what} is not supported in kernels or device functions", hint)
        what, hint = UNSUPPORTED_EXPRS.get(type(node), (f"this {_syntax_words(node)}", ""))
        raise self.error(node, f"{what} is not supported in kernels or device functions",
                         hint or "see docs/language.md for the supported subset")

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Global(self, node: ast.Global) -> None:
        """CUDA's ``__device__ unsigned int count;`` mutated by the kernel: a one-element
        module-level array in global memory, not a Python global."""
        name = node.names[0]
        raise self.error(node, f"`global {', '.join(node.names)}` is not supported: a kernel does not assign module "
                               "globals",
                         f"a device variable (CUDA's `__device__ unsigned int {name};`) is a one-element array: "
                         f"`{name} = ox.global_memory.array(1, u32)` at module level, used as `{name}[0]` (inside "
                         f"`with ox.unsafe():` to write) or `ox.atomic.inc({name}, 0, limit)`")

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

    def visit_Assign(self, node: ast.Assign) -> ir.Stmt | list[ir.Stmt] | None:
        if len(node.targets) != 1:
            return self.chained_assign(node)
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.store(target, node.value, node)
        if isinstance(target, (ast.Tuple, ast.List)):
            return self.unpack(target, node.value, node)
        if isinstance(target, ast.Attribute):
            return self.assign_attribute(target, self.expr(node.value), node)
        if not isinstance(target, ast.Name):
            raise self.error(target, f"cannot assign to {ast.unparse(target)!r}",
                             "assign to a local name or to a view element like out[i]")
        if target.id in self.scope.type_aliases:
            raise self.error(target, f"{target.id!r} names a type in this function; a value needs a name of its own")
        if target.id not in self.scope.locals and isinstance(node.value, (ast.Name, ast.Attribute, ast.Call)) and not (
                isinstance(node.value, ast.Call) and oxide_name(self.module, node.value.func) != "acc_type"):
            named = type_operand(self, node.value)
            if named is not None:  # C++'s `using acc_t = at::opmath_type<T>;`: acc_t(x) converts from here on
                self.scope.type_aliases[target.id] = named
                return None
        return self.assign_name(target, self.expr(node.value), node)

    def chained_assign(self, node: ast.Assign) -> list[ir.Stmt]:
        """``a = b = value``: the value once, then each target from left to right, as Python."""
        value = self.expr(node.value)
        out: list[ir.Stmt] = []
        if not isinstance(value, ir.Const):
            if as_scalar(value.ty) is None:
                raise self.error(node.value, f"chained assignment needs a number, not {type_name(value.ty)}",
                                 "assign each name separately")
            value = self.materialize(value)
            temp = self.builder.fresh_name("chain")
            self.scope.locals[temp] = value.ty
            if self.threads.differ(value):
                self.threads.varying.add(temp)
            out.append(ir.Assign(temp, value, self.loc(node), tracked=False))
            value = ir.Var(temp, value.ty, self.loc(node))
        for target in node.targets:
            out.extend(self.assign_to(target, value, node.value, node))
        return out

    def assign_to(self, target: ast.expr, value: ir.Expr, value_node: ast.expr, node: ast.AST) -> list[ir.Stmt]:
        """One target of an assignment whose value is already translated."""
        if isinstance(target, ast.Subscript):
            return [self.store(target, value_node, node, value)]
        if isinstance(target, ast.Name):
            stmt = self.assign_name(target, value, node)
            return [] if stmt is None else [stmt]
        if isinstance(target, (ast.Tuple, ast.List)):
            raise self.error(target, "unpacking in a chained assignment is not supported",
                             "unpack in a statement of its own")
        raise self.error(target, f"cannot assign to {ast.unparse(target)!r}",
                         "assign to a local name or to a view element like out[i]")

    def unpack(self, target: ast.Tuple | ast.List, value_node: ast.expr, node: ast.AST) -> list[ir.Stmt]:
        if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts):
            return self.parallel_assign(target, value_node, node)
        if (isinstance(value_node, ast.Attribute) and value_node.attr in ("shape", "strides")
                and isinstance(value_node.value, ast.Name)
                and isinstance(self.scope.locals.get(value_node.value.id), ViewType)):
            return self.unpack_shape(target, value_node, node)
        value = self.expr(value_node)
        if isinstance(value.ty, VectorType):
            return self.unpack_vector(target, value, node)
        if not isinstance(value.ty, TupleType):
            raise self.error(value_node, f"cannot unpack {type_name(value.ty)}",
                             "only tuples (from a device function or a tuple expression) unpack")
        if len(value.ty.elems) != len(target.elts):
            raise self.error(target, f"cannot unpack {len(value.ty.elems)} values into {len(target.elts)} names",
                             f"use exactly {len(value.ty.elems)} names on the left")
        temp = self.builder.fresh_name("tuple")
        self.scope.locals[temp] = value.ty
        loc = self.loc(node)
        out: list[ir.Stmt] = [ir.Assign(temp, value, loc, tracked=False)]
        for i, (t, ety) in enumerate(zip(target.elts, value.ty.elems)):
            element = ir.TupleGet(ir.Var(temp, value.ty, loc), i, ety, loc)
            if isinstance(t, (ast.Name, ast.Subscript)):
                out.extend(self.assign_to(t, element, t, node))
            else:
                raise self.error(t, f"cannot assign to {ast.unparse(t)!r}")
        return out

    def unpack_shape(self, target: ast.Tuple | ast.List, value_node: ast.Attribute, node: ast.AST) -> list[ir.Stmt]:
        """``h, w = img.shape`` (numba's habit): each name is assigned ``img.shape[k]``, as if
        written out, so the bounds prover knows ``h`` as the extent it is."""
        view_ty = self.scope.locals[value_node.value.id]  # type: ignore[attr-defined]
        assert isinstance(view_ty, ViewType)
        if len(target.elts) != view_ty.ndim:
            raise self.error(target, f"{ast.unparse(value_node)} has {view_ty.ndim} value(s); "
                                     f"cannot unpack it into {len(target.elts)} names",
                             f"use exactly {view_ty.ndim} names on the left, or index it: "
                             f"{ast.unparse(value_node)}[0]")
        out: list[ir.Stmt] = []
        for axis, t in enumerate(target.elts):
            part = ast.copy_location(ast.Subscript(value=value_node, slice=ast.copy_location(ast.Constant(axis), value_node),
                                                   ctx=ast.Load()), value_node)
            if not isinstance(t, (ast.Name, ast.Subscript)):
                raise self.error(t, f"cannot assign to {ast.unparse(t)!r}")
            out.extend(self.assign_to(t, self.expr(part), part, node))
        return out

    def assign_attribute(self, target: ast.Attribute, value: ir.Expr, node: ast.AST) -> ir.Stmt:
        """``v.x = e`` (a lane of a local vector) or ``p.mass = e`` (a field of a local struct)."""
        base = target.value
        if isinstance(base, ast.Name) and isinstance(self.scope.locals.get(base.id), StructType):
            return structs.with_field(self, target, value, node)
        if isinstance(base, ast.Attribute) and not (isinstance(base.value, ast.Name) and base.value.id not in self.scope.locals):
            # q.vel.y = e: q.vel becomes q.vel with lane y replaced, assigned the same way
            inner = self.expr(base)
            if isinstance(inner.ty, VectorType):
                return self.assign_attribute(base, vectors.set_lane(self, inner, target.attr, value, node), node)
            if isinstance(inner.ty, StructType):
                return self.assign_attribute(base, structs.set_field(self, inner, target.attr, value, node), node)
        return vectors.with_component(self, target, value, node)

    def unpack_vector(self, target: ast.Tuple | ast.List, value: ir.Expr, node: ast.AST) -> list[ir.Stmt]:
        """``a, b, c, d = v``: the lanes of a vector, in order."""
        vty = value.ty
        assert isinstance(vty, VectorType)
        if len(target.elts) != vty.lanes:
            raise self.error(target, f"cannot unpack {vty.name} ({vty.lanes} lanes) into {len(target.elts)} names",
                             f"use exactly {vty.lanes} names on the left")
        temp = self.builder.fresh_name("vector")
        self.scope.locals[temp] = vty
        if self.threads.differ(value):
            self.threads.varying.add(temp)
        loc = self.loc(node)
        out: list[ir.Stmt] = [ir.Assign(temp, value, loc)]
        for t, element in zip(target.elts, vectors.elements(ir.Var(temp, vty, loc))):
            if not isinstance(t, (ast.Name, ast.Subscript)):
                raise self.error(t, f"cannot assign to {ast.unparse(t)!r}")
            out.extend(self.assign_to(t, element, t, node))
        return out

    def parallel_assign(self, target: ast.Tuple | ast.List, value: ast.Tuple | ast.List, node: ast.AST) -> list[ir.Stmt]:
        """``a[i], a[j] = a[j], a[i]``, ``x, y = 0.0, 1.0``: every value first (into temporaries),
        then the targets from left to right, as Python does. Literals stay weak, so they take the
        type of the name or element they go to."""
        out: list[ir.Stmt] = []
        staged: list[ir.Expr] = []
        loc = self.loc(node)
        for e in value.elts:
            v = self.expr(e)
            if isinstance(v.ty, (VoidType, TupleType)) or isinstance(v.ty, ViewType) and v.ty.is_tensor:
                raise self.error(e, f"tuples hold scalars and 1-D views, not {type_name(v.ty)}")
            if not isinstance(v, ir.Const):  # views too: a swap `src, dst = dst, src` reads both first
                temp = self.builder.fresh_name("tuple")
                self.scope.locals[temp] = v.ty
                if self.threads.differ(v):
                    self.threads.varying.add(temp)
                out.append(ir.Assign(temp, v, loc, tracked=False))
                v = ir.Var(temp, v.ty, loc)
            staged.append(v)
        for t, v, e in zip(target.elts, staged, value.elts):
            if isinstance(t, (ast.Tuple, ast.List)):
                raise self.error(t, "nested unpacking is not supported", "unpack one level at a time")
            out.extend(self.assign_to(t, v, e, node))
        return out

    def visit_Tuple(self, node: ast.Tuple) -> ir.Expr:
        values = [self.materialize(self.expr(e)) for e in node.elts]
        for v, e in zip(values, node.elts):
            if isinstance(v.ty, (ViewType, ArrayType, VoidType, TupleType)):
                raise self.error(e, f"tuples hold scalars, not {type_name(v.ty)}")
        return ir.MakeTuple(values, TupleType(tuple(v.ty for v in values)), self.loc(node))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ir.Stmt | None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "annotated assignment needs a plain name")
        ty = resolve_annotation(self.module, node.annotation, self.typevars, f"local {node.target.id!r}")
        if not isinstance(ty, ScalarType):
            raise self.error(node.annotation, "local variables can only be declared with a scalar type")
        name = node.target.id
        if name in self.scope.locals and self.scope.locals[name] != ty:
            raise self.error(node, f"{name!r} was declared {type_name(self.scope.locals[name])} at line "
                             f"{self.scope.local_decl_line.get(name, '?')}, cannot redeclare it as {ty.name}")
        self.scope.locals.setdefault(name, ty)
        self.scope.local_decl_line.setdefault(name, node.lineno)
        if node.value is None:
            return ir.Assign(name, ir.Const(0, ty, self.loc(node)), self.loc(node), tracked=False)
        return self.assign_name(node.target, self.expr(node.value), node)

    def assign_name(self, target: ast.Name, value: ir.Expr, node: ast.AST) -> ir.Stmt | None:
        name = target.id
        if name in self.scope.param_names and isinstance(self.scope.locals[name], (ViewType, ArrayType, TensorMapType)):
            raise self.error(target, f"cannot assign to the view parameter {name!r}",
                             "views are fixed for the whole kernel; use a new local name")
        if isinstance(value.ty, TensorMapType):
            raise self.error(node, f"a TMA descriptor is not copied into a local ({name!r})",
                             "use the parameter itself in ox.tma.* calls, or pass it to a device function")
        if isinstance(value.ty, ArrayType) and value.ty.barrier and not isinstance(value, ir.Intrinsic):
            raise self.error(node, f"mbarriers are not copied into a local ({name!r})",
                             "use the array of ox.mbarrier.array(n) itself, or pass it to a device function")
        if isinstance(value.ty, (ViewType, ArrayType)) and not _declares_array(value):
            return view_values.assign_view(self, target, value, node)
        if isinstance(value.ty, ArrayType):
            if name in self.scope.locals:
                if self.scope.locals[name] == value.ty and self.scope.local_decl_line.get(name) == getattr(node, "lineno", 0):
                    return None  # the same declaration again, in a static_range body: the same array
                if self.scope.locals[name] == value.ty and value.ty.space == "local" and name in self.scope.declared_arrays:
                    # C's `float reg[N];` again in a second loop: a thread's own array, uninitialized in
                    # C either way, so the earlier one's registers serve (shared arrays stay distinct:
                    # other threads may still read the first)
                    return None
                raise self.error(target, f"{name!r} is already defined; an array needs a name of its own",
                                 "a local array of the same shape and type may be declared again (it is the same "
                                 "array); a shared array or one of another shape needs a new name")
            self.scope.locals[name] = value.ty
            self.scope.local_decl_line[name] = getattr(node, "lineno", 0)
            self.scope.declared_arrays.add(name)
            return ir.ArrayDecl(name, value.ty, self.loc(node))
        if isinstance(value.ty, TupleType):
            raise self.error(node, "a tuple must be unpacked into names: a, b = ...")
        if self.threads.differ(value):
            self.threads.varying.add(name)
        if isinstance(value.ty, VoidType):
            raise self.error(node, "this call returns nothing; there is no value to assign")
        if (name not in self.scope.locals and name not in self.constants.values and isinstance(value, ir.Const)
                and self.constants.is_named_constant(name, value)):
            self.constants.values[name] = value.value
            self.constants.named.add(name)
            return None
        if name not in self.scope.locals:
            assigned_again = self.scope.assign_counts.get(name, 0) > 1
            if isinstance(value.ty, ThreadIndexType) and assigned_again:
                # a DisjointSlice write through it is then refused: it no longer names the
                # thread's own element
                self.scope.reassigned_thread_indices.add(name)
            value = self.semantics.first_assignment(name, value, node, assigned_again)
            if self.scope.assign_counts.get(name, 0) == 1 and self.loops.positive_step(value, node):  # type: ignore[arg-type]
                self.scope.positive_names.add(name)
            if self.scope.assign_counts.get(name, 0) == 1 and isinstance(value, ir.SpecialReg):
                self.scope.thread_coordinates.add(name)
            self.scope.locals[name] = value.ty
            self.scope.local_decl_line[name] = getattr(node, "lineno", 0)
            return ir.Assign(name, value, self.loc(node))
        declared = self.scope.locals[name]
        if isinstance(declared, ThreadIndexType):
            raise self.error(target, f"{name!r} holds a ThreadIndex and cannot be reassigned",
                             "use another name for the new value")
        return ir.Assign(name, self.semantics.assignment(name, declared, value, node), self.loc(node))

    def visit_AugAssign(self, node: ast.AugAssign) -> ir.Stmt:
        op = BIN_OPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {_OPERATOR_TEXT.get(type(node.op), _syntax_words(node.op))}= is not supported",
                             "write x = x * x for squares" if isinstance(node.op, ast.Pow) else "")
        if isinstance(node.target, ast.Subscript):
            load = ast.copy_location(ast.Subscript(node.target.value, node.target.slice, ast.Load()), node.target)
            value = ast.copy_location(ast.BinOp(load, node.op, node.value), node)
            return self.store(node.target, value, node)
        if isinstance(node.target, ast.Attribute):  # v.x += 1.0 on a vector
            load_lane = ast.copy_location(ast.Attribute(node.target.value, node.target.attr, ast.Load()), node.target)
            lane_value = ast.copy_location(ast.BinOp(load_lane, node.op, node.value), node)
            return self.assign_attribute(node.target, self.expr(lane_value), node)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, f"cannot assign to {ast.unparse(node.target)!r}")
        if node.target.id not in self.scope.locals:
            raise self.error(node.target, f"{node.target.id!r} is used before it is assigned",
                             "assign it a value first")
        current = ir.Var(node.target.id, self.scope.locals[node.target.id], self.loc(node.target))
        result = self.semantics.binop(op, current, self.expr(node.value), node)
        stmt = self.assign_name(node.target, result, node)
        assert stmt is not None  # assigned twice at least: never a named constant
        return stmt

    def visit_If(self, node: ast.If) -> ir.Stmt | list[ir.Stmt]:
        chosen = static_type_test(self, node.test)
        if chosen is not None:  # `if T is f64:`: only this instance's branch is translated
            return [ir.Block(self.block(node.body if chosen else node.orelse), self.loc(node), keeps_facts=True)]
        cond = self.condition(node.test)
        divergent = self.threads.differ(cond)
        # `if x is not None:` / `if x is None: return`: where the optional view x is present
        then_present = optional_views.proven_where(self.scope, node.test, True)
        else_present = optional_views.proven_where(self.scope, node.test, False)
        with self.threads.under(divergent):
            with optional_views.proven(self.scope, then_present):
                then = self.block(node.body)
            with optional_views.proven(self.scope, else_present):
                orelse = self.block(node.orelse)
        if optional_views.always_exits(node.body):
            self.scope.present |= else_present  # to the end of the enclosing block
        elif optional_views.always_exits(node.orelse):
            self.scope.present |= then_present
        return ir.If(cond, then, orelse, self.loc(node))

    def visit_Return(self, node: ast.Return) -> ir.Stmt:
        if node.value is None:
            if self.scope.ret not in (None, VOID):
                raise self.error(node, f"this function returns {type_name(self.scope.ret)}; `return` needs a value")  # type: ignore[arg-type]
            self.scope.ret = VOID
            return ir.Return(None, self.loc(node))
        if self.is_kernel:
            raise self.error(node, "a kernel cannot return a value",
                             "write results into a DisjointSlice parameter")
        if (isinstance(self.scope.ret, TupleType) and isinstance(node.value, ast.Tuple)
                and len(node.value.elts) == len(self.scope.ret.elems)):
            # `return a, 0` from `-> tuple[f32, i32]`: each element converts as a return value
            elems = [self.convert_implicit(self.expr(e), ty, e, f"element {k} of the return value")
                     for k, (e, ty) in enumerate(zip(node.value.elts, self.scope.ret.elems))]
            return ir.Return(ir.MakeTuple(elems, self.scope.ret, self.loc(node.value)), self.loc(node))
        value = self.expr(node.value)
        if isinstance(value.ty, (ViewType, VoidType, ArrayType)):
            raise self.error(node.value, f"cannot return {type_name(value.ty)}")
        if isinstance(value.ty, TupleType):
            if self.scope.ret is None:
                self.scope.ret = value.ty
            elif self.scope.ret != value.ty:
                raise self.error(node.value, f"this function returns {type_name(self.scope.ret)}, "  # type: ignore[arg-type]
                                 f"not {type_name(value.ty)}", "return the same kind of value on every path")
            return ir.Return(value, self.loc(node))
        if self.scope.ret is None:
            value = self.materialize(value)
            if isinstance(value.ty, ThreadIndexType):
                value = ir.Cast(value, I64, value.loc)
            self.scope.ret = value.ty
        else:
            if isinstance(self.scope.ret, VoidType):
                raise self.error(node, "this function is declared `-> None` but returns a value")
            value = self.convert_implicit(value, self.scope.ret, node.value, "return value")  # type: ignore[arg-type]
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
            return [ir.Block(self.block(node.body), self.loc(node))]
        finally:
            self.unsafe_depth -= 1

    def visit_Assert(self, node: ast.Assert) -> ir.Stmt | None:
        # a condition about an optional view holds where it is present: `x is None or (...)`, for
        # each `and` operand that reads one (the others hold whatever is passed)
        parts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
        conds: list[ir.Expr] = []
        present: set[str] = set()  # proven by the operands before (`x is not None and x.shape[0] == n`)
        for part in parts:
            with optional_views.proven(self.scope, present):
                unproven = optional_views.unproven_uses(self.scope, part)
                with optional_views.proven(self.scope, unproven):
                    cond = self.condition(part)
            conds.append(optional_views.guard_absent(self, unproven, cond, part) if unproven else cond)
            present |= optional_views.proven_where(self.scope, part, True)
        cond = conds[0] if len(conds) == 1 else ir.BoolOp(LogicOp.AND, conds, BOOL, self.loc(node.test))
        what = ast.unparse(node.test)
        if node.msg is not None:
            if not (isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str)):
                raise self.error(node.msg, "an assert message must be a string literal")
            what = f"{what}: {node.msg.value}"
        site = self.checks.site("assert", node, what)
        # in the prefix, the launch-preconditions pass may move it to the runtime
        return ir.Check(cond, site, self.loc(node), hoistable=self.launch.prefix_open and self.scope.block_depth == 1)

    def visit_BinOp(self, node: ast.BinOp) -> ir.Expr:
        op = BIN_OPS.get(type(node.op))
        if op is None:
            what = {ast.Pow: "**", ast.MatMult: "@"}.get(type(node.op), type(node.op).__name__)
            raise self.error(node, f"operator {what} is not supported",
                             "write x * x for squares" if what == "**" else "")
        left = self.expr(node.left)
        if op == "+" and view_values.is_view(left.ty):
            return view_values.offset_view(self, left, node.right, node)
        if op == "+" and isinstance(node.right, ast.Name) and view_values.is_view(self.scope.locals.get(node.right.id, I64)):
            return view_values.offset_view(self, self.expr(node.right), node.left, node)
        return self.semantics.binop(op, left, self.expr(node.right), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ir.Expr:
        operand = self.expr(node.operand)
        loc = self.loc(node)
        if isinstance(node.op, ast.Not):
            return ir.Not(self.truth(operand, node.operand), BOOL, loc)
        if isinstance(operand.ty, VectorType) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return operand if isinstance(node.op, ast.UAdd) else vectors.vector_neg(self, operand, node)
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
            self.refuse_fp8(node, "operator -", st)
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
        present: set[str] = set()  # `x is not None and x.shape[0] > 0`: optional views proven so far
        for v in node.values:
            with optional_views.proven(self.scope, present):
                values.append(self.truth(self.expr(v), v))
            present |= optional_views.proven_where(self.scope, v, not negated)
        return ir.BoolOp(LogicOp.OR if negated else LogicOp.AND, values, BOOL, self.loc(node))

    def visit_Compare(self, node: ast.Compare) -> ir.Expr:
        chosen = static_type_test(self, node)
        if chosen is not None:  # `T is f64` as a value: a compile-time bool of this instance
            return ir.Const(chosen, BOOL, self.loc(node))
        none_test = optional_views.none_test(self.scope, node)
        if none_test is not None:  # `x is not None`, x an optional view: its flag
            flag = optional_views.present_flag(self, none_test[0], node)
            return flag if none_test[1] else ir.Not(flag, BOOL, self.loc(node))
        parts: list[ir.Expr] = []
        left_node = node.left
        left = self.expr(left_node)
        for op_node, right_node in zip(node.ops, node.comparators):
            op = CMP_OPS.get(type(op_node))
            if op is None:
                raise self.error(node, f"comparison `{_OPERATOR_TEXT.get(type(op_node), _syntax_words(op_node))}` is not supported",
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
            parts.append(self.semantics.compare(op, left, right, node))
            left = right
        if len(parts) == 1:
            return parts[0]
        return ir.BoolOp(LogicOp.AND, parts, BOOL, self.loc(node))

    def visit_IfExp(self, node: ast.IfExp) -> ir.Expr:
        chosen = static_type_test(self, node.test)
        if chosen is None:  # a test of compile-time values (`176 if D == 128 and not CAUSAL else 128`)
            test = constant_value(node.test, self.constants.constant_names())
            chosen = None if test is None else bool(test)
        if chosen is not None:
            return self.expr(node.body if chosen else node.orelse)
        cond = self.condition(node.test)
        with optional_views.proven(self.scope, optional_views.proven_where(self.scope, node.test, True)):
            a = self.expr(node.body)
        with optional_views.proven(self.scope, optional_views.proven_where(self.scope, node.test, False)):
            b = self.expr(node.orelse)
        if view_values.is_view(a.ty) or view_values.is_view(b.ty):
            return view_values.select_views(self, cond, a, b, node)
        if isinstance(a.ty, (VectorType, StructType)) or isinstance(b.ty, (VectorType, StructType)):
            if a.ty != b.ty:
                raise self.error(node, f"a conditional expression chooses between {type_name(a.ty)} and {type_name(b.ty)}",
                                 "both sides must have one type")
            return ir.Select(cond, a, b, a.ty, self.loc(node))  # type: ignore[arg-type]
        if as_scalar(a.ty) is None or as_scalar(b.ty) is None:
            raise self.error(node, "a conditional expression must produce scalars")
        first, second = choice_literal(a), choice_literal(b)  # weak literals, or choices of them
        if first is not None and second is not None:
            choice = ir.Select(cond, a, b, self.materialize(first).ty if isinstance(first.value, float) == isinstance(
                second.value, float) else F64, self.loc(node), scoped=True)  # type: ignore[arg-type]
            if is_literal_choice(choice):  # typed by its use, as a literal is (semantics.is_literal_choice)
                return choice
            a, b = self.materialize(a), self.materialize(b)
        a2, b2, ty = self.unify(a, b, node, "if/else")
        return ir.Select(cond, a2, b2, ty, self.loc(node), scoped=True)

    def visit_Call(self, node: ast.Call) -> ir.Expr:
        from ..intrinsics import INTRINSICS, KEYWORD_INTRINSICS

        if isinstance(node.func, ast.Name) and node.func.id == "print" and "print" not in self.module.symbols \
                and "print" not in self.scope.locals:
            info = INTRINSICS["builtin.print"]  # device printf (intrinsics/printing.py)
            return info.typing(self, info, node)

        if isinstance(node.func, ast.Name) and node.func.id not in self.scope.locals and getattr(
                self.module.symbols.get(node.func.id), "kind", "") == "struct":
            return structs.construct(self, struct_type(self.module, node.func.id), node)
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
        if isinstance(func, (ast.Name, ast.Call)) and (
                isinstance(func, ast.Call) or getattr(self.module.symbols.get(func.id), "kind", "") == "typevar"
                or accumulate_alias(self.module, func.id) is not None or func.id in self.scope.type_aliases):
            to = type_operand(self, func)  # T(x), ox.acc_type(T)(x)
            if to is not None:
                return self.conversion(to, node)
        name = oxide_name(self.module, func)
        if name is not None:
            return self.oxide_call(name, node)
        if isinstance(func, ast.Name) and func.id not in self.module.symbols and func.id not in self.scope.locals:
            builtin = func.id
            if builtin == "len":
                if len(node.args) != 1:
                    raise self.error(node, "len() takes one view")
                view = self.expr(node.args[0])
                if isinstance(view.ty, ArrayType) and view.ty.shape is not None:
                    return ir.Const(view.ty.shape[0], I64, loc, weak=True)
                if isinstance(view.ty, ArrayType) and view.ty.runtime_length:
                    return ir.ViewLen(view, I64, loc)
                if not isinstance(view.ty, ViewType):
                    raise self.error(node.args[0], f"len() needs a view, got {type_name(view.ty)}")
                if view.ty.is_tensor:
                    return ir.ViewDim(view, 0, "shape", I64, loc)
                return ir.ViewLen(view, I64, loc)
            if builtin in PYTHON_SCALARS:
                return self.conversion(PYTHON_SCALARS[builtin], node)
            if builtin in ("min", "max", "abs"):  # intrinsics/selection.py: each operand evaluated once
                from ..intrinsics import INTRINSICS

                info = INTRINSICS[f"builtin.{builtin}"]
                return info.typing(self, info, node)
            if builtin == "range":
                raise self.error(node, "range() is only allowed as the iterable of a for loop")
            if builtin in ("input", "open"):
                raise self.error(node, f"{builtin}() is not available on the GPU",
                                 "return values through a view and print them on the host")
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and isinstance(self.scope.locals.get(func.value.id), ViewType)):
            return self.view_method(func, node)
        if (isinstance(func, ast.Attribute) and func.attr == "view" and isinstance(func.value, ast.Name)
                and isinstance(self.scope.locals.get(func.value.id), (ViewType, ArrayType))):
            raise self.error(func, f"{func.value.id}.view(...): reinterpreting the elements of a view or an array is "
                                   "not supported yet",
                             "for dynamic shared memory, declare it again with the other type: every "
                             "ox.shared.dynamic(T) starts at the same address, as CUDA's extern __shared__ arrays "
                             "do (buf4 = ox.shared.dynamic(f32x4) reads buf's bytes as f32x4); for a global view, "
                             "x.load4(k) reads 4 elements as one f32x4")
        target = self.builder.resolve_function(self.module, func)
        if target is None:
            raise self.error(func, f"unknown function {ast.unparse(func)!r}", self.unknown_function_hint(func))
        callee_module, callee = target
        args = [self.call_argument(a) for a in node.args]
        return self.builder.call_device(self, callee_module, callee, args, node)

    def call_argument(self, node: ast.expr) -> ir.Expr:
        """An argument of a device function: an optional view not proven present passes as it is
        (typed Optional), and None as a ``NullView`` (typed None), for a parameter that is
        Optional (``ProgramBuilder.call_device``)."""
        if isinstance(node, ast.Constant) and node.value is None:
            return ir.NullView(VOID, self.loc(node))
        if isinstance(node, ast.Name) and node.id not in self.scope.present:
            ty = self.scope.locals.get(node.id)
            if isinstance(ty, ViewType) and ty.optional:
                return ir.Var(node.id, ty, self.loc(node))
        return self.expr(node)

    def unknown_function_hint(self, func: ast.expr) -> str:
        """``math.sqrt`` / ``np.exp`` / ``numpy.floor``: the oxide intrinsic of that name."""
        from ..intrinsics import INTRINSICS

        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if isinstance(func, ast.Attribute) and f"math.{name}" in INTRINSICS:
            return (f"use ox.math.{name}(...): {ast.unparse(func.value)}.{name} is host Python, "
                    "ox.math runs on the GPU")
        if isinstance(func, ast.Name) and name == "round" and name not in self.module.symbols:
            return ("Python's round() rounds half to even and returns an int: ox.math.rint(x) rounds the same way "
                    "to a float (CUDA's rintf), ox.math.round(x) rounds half away from zero (roundf); i32(...) of either")
        if isinstance(func, ast.Name) and name == "pow" and name not in self.module.symbols:
            return "use ox.math.pow(x, y) (CUDA's powf / pow), or x * x for a square"
        if isinstance(func, ast.Name) and f"math.{name}" in INTRINSICS:
            return f"use ox.math.{name}(...) (imported names of Python's math module do not run on the GPU)"
        return "call a function defined at module level in this project, or an oxide intrinsic"

    def view_method(self, func: ast.Attribute, node: ast.Call) -> ir.Expr:
        """``x.load4(k)`` and the other view methods: registry entries ``view.<method>``
        (``oxide_build/intrinsics/vector.py``)."""
        from ..intrinsics import INTRINSICS

        info = INTRINSICS.get(f"view.{func.attr}")
        if info is None or not info.method:
            raise self.error(func, f"views have no method {func.attr!r}", "view methods: load2, load4, load8, store2, store4, store8")
        return info.typing(self, info, node)

    def refuse_vector_store(self, func: ast.Attribute, node: ast.Call, vt: ViewType, index: ir.Expr) -> None:
        """``frontend/views.py``'s rule for a vector store, for the registry's typing (which
        cannot import the frontend)."""
        refuse_vector_store(self, func, node, vt, index)

    def oxide_call(self, name: str, node: ast.Call) -> ir.Expr:
        from ..intrinsics import INTRINSICS
        from ..intrinsics.arguments import keywords_in_place

        info = INTRINSICS.get(name)
        if info is not None and not info.method and not info.builtin:
            if info.parameters and node.keywords:
                node = keywords_in_place(self, info, node)
            return info.typing(self, info, node)
        if name in ("static_range", "unroll"):
            # unrolling is IR structure (the for loop's body repeated, or the loop's metadata)
            raise self.error(node, f"{name}() is only allowed as the iterable of a for loop")
        if name == "boolean":
            return self.conversion(BOOL, node)
        if name in VECTOR_TYPES:
            return vectors.construct(self, VECTOR_TYPES[name], node)
        if name in SCALAR_TYPES:
            return self.conversion(SCALAR_TYPES[name], node)
        if name in ("kernel", "device", "extern", "TypeVar"):
            raise self.error(node, f"oxide.{name} cannot be called inside a kernel")
        if name not in known_oxide_names():
            raise self.error(node.func, *unknown_oxide_name(name))
        raise self.error(node.func, f"oxide.{name} is not a device intrinsic (or not supported yet)",
                         "see docs/language.md for the intrinsics available in kernels")

