"""The types of a function's literal locals, decided before its translation: a typing-only
walk over the function's AST.

A local first assigned a bare literal (``acc = 0.0``, ``j = 0``, ``s = BLOCK // 2``, a choice
of literals) takes the type of the typed values of its kind that it meets (operands,
assignments, arguments, stores), as ``float acc = 0.0f`` in C++. With some types for those
locals (``retype``), what they meet is recorded (``LiteralLocals.met_types``), and the types are
tried again with those until an attempt finds nothing new (a limited number of attempts, the
last one that compiled kept where a retyped one fails; where all fail, the one that got
furthest through the source, whose error is the one to fix). Each attempt is a walk over the
AST, not a translation: each expression typed by the translator's own rules (``Semantics`` on
typed placeholders: the operators, conversions and a local's assignments, ``first_assignment``
and ``assignment``; the intrinsics' typing functions, structs.py's and vectors.py's, through a
probing ``TypingContext``; a device call's instance by ``ProgramBuilder.call_signature``),
nothing built, nothing of the program changed. Its result is plain data: the map
``name -> type`` the one translation of the function uses (``retype``), and the types that
translation must record those locals meeting (``expected``).

What the walk cannot type (a device function that declares no return type, a construct it has
no rule for) it steps over, the names assigned there of unknown type. A literal local that
meets something only there is met by something the walk did not see: the translation records
it (``ProgramBuilder.translate_function``), keeps the walk's types (it checks every value it
makes, so the function is well typed, the local of its literal's own type) and notes the
disagreement, an internal compiler error under ``OXIDE_VERIFY_IR=1``, which the tests set.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from oxide.errors import CompileError
from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..scan import ModuleSource, constant_value
from ..ir.ops import BINARY_OPS_OF_AST, COMPARE_OPS_OF_AST
from ..ir.types import (BOOL, F64, I64, ArrayType, StructType, ThreadIndexType, TupleType, Type, VectorType, ViewType, VoidType,
                        as_scalar, is_int, literal_type)
from . import structs, vectors
from .annotations import PYTHON_SCALARS, TypeVarBinding, oxide_name, resolve_annotation, struct_type
from .generics import instance_key, static_type_test, type_operand
from .literal_locals import LiteralLocals
from .module_memory import module_array_decl
from .names import PYTHON_MATH_CONSTANTS
from .semantics import Semantics, choice_literal, is_literal_choice
from .translate import FunctionTranslator

if TYPE_CHECKING:
    from ..intrinsics.context import TypingContext

__all__ = ["LiteralTypes", "RETYPE_ATTEMPTS", "decide_literal_types"]

RETYPE_ATTEMPTS = 3  # each attempt settles at least one local; more are rare
_MAX_COPIES = 1024  # static_range bodies walked in one attempt, beyond which the translation decides
_MAX_DEPTH = 4  # device calls walked into for the return type of a function that declares none


@dataclass(frozen=True)
class LiteralTypes:
    """The walk's decision: the type of each literal local that does not keep its literal's
    own (``types``: the translation's ``retype``), and what the translation made with them must
    record those locals meeting (``expected``: its ``LiteralLocals.met_types()``) for the
    decision to be the one attempts by translation reach. ``settled`` is False where the walk
    found no decision (every attempt failed): the attempts by translation report the error."""

    types: dict[str, ScalarType]
    expected: dict[str, ScalarType]
    settled: bool = True


class _Unknown(Exception):
    """An expression the walk cannot type."""


class _UnknownResult(_Unknown):
    """A call whose arguments the walk typed (and noted what they meet) but whose result it
    cannot type (a device function that declares no return type): harmless where the result
    is not used."""


class _Failed(Exception):
    """The attempt stops here, as its translation would, with a type error (at ``where``:
    line and column)."""

    def __init__(self, where: tuple[int, int]) -> None:
        super().__init__(where)
        self.where = where


def decide_literal_types(tr: FunctionTranslator) -> LiteralTypes:
    """The literal locals' types of the function ``tr`` translates (its signature translated,
    its body not yet), by attempts made as walks. Reads ``tr``'s module, type variables,
    constants and parameters; writes nothing of ``tr`` or of the program builder."""
    return _decide(tr, 0, {})[0]


_Returns = dict[tuple[str, str, tuple[str, ...], tuple[tuple[str, int | bool], ...]], "Type | None"]


def _decide(tr: FunctionTranslator, depth: int, returns: _Returns) -> tuple[LiteralTypes, _Walk | None]:
    """The decision, and the walk made with the types decided (None where no local can be
    first assigned a literal: nothing walked). ``depth``: how many device calls down from the
    function being translated (a callee walked for its return type); ``returns``: the return
    types found so far of the instances that declare none."""
    candidates = _literal_candidates(tr)
    if not candidates:
        return LiteralTypes({}, {}), None  # no local can be first assigned a literal
    retype: dict[str, ScalarType] = {}
    good: _Walk | None = None
    tried: list[dict[str, ScalarType]] = []
    walks: dict[tuple[tuple[str, str], ...], _Walk] = {}
    reads = _reads(tr.fdef)
    type_tests: dict[int, bool | None] = {}  # static_type_test of a condition, by its node
    failures: list[tuple[tuple[int, int], _Walk]] = []  # where each failed attempt stopped
    while True:
        walk = _Walk(tr, retype, reads, candidates, type_tests, depth, returns)
        failed = walk.run()
        found = walk.literals.met_types()
        walks[_key(retype)] = walk
        if failed is None:
            good = walk
        else:
            failures.append((failed, walk))
        tried.append(retype)
        wanted = {**retype, **found}
        if wanted in tried or len(tried) > RETYPE_ATTEMPTS:
            if failed is None:
                return LiteralTypes(retype, found), walk
            if good is None:
                # every attempt fails: the types of the one that got furthest through the source,
                # whose error (the translation's, made with them) is the one to fix
                furthest = max(failures, key=lambda f: f[0])[1]
                return LiteralTypes(furthest.retype, furthest.literals.met_types(), settled=False), furthest
            return LiteralTypes(good.retype, good.literals.met_types()), good
        retype = wanted


def _reads(fdef: ast.FunctionDef) -> dict[str, list[ast.Name]]:
    reads: dict[str, list[ast.Name]] = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            reads.setdefault(n.id, []).append(n)
    return reads


def _literal_candidates(tr: FunctionTranslator) -> frozenset[str]:
    """The names the function assigns a value that may fold to a literal (``0``, ``-1.0``,
    ``BLOCK // 2``, ``1.0 if c else 0.0``, ``float('inf')``) or loops over a range of such
    values: every literal-initialized local is among them (a name missed here would only cost
    the attempts by translation)."""
    constants = {n for n, sym in tr.module.symbols.items() if sym.kind == "constant"} | set(tr.constants.values)
    bindings: list[tuple[list[str], list[ast.expr]]] = []  # the names bound, and the values that bind them
    for node in ast.walk(tr.fdef):
        if isinstance(node, ast.Assign):
            bindings.append(([t.id for t in node.targets if isinstance(t, ast.Name)], [node.value]))
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call):
            bindings.append(([node.target.id], list(node.iter.args)))
    out: set[str] = set()
    changed = True
    while changed:  # a name for a constant may itself be a literal-initialized local's value
        changed = False
        known = constants | out
        for names, values in bindings:
            if any(n not in out for n in names) and all(_may_be_literal(v, known) for v in values):
                out.update(names)
                changed = True
    return frozenset(out)


def _may_be_literal(node: ast.expr, constants: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.Attribute):
        return node.attr in PYTHON_MATH_CONSTANTS
    if isinstance(node, ast.UnaryOp):
        return _may_be_literal(node.operand, constants)
    if isinstance(node, ast.BinOp):
        return _may_be_literal(node.left, constants) and _may_be_literal(node.right, constants)
    if isinstance(node, ast.IfExp):
        return _may_be_literal(node.body, constants) and _may_be_literal(node.orelse, constants)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "len", "min", "max", "abs")
    return False


def _key(types: dict[str, ScalarType]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((n, t.name) for n, t in types.items()))


class _Walk:
    """One attempt as a walk over the body, with the literal locals typed as ``retype`` says."""

    def __init__(self, tr: FunctionTranslator, retype: dict[str, ScalarType], reads: dict[str, list[ast.Name]],
                 candidates: frozenset[str], type_tests: dict[int, bool | None], depth: int,
                 returns: _Returns) -> None:
        self.tr = tr
        self.retype = dict(retype)
        self.depth = depth
        self.returns = returns
        self.ret: Type | None = tr.scope.ret  # the declared return type, or the first return's (translate.py)
        self.env: dict[str, Type] = {p.name: p.ty for p in tr.scope.params}
        self.literals = LiteralLocals(self.env, dict(retype))
        self.semantics = Semantics(tr.builder, tr.module, tr.typevars, tr.constants, self.literals, set())
        self.constants: dict[str, int | float | bool] = {}  # locals named for a constant, static_range variables
        self.unknown: set[str] = set()  # locals of a type the walk does not know
        self.blocks: list[list[ast.stmt]] = []  # the statement lists being walked
        self.reads = reads
        self.candidates = candidates
        self.type_tests = type_tests
        self.inside: dict[int, set[int]] = {}  # id of a statement list -> the ids of the nodes in it
        self.copies = 0  # static_range bodies walked
        self.declared_arrays: set[str] = set()
        self.aliases: dict[str, ScalarType] = {}  # `acc_t = ox.acc_type(T)`
        self.unsafe_depth = 0

    # ---- statements -----------------------------------------------------------------------

    def run(self) -> tuple[int, int] | None:
        """The walk; where it stopped at a type error (the attempt failed), or None."""
        try:
            self.block(self.tr.fdef.body)
        except _Failed as failed:
            return failed.where
        return None

    def block(self, stmts: list[ast.stmt]) -> None:
        self.blocks.append(stmts)
        constants_before = set(self.constants)
        try:
            for stmt in stmts:
                try:
                    self.stmt(stmt)
                except _Unknown:
                    self.give_up(stmt)
                except CompileError as exc:
                    where = (exc.location.line, exc.location.col) if exc.location else (0, 0)
                    raise _Failed(where) from None
        finally:
            self.blocks.pop()
            for name in set(self.constants) - constants_before:  # they name nothing after it (translate.py)
                del self.constants[name]

    def give_up(self, node: ast.AST) -> None:
        """``node`` has something the walk cannot type: the names it assigns are of unknown
        type from here on."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in self.env:
                self.unknown.add(n.id)

    def copied(self, name: str) -> str:
        while name in self.literals.copies:
            name = self.literals.copies[name]
        return name

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                self.chained_assign(node)
            else:
                self.assign(node.targets[0], node.value, node)
        elif isinstance(node, ast.AnnAssign):
            if not isinstance(node.target, ast.Name):
                raise _Unknown
            ty = resolve_annotation(self.tr.module, node.annotation, self.tr.typevars, f"local {node.target.id!r}")
            if not isinstance(ty, ScalarType) or self.env.get(node.target.id, ty) != ty:
                raise _Unknown
            self.unknown.discard(node.target.id)
            self.env.setdefault(node.target.id, ty)
            if node.value is not None:
                self.assign_value(node.target, self.expr(node.value), node)
        elif isinstance(node, ast.AugAssign):
            op = BINARY_OPS_OF_AST.get(type(node.op))
            if op is None:
                raise _Unknown
            if isinstance(node.target, ast.Name):
                current = self.name(node.target)
                result = self.semantics.binop(op, current, self.expr(node.value), node)
                self.assign_value(node.target, result, node)
            elif isinstance(node.target, ast.Subscript):
                load = ast.copy_location(ast.Subscript(node.target.value, node.target.slice, ast.Load()), node.target)
                self.store(node.target, ast.copy_location(ast.BinOp(load, node.op, node.value), node), node)
            elif isinstance(node.target, ast.Attribute):  # v.x += 1.0, p.mass += m
                load_lane = ast.copy_location(ast.Attribute(node.target.value, node.target.attr, ast.Load()),
                                              node.target)
                lane_value = ast.copy_location(ast.BinOp(load_lane, node.op, node.value), node)
                self.assign_attribute(node.target, self.expr(lane_value), node)
            else:
                raise _Unknown
        elif isinstance(node, ast.Expr):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                try:
                    self.expr(node.value)
                except _UnknownResult:
                    pass  # a call made for its effect
        elif isinstance(node, ast.If):
            chosen = self.type_test(node.test)
            if chosen is not None:  # `if T is f64:`: only this instance's branch
                self.block(node.body if chosen else node.orelse)
                return
            self.guarded(node.test)
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.While):
            self.guarded(node.test)
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.For):
            self.for_loop(node)
        elif isinstance(node, ast.With):
            unsafe = any(isinstance(item.context_expr, ast.Call)
                         and oxide_name(self.tr.module, item.context_expr.func) == "unsafe" for item in node.items)
            if not unsafe:
                raise _Unknown
            self.unsafe_depth += 1
            try:
                self.block(node.body)
            finally:
                self.unsafe_depth -= 1
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.returned(node.value)
        elif isinstance(node, ast.Assert):
            self.guarded(node.test)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        else:
            raise _Unknown

    def returned(self, node: ast.expr) -> None:
        """``return value``, as translate.py's visit_Return: each element of a tuple converted
        to the declared one's type, a value to the declared (or first returned) type."""
        ret = self.ret
        if isinstance(ret, TupleType) and isinstance(node, ast.Tuple) and len(node.elts) == len(ret.elems):
            for k, (e, ty) in enumerate(zip(node.elts, ret.elems)):
                self.semantics.convert_implicit(self.expr(e), ty, e, f"element {k} of the return value")
            return
        value = self.expr(node)
        if isinstance(value.ty, (ViewType, ArrayType, TupleType)) or not isinstance(ret, (ScalarType, type(None))):
            if ret is None and isinstance(value.ty, TupleType):
                self.ret = value.ty
            return  # a view or array (the translation's error), or a struct, a vector, a tuple: nothing meets
        if ret is None:
            value = self.semantics.materialize(value)
            self.ret = I64 if isinstance(value.ty, ThreadIndexType) else value.ty
        else:
            self.semantics.convert_implicit(value, ret, node, "return value")

    def type_test(self, node: ast.expr) -> bool | None:
        """generics.static_type_test: a condition on the instance's types (none without type
        variables)."""
        if not self.tr.typevars:
            return None
        key = id(node)
        if key not in self.type_tests:  # the same in every attempt and copy
            self.type_tests[key] = static_type_test(self.tr, node)
        return self.type_tests[key]

    def const_int(self, node: ast.expr) -> int | None:
        """The compile-time integer ``node`` folds to (with the walk's named constants), or None."""
        try:
            value = self.expr(node)
        except (_Unknown, CompileError):
            return None
        if isinstance(value, ir.Const) and isinstance(value.value, int) and not isinstance(value.value, bool):
            return value.value
        return None

    def guarded(self, test: ast.expr) -> None:
        """A condition: typed for what it meets; a test the walk cannot type changes nothing else."""
        try:
            self.expr(test)
        except _Unknown:
            pass

    def assign(self, target: ast.expr, value_node: ast.expr, node: ast.stmt) -> None:
        if isinstance(target, ast.Subscript):
            self.store(target, value_node, node)
            return
        if isinstance(target, ast.Tuple) and isinstance(value_node, ast.Tuple) and len(target.elts) == len(value_node.elts):
            values = [self.expr(v) for v in value_node.elts]
            for t, v in zip(target.elts, values):
                if not isinstance(t, ast.Name):
                    raise _Unknown
                self.assign_value(t, v, node)
            return
        if isinstance(target, ast.Tuple) and not isinstance(value_node, (ast.Tuple, ast.List, ast.Attribute)):
            self.unpack(target, self.expr(value_node), node)
            return
        if isinstance(target, ast.Attribute):
            self.assign_attribute(target, self.expr(value_node), node)
            return
        if not isinstance(target, ast.Name):
            raise _Unknown
        if target.id not in self.env and isinstance(value_node, (ast.Name, ast.Attribute, ast.Call)) and not (
                isinstance(value_node, ast.Call) and oxide_name(self.tr.module, value_node.func) != "acc_type"):
            named = self.type_operand(value_node)
            if named is not None:  # `acc_t = ox.acc_type(T)`: a name for a type (translate.py's visit_Assign)
                self.aliases[target.id] = named
                return
        self.assign_value(target, self.expr(value_node), node)

    def unpack(self, target: ast.Tuple, value: ir.Expr, node: ast.stmt) -> None:
        """``t, n = hit(...)``: each name or element assigned its element of a tuple (a device
        function's result) or its lane of a vector, as translate.py's unpack."""
        if isinstance(value.ty, TupleType):
            elems = list(value.ty.elems)
        elif isinstance(value.ty, VectorType):
            elems = [value.ty.elem] * value.ty.lanes
        else:
            raise _Unknown
        if len(elems) != len(target.elts):
            raise _Unknown  # the translation's located error
        for t, ety in zip(target.elts, elems):
            element = ir.Var("$element", ety, value.loc)
            if isinstance(t, ast.Name):
                self.assign_value(t, element, node)
            elif isinstance(t, ast.Subscript):
                self.store(t, t, node, element)
            else:
                raise _Unknown

    def chained_assign(self, node: ast.Assign) -> None:
        """``a = b = value``: as translate.py's chained_assign, the value once (in a temporary
        unless it is a literal), then each target."""
        value = self.expr(node.value)
        if not isinstance(value, ir.Const):
            if as_scalar(value.ty) is None:
                raise _Unknown
            value = ir.Var("$chain", self.semantics.materialize(value).ty, value.loc)
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                self.store(target, node.value, node, value)
            elif isinstance(target, ast.Name):
                self.assign_value(target, value, node)
            else:
                raise _Unknown

    def type_operand(self, node: ast.expr) -> ScalarType | None:
        """generics.type_operand, with the type aliases and locals the walk has seen."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in self.env or node.id in self.unknown or node.id in self.constants:
                return None
        return type_operand(self.tr, node)

    def assign_value(self, target: ast.Name, value: ir.Expr, node: ast.stmt) -> None:
        """``target = value``, as translate.py's ``assign_name`` types it."""
        name = target.id
        self.unknown.discard(name)
        if name in self.constants and name not in self.env:
            raise _Unknown  # a named constant assigned again: the translation decides
        if name not in self.env:
            if isinstance(value, ir.Const) and value.weak and self.named_constant(name):
                self.constants[name] = value.value  # Constants.is_named_constant
                return
            if isinstance(value.ty, ArrayType):
                self.declared_arrays.add(name)
            assigned_again = self.tr.scope.assign_counts.get(name, 0) > 1
            self.env[name] = self.semantics.first_assignment(name, value, node, assigned_again).ty
            return
        declared = self.env[name]
        if isinstance(declared, ThreadIndexType):
            raise _Failed((target.lineno, target.col_offset + 1))
        self.semantics.assignment(name, declared, value, node)

    def named_constant(self, name: str) -> bool:
        """Constants.is_named_constant: assigned once, and read only in the block being walked."""
        if self.tr.scope.assign_counts.get(name, 0) != 1 or name in self.tr.scope.param_names:
            return False
        stmts = self.blocks[-1]
        inside = self.inside.get(id(stmts))
        if inside is None:
            inside = self.inside[id(stmts)] = {id(n) for stmt in stmts for n in ast.walk(stmt)}
        return all(id(n) in inside for n in self.reads.get(name, ()))

    def store(self, target: ast.Subscript, value_node: ast.expr, node: ast.stmt, value: ir.Expr | None = None) -> None:
        view = self.expr(target.value)
        if not isinstance(view.ty, (ViewType, ArrayType)) or not isinstance(view.ty.elem, ScalarType):
            raise _Unknown
        self.index(target.slice)
        stored = self.expr(value_node) if value is None else value
        self.semantics.convert_store(stored, view.ty.elem, value_node, f"store into {ast.unparse(target.value)}")

    def for_loop(self, node: ast.For) -> None:
        it = node.iter
        if not isinstance(node.target, ast.Name) or node.orelse or not isinstance(it, ast.Call):
            raise _Unknown
        called = oxide_name(self.tr.module, it.func)
        if called == "unroll" and it.args and isinstance(it.args[0], ast.Call):
            it = it.args[0]
            called = oxide_name(self.tr.module, it.func)
        name = node.target.id
        if called == "static_range":
            bounds = [self.const_int(a) for a in it.args]
            if it.keywords or not 1 <= len(bounds) <= 3 or any(b is None for b in bounds) \
                    or (len(bounds) == 3 and bounds[2] == 0):  # a zero step: the translation's located error
                raise _Unknown
            values = range(*bounds)  # type: ignore[arg-type]
            nodes = [n for stmt in node.body for n in ast.walk(stmt)]
            if not any(isinstance(n, ast.Name) and n.id in self.candidates for n in nodes):
                values = values[:1]  # no copy differs in what a literal local meets: one stands for all
            elif not any(isinstance(n, ast.IfExp) and any(isinstance(m, ast.Name) and m.id == name
                                                          for m in ast.walk(n.test)) for n in nodes):
                # the second copy meets what every later one does (the types are the same, and
                # no choice depends on the copy): the first assigns, the second assigns again
                values = values[:2]
            self.copies += len(values)
            if self.copies > _MAX_COPIES:
                raise _Unknown
            outer = self.constants.get(name)
            for k in values:  # each copy of the body, as the translation unrolls it (loops.py)
                self.constants[name] = k
                self.block(node.body)
            if outer is None:
                self.constants.pop(name, None)
            else:
                self.constants[name] = outer
            self.env[name] = I64  # after the loop, an i64 holding its last value
            return
        if not (isinstance(it.func, ast.Name) and it.func.id == "range") or it.keywords or not 1 <= len(it.args) <= 3:
            raise _Unknown
        args = [self.expr(a) for a in it.args]
        if not all(is_int(a.ty) for a in args):
            raise _Unknown
        ty = self.semantics.common_type(args, it)
        if all(isinstance(a, ir.Const) and a.weak for a in args) and (name not in self.env or name in self.literals.names):
            self.literals.names.add(name)  # loops.py: typed like a local first assigned a literal
            known = self.env.get(name)
            ty = known if isinstance(known, ScalarType) else self.literals.retype.get(name, ty)
        if name in self.env and self.env[name] != ty:
            raise _Unknown  # a loop of its own scope (loops.py renames it), or an error
        self.env.setdefault(name, ty)
        for bound in args:  # each bound in the variable's type (loops.py): a literal must fit it
            self.semantics.convert(bound, ty, it)
        self.block(node.body)

    # ---- expressions ----------------------------------------------------------------------

    def expr(self, node: ast.expr) -> ir.Expr:
        loc = ir.Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return ir.Const(node.value, BOOL, loc)
            if isinstance(node.value, (int, float)):
                return ir.Const(node.value, literal_type(node.value), loc, weak=True)
            raise _Unknown
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            op = BINARY_OPS_OF_AST.get(type(node.op))
            if op is None:
                raise _Unknown
            left, right = self.expr(node.left), self.expr(node.right)
            if any(isinstance(v.ty, (ViewType, ArrayType)) for v in (left, right)):
                raise _Unknown  # `x + k`: a view moved on (view_values.py)
            if isinstance(left, ir.Const) and isinstance(right, ir.Const) and left.weak and right.weak:
                return self.tr.constants.fold(op, left, right, node)
            return self.semantics.binop(op, left, right, node)
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return ir.Const(True, BOOL, loc) if isinstance(operand, ir.Const) else ir.Var("$not", BOOL, loc)
            if isinstance(operand, ir.Const) and operand.weak and isinstance(node.op, (ast.USub, ast.UAdd)):
                value = -operand.value if isinstance(node.op, ast.USub) else operand.value
                return ir.Const(value, operand.ty, loc, weak=True)
            if isinstance(node.op, ast.Invert) and isinstance(operand, ir.Const) and operand.weak:
                return ir.Const(~int(operand.value), operand.ty, loc, weak=True)
            if as_scalar(operand.ty) is None:
                raise _Unknown
            return ir.Var("$unary", self.semantics.materialize(operand).ty, loc)
        if isinstance(node, ast.Compare):
            chosen = self.type_test(node)
            if chosen is not None:
                return ir.Const(chosen, BOOL, loc)
            left = self.expr(node.left)
            for op_node, right_node in zip(node.ops, node.comparators):
                cmp = COMPARE_OPS_OF_AST.get(type(op_node))
                if cmp is None:
                    raise _Unknown
                right = self.expr(right_node)
                if as_scalar(left.ty) is None or as_scalar(right.ty) is None:
                    raise _Unknown
                if isinstance(left, ir.Const) and isinstance(right, ir.Const) and left.weak and right.weak:
                    left, right = self.semantics.materialize(left), self.semantics.materialize(right)
                self.semantics.compare(cmp, left, right, node)
                left = right
            return ir.Var("$compare", BOOL, loc)
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.expr(v)
            return ir.Var("$bool", BOOL, loc)
        if isinstance(node, ast.IfExp):
            chosen = self.type_test(node.test)
            if chosen is None:
                test = constant_value(node.test, {**self.tr.constants.constant_names(), **self.constants})
                chosen = None if test is None else bool(test)
            if chosen is not None:
                return self.expr(node.body if chosen else node.orelse)
            self.expr(node.test)
            a, b = self.expr(node.body), self.expr(node.orelse)
            if as_scalar(a.ty) is None or as_scalar(b.ty) is None:
                raise _Unknown
            first, second = choice_literal(a), choice_literal(b)
            if first is not None and second is not None:
                ty = self.semantics.materialize(first).ty if isinstance(first.value, float) == isinstance(
                    second.value, float) else F64
                assert isinstance(ty, ScalarType)
                choice = ir.Select(ir.Var("$test", BOOL, loc), a, b, ty, loc, scoped=True)
                if is_literal_choice(choice):
                    return choice
                a, b = self.semantics.materialize(a), self.semantics.materialize(b)
            _, _, common = self.semantics.unify(a, b, node, "if/else")
            return ir.Var("$select", common, loc)
        if isinstance(node, ast.Tuple):  # `return a, b` (translate.py's visit_Tuple)
            values = [self.semantics.materialize(self.expr(e)) for e in node.elts]
            if any(isinstance(v.ty, (ViewType, ArrayType, TupleType, VoidType)) for v in values):
                raise _Unknown
            return ir.Var("$tuple", TupleType(tuple(v.ty for v in values)), loc)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _Unknown

    def name(self, node: ast.Name) -> ir.Expr:
        name = node.id
        loc = ir.Loc(node.lineno, node.col_offset + 1)
        if name in self.unknown:
            raise _Unknown
        if name in self.constants:
            return self.tr.constants.constant_expr(self.constants[name], node)
        if name in self.tr.constants.values:
            return self.tr.constants.constant_expr(self.tr.constants.values[name], node)
        if name in self.env:
            return ir.Var(name, self.env[name], loc)
        sym = self.tr.module.symbols.get(name)
        if sym is not None and sym.kind == "constant" and sym.value is not None:
            value = sym.value
            if isinstance(value, bool):
                return ir.Const(value, BOOL, loc)
            return ir.Const(value, literal_type(value), loc, weak=True)
        if sym is not None and sym.kind == "unknown":
            decl = module_array_decl(self.tr.builder, self.tr.module, name)
            if decl is not None:  # ox.constant.array / ox.global_memory.array: declared by the translation
                return ir.Var(f"${name}", decl.ty, loc)
        raise _Unknown

    def subscript(self, node: ast.Subscript) -> ir.Expr:
        loc = ir.Loc(node.lineno, node.col_offset + 1)
        if (isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "strides")
                and isinstance(node.value.value, ast.Name) and isinstance(self.env.get(node.value.value.id), ViewType)):
            return ir.Var("$extent", I64, loc)
        view = self.expr(node.value)
        if isinstance(view.ty, VectorType):  # v[k]: a lane chosen at compile time (vectors.indexed_lane)
            k = self.const_int(node.slice)
            if k is None or not 0 <= k < view.ty.lanes:
                raise _Unknown
            return ir.Var("$lane", view.ty.elem, loc)
        if not isinstance(view.ty, (ViewType, ArrayType)) or not isinstance(view.ty.elem, (ScalarType, VectorType,
                                                                                             StructType)):
            raise _Unknown
        if isinstance(view.ty, ArrayType) and (view.ty.barrier or view.ty.fragment):
            raise _Unknown
        if isinstance(node.slice, ast.Slice):
            return self.slice(view, node)
        self.index(node.slice)
        return ir.Var("$element", view.ty.elem, loc)

    def slice(self, view: ir.Expr, node: ast.Subscript) -> ir.Expr:
        """``x[k:]``, ``a[lo:hi]``: a view of the same elements (view_values.slice_view)."""
        assert isinstance(node.slice, ast.Slice)
        if node.slice.step is not None or not isinstance(view.ty, (ViewType, ArrayType)):
            raise _Unknown
        for bound in (node.slice.lower, node.slice.upper):
            if bound is not None and not is_int(self.expr(bound).ty):
                raise _Unknown
        if isinstance(view.ty, ViewType):
            if view.ty.ndim != 1:
                raise _Unknown
            return ir.Var("$slice", view.ty, view.loc)
        return ir.Var("$slice", replace(view.ty, shape=None, runtime_length=True), view.loc)

    def index(self, node: ast.expr) -> None:
        for part in node.elts if isinstance(node, ast.Tuple) else [node]:
            if not is_int(self.expr(part).ty):
                raise _Unknown

    def attribute(self, node: ast.Attribute) -> ir.Expr:
        # the translator's visit_Attribute: special registers, warpSize, math.pi, a vector's
        # lane, a struct's field
        value = self.tr.register_or_constant(node, self.env)
        if value is not None:
            return value
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.unknown:
            raise _Unknown
        if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), (VectorType, StructType)) or not isinstance(
                base, (ast.Name, ast.Attribute)) or isinstance(base, ast.Attribute) and oxide_name(self.tr.module, base) is None:
            of = self.expr(base)
            if isinstance(of.ty, VectorType):
                return self.probe(lambda ctx: vectors.component(ctx, of, node.attr, node))
            if isinstance(of.ty, StructType):
                return self.probe(lambda ctx: structs.field(ctx, of, node.attr, node))
        raise _Unknown

    def assign_attribute(self, target: ast.Attribute, value: ir.Expr, node: ast.stmt) -> None:
        """``v.x = e``, ``p.mass = e`` on a local (translate.py's assign_attribute): the value
        converted to the lane's or field's type."""
        base = target.value
        if not isinstance(base, ast.Name) or base.id in self.unknown:
            raise _Unknown
        ty = self.env.get(base.id)
        of = ir.Var(base.id, ty, ir.Loc(base.lineno, base.col_offset + 1)) if ty is not None else None
        if of is not None and isinstance(ty, StructType):
            self.probe(lambda ctx: structs.set_field(ctx, of, target.attr, value, node))
        elif of is not None and isinstance(ty, VectorType):
            self.probe(lambda ctx: vectors.set_lane(ctx, of, target.attr, value, node))
        else:
            raise _Unknown

    def call(self, node: ast.Call) -> ir.Expr:
        from ..intrinsics import INTRINSICS, KEYWORD_INTRINSICS
        from ..intrinsics.arguments import keywords_in_place

        tr = self.tr
        func = node.func
        loc = ir.Loc(node.lineno, node.col_offset + 1)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unknown
        if isinstance(func, ast.Name) and func.id not in self.env and func.id not in self.unknown and getattr(
                tr.module.symbols.get(func.id), "kind", "") == "struct":
            struct_name = func.id
            return self.probe(lambda ctx: structs.construct(ctx, struct_type(tr.module, struct_name), node))
        if isinstance(func, ast.Name) and func.id not in tr.module.symbols and func.id not in self.env:
            if func.id == "len" and len(node.args) == 1 and not node.keywords:
                view = self.expr(node.args[0])
                if isinstance(view.ty, ArrayType) and view.ty.shape is not None:
                    return ir.Const(view.ty.shape[0], I64, loc, weak=True)
                if isinstance(view.ty, (ArrayType, ViewType)):
                    return ir.Var("$len", I64, loc)
                raise _Unknown
            if func.id in ("min", "max", "abs") and not node.keywords:
                info = INTRINSICS[f"builtin.{func.id}"]
                return self.probe(lambda ctx: info.typing(ctx, info, node))
            if func.id in ("int", "float", "bool") and len(node.args) == 1 and not node.keywords:
                return self.conversion(node)
        if isinstance(func, ast.Name) and func.id in self.unknown:
            raise _Unknown
        if isinstance(func, (ast.Name, ast.Call)) and not node.keywords:
            to = self.type_operand(func)
            if to is not None:
                return self.conversion(node, to)
        name = oxide_name(tr.module, func)
        if name is not None:
            entry = INTRINSICS.get(name)
            if entry is None or entry.method or entry.builtin or node.keywords and name not in KEYWORD_INTRINSICS:
                raise _Unknown

            def typing(ctx: TypingContext) -> ir.Expr:
                call = keywords_in_place(ctx, entry, node) if entry.parameters and node.keywords else node
                return entry.typing(ctx, entry, call)
            return self.probe(typing)
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and isinstance(self.env.get(func.value.id), ViewType) and not node.keywords):
            method = INTRINSICS.get(f"view.{func.attr}")
            if method is None or not method.method:
                raise _Unknown
            return self.probe(lambda ctx: method.typing(ctx, method, node))
        return self.device_call(node)

    def device_call(self, node: ast.Call) -> ir.Expr:
        """A call of a device function: the instance ``ProgramBuilder.call_signature`` makes
        of it, each argument converted to a parameter of a scalar type; its result of the
        declared return type (a scalar, a tuple, a struct)."""
        tr = self.tr
        if node.keywords:
            raise _Unknown
        target = tr.builder.resolve_function(tr.module, node.func)
        if target is None:
            raise _Unknown
        module, fdef = target
        params = fdef.args.args
        if len(params) != len(node.args) or fdef.decorator_list and any(
                not (isinstance(d, ast.Name) or isinstance(d, ast.Attribute)) for d in fdef.decorator_list):
            raise _Unknown  # @extern(...) and the rest: the translation decides
        args = [self.expr(a) for a in node.args]
        try:
            typevars, param_types, constexprs = tr.builder.call_signature(tr, module, fdef, args, node)
        except CompileError:
            raise _Unknown from None  # the translation reports it
        for arg, param, pty in zip(args, params, param_types):
            if isinstance(pty, ScalarType) and param.arg not in constexprs:
                self.semantics.convert_implicit(arg, pty, node, f"argument {param.arg!r} of {fdef.name}()")
        ret: Type | TypeVarBinding | None
        if fdef.returns is not None:
            try:
                ret = resolve_annotation(module, fdef.returns, typevars, "the return type")
            except CompileError:
                raise _UnknownResult from None
        else:
            ret = self.first_returned(module, fdef, typevars, param_types, constexprs)
        if isinstance(ret, (ScalarType, TupleType, StructType, VectorType)):
            return ir.Var("$call", ret, ir.Loc(node.lineno, node.col_offset + 1))
        raise _UnknownResult

    def first_returned(self, module: ModuleSource, fdef: ast.FunctionDef, typevars: dict[str, TypeVarBinding],
                       param_types: list[Type], constexprs: dict[str, int | bool]) -> Type | None:
        """The return type of the instance of a device function that declares none: its first
        return's, found by walking it (as its translation will type it, with its own literal
        locals decided); None where that walk fails or cannot type it."""
        tr = self.tr
        if self.depth >= _MAX_DEPTH or (module.name, fdef.name) in tr.builder.call_stack or any(
                isinstance(t, ArrayType) for t in param_types):
            return None  # recursion (the translation's error); an array passed as a view (program.py)
        key = instance_key(module, fdef, param_types, constexprs)
        if key not in self.returns:
            self.returns[key] = None  # while it is walked: a call of itself inside has no type
            callee = FunctionTranslator(tr.builder, module, fdef, typevars, False, tr.kernel_name, tr.bounds_check,
                                        constexprs)
            try:
                callee.translate_signature(param_types)
            except CompileError:
                return None
            decided, walk = _decide(callee, self.depth + 1, self.returns)
            if walk is None:  # no literal locals: one walk with none
                walk = _Walk(callee, {}, _reads(fdef), frozenset(), {}, self.depth + 1, self.returns)
                if walk.run() is not None:
                    return None
            self.returns[key] = walk.ret if decided.settled else None
        return self.returns[key]

    def conversion(self, node: ast.Call, to: ScalarType | None = None) -> ir.Expr:
        loc = ir.Loc(node.lineno, node.col_offset + 1)
        if len(node.args) != 1:
            raise _Unknown
        arg = node.args[0]
        if to is None:
            func = node.func
            assert isinstance(func, ast.Name)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and func.id == "float":
                try:
                    return ir.Const(float(arg.value), F64, loc, weak=True)
                except ValueError:
                    raise _Unknown from None
            to = PYTHON_SCALARS[func.id]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and to.kind == "float":
            try:
                return ir.Const(float(arg.value), F64, loc, weak=True)
            except ValueError:
                raise _Unknown from None
        value = self.expr(arg)
        return self.semantics.explicit_conversion(value, to, node)

    def probe(self, typing: Callable[[TypingContext], ir.Expr]) -> ir.Expr:
        """An intrinsic call typed by its own typing function: a conversion of an argument that
        fails is the attempt's type error, any other error one of the walk's placeholders."""
        context = _ProbeContext(self)
        try:
            return typing(_typing_context(context))
        except CompileError:
            if context.conversion_failed:
                raise
            raise _Unknown from None


