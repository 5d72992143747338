"""Loops: ``while``, ``for ... in range(...)`` (a while loop with its step, and its range for the
bounds-elimination pass: ``ir.ForRange``, with the entry check that ``v + step`` cannot wrap,
which the pass keeps where a proof used the range), ``for ... in static_range(...)`` (unrolled
here: the body is translated once per value, so the value is a compile-time constant in it;
each copy an ``ir.Block``), ``break`` and ``continue``.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING
import copy

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp, LogicOp
from ..ir.types import BOOL, I64, is_int, type_name
from .annotations import oxide_name
from .scope import assignment_targets

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["Loops", "RenameName"]


class Loops:
    """while, for over range() and static_range(), break, continue, for the translator ``tr``
    (whose visitor translates the bodies); the loops being translated are its own state."""

    def __init__(self, tr: FunctionTranslator) -> None:
        self.tr = tr
        self.loop_depth = 0
        self.static_loop_depth = 0
        self.loop_bindings: set[str] = set()  # variables of the range loops being translated
        self._targets: dict[int, tuple[list[ast.stmt], set[str]]] = {}  # a body -> the names it assigns

    def while_loop(self, node: ast.While) -> ir.Stmt:
        tr = self.tr
        if node.orelse:
            raise tr.error(node.orelse[0], "while/else is not supported", "move the else block after the loop")
        cond = tr.condition(node.test)
        divergent = tr.threads.differ(cond)
        self.loop_depth += 1
        try:
            with tr.threads.under(divergent):
                body = tr.block(node.body)
        finally:
            self.loop_depth -= 1
        return ir.While(cond, body, tr.loc(node))

    def for_loop(self, node: ast.For) -> list[ir.Stmt]:
        tr = self.tr
        if node.orelse:
            raise tr.error(node.orelse[0], "for/else is not supported", "move the else block after the loop")
        if not isinstance(node.target, ast.Name):
            raise tr.error(node.target, "the loop variable must be a single name")
        it = node.iter
        if isinstance(it, ast.Call) and oxide_name(tr.module, it.func) == "static_range":
            return self.static_for(node, it)
        if isinstance(it, (ast.Tuple, ast.List)):
            return self.constant_values_for(node, it)
        unroll = None
        if isinstance(it, ast.Call) and oxide_name(tr.module, it.func) == "unroll":
            it, unroll = self.unroll_hint(it)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in tr.module.symbols):
            raise tr.error(it, f"only `for ... in range(...)` loops are supported, not {ast.unparse(it)!r}",
                             "iterate over range(start, stop, step), ox.static_range(...) or a tuple of "
                             "compile-time integers")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise tr.error(it, "range() takes 1 to 3 positional arguments")
        args = [tr.expr(a) for a in it.args]
        start: ir.Expr
        stop: ir.Expr
        step: ir.Expr
        if len(args) == 1:
            start, stop, step = ir.Const(0, I64, tr.loc(it), weak=True), args[0], ir.Const(1, I64, tr.loc(it), weak=True)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ir.Const(1, I64, tr.loc(it), weak=True)
        else:
            start, stop, step = args
        for a, n in zip((start, stop, step), ("start", "stop", "step")):
            if not is_int(a.ty):
                raise tr.error(it, f"range() {n} must be an integer, got {type_name(a.ty)}")
        ty = tr.semantics.common_type([start, stop, step], it)
        if isinstance(step, ir.Const) and step.value == 0:
            raise tr.error(it, "range() step must not be zero")
        name = node.target.id
        if (all(isinstance(a, ir.Const) and a.weak for a in (start, stop, step))
                and (name not in tr.scope.locals or name in tr.literals.names)):
            # `for m in range(BLOCK_SIZE)`: bounds of literals and constants type the variable
            # like a local first assigned a literal, by the values it meets (`tx <= m` with an
            # i32 tx makes it an i32, C++'s `for (int m = 0; ...)`), not as an i64
            tr.literals.names.add(name)
            known = tr.scope.locals.get(name)
            ty = known if isinstance(known, ScalarType) else tr.literals.retype.get(name, ty)
        if (name in tr.scope.locals and tr.scope.locals[name] != ty and isinstance(tr.scope.locals[name], ScalarType)
                and name not in self.loop_bindings and not any(
                    isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(
                        ast.Module(body=node.body, type_ignores=[])))):
            # C's `for (int k = 0; ...)` after a `long k`: a new variable of the loop's type,
            # scoped to the loop (the earlier k is untouched after it, as in C)
            scoped = f"{name}${getattr(node, 'lineno', 0)}"
            tr.scope.assign_counts[scoped] = tr.scope.assign_counts.get(name, 1)
            return self.for_loop(_renamed_loop(node, name, scoped))
        if name in tr.scope.locals and tr.scope.locals[name] != ty:
            raise tr.error(node.target, f"loop variable {name!r} is {type_name(tr.scope.locals[name])} "
                             f"but the range is {ty.name}")
        tr.scope.locals.setdefault(name, ty)
        stop_name = tr.builder.fresh_name("stop")
        step_name = tr.builder.fresh_name("step")
        tr.scope.locals[stop_name] = ty
        tr.scope.locals[step_name] = ty
        loc = tr.loc(node)
        bounds = [tr.semantics.convert(start, ty, it), tr.semantics.convert(stop, ty, it), tr.semantics.convert(step, ty, it)]
        init: list[ir.Stmt] = [ir.Assign(n, v, loc, tracked=False) for n, v in zip((name, stop_name, step_name), bounds)]
        var = ir.Var(name, ty, loc)
        stop_v, step_v = ir.Var(stop_name, ty, loc), ir.Var(step_name, ty, loc)
        if isinstance(step, ir.Const) or self.positive_step(step, it.args[2] if len(it.args) == 3 else None):
            op = CompareOp.LT if not isinstance(step, ir.Const) or step.value > 0 else CompareOp.GT
            cond: ir.Expr = ir.Compare(op, var, stop_v, ty, BOOL, loc)
        else:
            zero = ir.Const(0, ty, loc)
            cond = ir.BoolOp(LogicOp.OR, [
                ir.BoolOp(LogicOp.AND, [ir.Compare(CompareOp.GT, step_v, zero, ty, BOOL, loc), ir.Compare(CompareOp.LT, var, stop_v, ty, BOOL, loc)], BOOL, loc),
                ir.BoolOp(LogicOp.AND, [ir.Compare(CompareOp.LT, step_v, zero, ty, BOOL, loc), ir.Compare(CompareOp.GT, var, stop_v, ty, BOOL, loc)], BOOL, loc),
            ], BOOL, loc)
        divergent = any(tr.threads.differ(a) for a in (start, stop, step))
        if divergent:
            tr.threads.varying.add(name)
        rebinds = self._rebinds(name, node.body)
        if not rebinds:
            self.loop_bindings.add(name)
        self.loop_depth += 1
        try:
            with tr.threads.under(divergent):
                body = tr.block(node.body)
        finally:
            self.loop_depth -= 1
            self.loop_bindings.discard(name)
        guard = None
        if not rebinds and tr.checks.enabled and ty.bits <= 32:
            # v + step could wrap: the bounds-elimination pass keeps this entry check where a
            # proof in the body relies on the loop variable's range
            guard = tr.checks.range_guard(stop_v, step_v, ty, node)
            init.append(guard)
        step_stmt = ir.Assign(name, ir.BinOp(BinaryOp.ADD, var, step_v, ty, loc), loc, tracked=False)
        facts = ir.ForRange(name, ty, bounds[0], bounds[1], bounds[2], rebinds, guard)
        return [*init, ir.While(cond, body, loc, step=[step_stmt], unroll=unroll, range=facts)]

    def unroll_hint(self, call: ast.Call) -> tuple[ast.expr, int]:
        """``ox.unroll(range(...), n)``: the range, and how many times to unroll its loop
        (``#pragma unroll n``; without ``n``, ``#pragma unroll``: 0, LLVM decides)."""
        tr = self.tr
        if call.keywords or not 1 <= len(call.args) <= 2:
            raise tr.error(call, "ox.unroll() takes a range and an optional unroll count: ox.unroll(range(n), 4)")
        factor = 0
        if len(call.args) == 2:
            value = tr.constants.const_int(call.args[1])
            if value is None or not 1 <= value <= 1024:
                raise tr.error(call.args[1], f"the unroll count must be a compile-time integer from 1 to 1024, "
                                 f"got {ast.unparse(call.args[1])}", "1 keeps the loop rolled")
            factor = value
        inner = call.args[0]
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "range"):
            raise tr.error(inner, f"ox.unroll() takes a range(...), not {ast.unparse(inner)!r}",
                             "for a loop with constant bounds, ox.static_range unrolls it completely")
        return inner, factor

    def static_for(self, node: ast.For, it: ast.Call) -> list[ir.Stmt]:
        """``for k in oxide.static_range(n)``: the body is repeated n times with k a constant."""
        tr = self.tr
        assert isinstance(node.target, ast.Name)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise tr.error(it, "static_range() takes 1 to 3 compile-time integers")
        bounds = [tr.constants.const_int(a) for a in it.args]
        for b, a in zip(bounds, it.args):
            if b is None:
                raise tr.error(a, f"static_range() needs compile-time integers, got {ast.unparse(a)}",
                                 f"{tr.constants.not_constant_hint(a)}; or loop with range()")
        if bounds[2:] == [0]:
            raise tr.error(it.args[2], "static_range() step must not be zero")
        steps = range(*bounds)  # type: ignore[arg-type]
        count = max(0, -(-(steps.stop - steps.start) // steps.step))  # len() overflows past 2**63
        if count > 1024:
            raise tr.error(it, f"static_range() would unroll {count} times (limit 1024)")
        return self.unrolled_for(node, list(steps), "static_range")

    def constant_values_for(self, node: ast.For, it: ast.Tuple | ast.List) -> list[ir.Stmt]:
        """``for off in (16, 8, 4, 2, 1):`` (the offsets of a warp reduction): unrolled as
        static_range, the body once per value with the variable a constant."""
        tr = self.tr
        values = [tr.constants.const_int(e) for e in it.elts]
        for v, e in zip(values, it.elts):
            if v is None:
                raise tr.error(e, f"a loop over a tuple needs compile-time integers, got {ast.unparse(e)}",
                                 f"{tr.constants.not_constant_hint(e)}; or loop with range()")
        if len(values) > 1024:
            raise tr.error(it, f"this loop would unroll {len(values)} times (limit 1024)")
        return self.unrolled_for(node, values, "tuple")  # type: ignore[arg-type]

    def unrolled_for(self, node: ast.For, values: list[int], what: str) -> list[ir.Stmt]:
        """The body once per value of ``values`` (static_range's or a tuple's)."""
        tr = self.tr
        assert isinstance(node.target, ast.Name)
        name = node.target.id
        if name in tr.scope.locals and tr.scope.locals[name] != I64:
            raise tr.error(node.target, f"loop variable {name!r} is {type_name(tr.scope.locals[name])}, "
                             f"{'static_range' if what == 'static_range' else 'a loop over a tuple'} gives i64")
        tr.scope.locals[name] = I64
        out: list[ir.Stmt] = []
        self.static_loop_depth += 1
        rebinds = self._rebinds(name, node.body)
        outer = tr.constants.values.get(name)
        try:
            for v in values:
                if rebinds:  # the body assigns it: an i64 variable set to each value
                    value = ir.Const(v, I64, tr.loc(node))
                    out.append(ir.Assign(name, value, tr.loc(node)))
                else:  # a compile-time constant, typed by its use like a literal
                    tr.constants.values[name] = v
                out.append(ir.Block(tr.block(node.body), tr.loc(node), unrolled=name))
        finally:
            self.static_loop_depth -= 1
            if not rebinds:
                if outer is None:
                    tr.constants.values.pop(name, None)
                else:
                    tr.constants.values[name] = outer
        if values and not rebinds:  # after the loop it holds its last value, as in Python
            out.append(ir.Assign(name, ir.Const(values[-1], I64, tr.loc(node)), tr.loc(node), tracked=False))
        return out

    def positive_step(self, value: ir.Expr, node: ast.expr | None) -> bool:
        tr = self.tr
        if node is None:
            return True
        if isinstance(value, ir.Const):
            return isinstance(value.value, int) and value.value > 0
        # products of block/grid dimensions are positive
        def dims_only(e: ir.Expr) -> bool:
            if isinstance(e, ir.SpecialReg):
                return e.name.startswith(("ntid.", "nctaid."))
            if isinstance(e, ir.Var):
                return e.name in tr.scope.positive_names
            if isinstance(e, ir.Cast):
                return dims_only(e.operand)
            if isinstance(e, ir.BinOp) and e.op == "*":
                return dims_only(e.left) and dims_only(e.right)
            if isinstance(e, ir.Const):
                return isinstance(e.value, int) and e.value > 0
            return False
        return dims_only(value)

    def _rebinds(self, name: str, body: list[ast.stmt]) -> bool:
        """Does a loop over ``name`` rebind it: an enclosing loop's variable, or assigned in ``body``?"""
        if name in self.loop_bindings:
            return True
        cached = self._targets.get(id(body))
        if cached is None or cached[0] is not body:  # a body is walked once, however often unrolled
            cached = (body, {t.id for t in assignment_targets(body) if isinstance(t, ast.Name)})
            self._targets[id(body)] = cached
        return name in cached[1]

    def break_stmt(self, node: ast.Break) -> ir.Stmt:
        tr = self.tr
        if self.static_loop_depth and self.loop_depth == 0:
            raise tr.error(node, "`break` is not allowed in a static_range loop", "use range() instead")
        if self.loop_depth == 0:
            raise tr.error(node, "`break` outside a loop")
        return ir.Break(tr.loc(node))

    def continue_stmt(self, node: ast.Continue) -> ir.Stmt:
        tr = self.tr
        if self.static_loop_depth and self.loop_depth == 0:
            raise tr.error(node, "`continue` is not allowed in a static_range loop", "use range() instead")
        if self.loop_depth == 0:
            raise tr.error(node, "`continue` outside a loop")
        return ir.Continue(tr.loc(node))


class RenameName(ast.NodeTransformer):
    """Every ``Name`` ``old`` as ``new`` (a variable scoped to a loop or a block)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.new, node.ctx), node) if node.id == self.old else node


def _renamed_loop(node: ast.For, old: str, new: str) -> ast.For:
    """``node`` with its loop variable ``old`` named ``new`` (target and body)."""
    renamed = RenameName(old, new).visit(copy.deepcopy(node))
    assert isinstance(renamed, ast.For)
    return renamed