class _ProbeContext:
    """The ``TypingContext`` an intrinsic's typing sees during the walk: arguments as typed
    placeholders, conversions and unifications through the walk's ``Semantics`` (which notes
    what literal locals meet), sites and facts of the place as neutral values."""

    def __init__(self, walk: _Walk) -> None:
        self.walk = walk
        self.tr = walk.tr
        self.conversion_failed = False

    @property
    def bounds_check(self) -> bool:
        return self.tr.bounds_check

    @property
    def unsafe_depth(self) -> int:
        return self.walk.unsafe_depth + self.tr.unsafe_depth

    @property
    def divergent_depth(self) -> int:
        return 0

    @property
    def declared_arrays(self) -> set[str]:
        return self.walk.declared_arrays

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.tr.error(node, message, hint)

    def loc(self, node: ast.AST) -> ir.Loc:
        return self.tr.loc(node)

    def bounds_site(self, node: ast.AST, what: str) -> int:
        return 0

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        return None

    def expr(self, node: ast.expr) -> ir.Expr:
        return self.walk.expr(node)

    def materialize(self, value: ir.Expr) -> ir.Expr:
        return self.walk.semantics.materialize(value)

    def convert(self, value: ir.Expr, ty: ScalarType, node: ast.AST) -> ir.Expr:
        try:
            return self.walk.semantics.convert(value, ty, node)
        except CompileError:
            self.conversion_failed = True
            raise

    def convert_implicit(self, value: ir.Expr, ty: Type, node: ast.AST, what: str) -> ir.Expr:
        try:
            return self.walk.semantics.convert_implicit(value, ty, node, what)
        except CompileError:
            self.conversion_failed = True
            raise

    def unify(self, left: ir.Expr, right: ir.Expr, node: ast.AST, op: str) -> tuple[ir.Expr, ir.Expr, ScalarType]:
        try:
            return self.walk.semantics.unify(left, right, node, op)
        except CompileError:
            self.conversion_failed = True
            raise

    def truth(self, value: ir.Expr, node: ast.AST) -> ir.Expr:
        return self.walk.semantics.truth(value, node)

    def index_expr(self, node: ast.expr, container: Type | None = None) -> ir.Expr:
        self.walk.index(node)
        return ir.Var("$index", I64, self.loc(node))

    def refuse_fp8(self, node: ast.AST, what: str, *types: ScalarType) -> None:
        self.walk.semantics.refuse_fp8(node, what, *types)

    def refuse_vector_store(self, func: ast.Attribute, node: ast.Call, vt: ViewType, index: ir.Expr) -> None:
        pass

    def const_int(self, node: ast.expr) -> int | None:
        return self.walk.const_int(node)

    def const_str(self, node: ast.expr) -> str | None:
        return self.tr.const_str(node)

    def not_constant_hint(self, node: ast.expr) -> str:
        return ""

    def element_type(self, node: ast.expr) -> ScalarType:
        return self.tr.element_type(node)

    def array_element_type(self, node: ast.expr) -> ScalarType | VectorType:
        return self.tr.array_element_type(node)


def _typing_context(probe: _ProbeContext) -> TypingContext:
    return probe  # mypy checks that the probe implements the intrinsics' TypingContext
