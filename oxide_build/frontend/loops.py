"""Loops: ``while``, ``for ... in range(...)`` (a while loop with its step, and its range for the
bounds-elimination pass: ``ir.ForRange``, with the entry check that ``v + step`` cannot wrap,
which the pass keeps where a proof used the range), ``for ... in static_range(...)`` (unrolled
here: the body is translated once per value, so the value is a compile-time constant in it;
each copy an ``ir.Block``), ``break`` and ``continue``.
"""
from __future__ import annotations

import ast
import copy

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp, LogicOp
from ..ir.types import BOOL, I64, is_int, type_name
from .annotations import oxide_name
from .indexing import Indexing

__all__ = ["Loops", "RenameName"]


class Loops(Indexing):
    """while, for over range() and static_range(), break, continue."""

    def visit_While(self, node: ast.While) -> ir.Stmt:
        if node.orelse:
            raise self.error(node.orelse[0], "while/else is not supported", "move the else block after the loop")
        cond = self.condition(node.test)
        divergent = self.is_thread_dependent(cond)
        self.loop_depth += 1
        self.divergent_depth += divergent
        try:
            body = self.block(node.body)
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
        if isinstance(it, (ast.Tuple, ast.List)):
            return self.constant_values_for(node, it)
        unroll = None
        if isinstance(it, ast.Call) and oxide_name(self.module, it.func) == "unroll":
            it, unroll = self.unroll_hint(it)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.module.symbols):
            raise self.error(it, f"only `for ... in range(...)` loops are supported, not {ast.unparse(it)!r}",
                             "iterate over range(start, stop, step), ox.static_range(...) or a tuple of "
                             "compile-time integers")
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
        if (all(isinstance(a, ir.Const) and a.weak for a in (start, stop, step))
                and (name not in self.locals or name in self.literal_locals)):
            # `for m in range(BLOCK_SIZE)`: bounds of literals and constants type the variable
            # like a local first assigned a literal, by the values it meets (`tx <= m` with an
            # i32 tx makes it an i32, C++'s `for (int m = 0; ...)`), not as an i64
            self.literal_locals.add(name)
            known = self.locals.get(name)
            ty = known if isinstance(known, ScalarType) else self.retype.get(name, ty)
        if (name in self.locals and self.locals[name] != ty and isinstance(self.locals[name], ScalarType)
                and name not in self.loop_bindings and not any(
                    isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(
                        ast.Module(body=node.body, type_ignores=[])))):
            # C's `for (int k = 0; ...)` after a `long k`: a new variable of the loop's type,
            # scoped to the loop (the earlier k is untouched after it, as in C)
            scoped = f"{name}${getattr(node, 'lineno', 0)}"
            self.assign_counts[scoped] = self.assign_counts.get(name, 1)
            return self.visit_For(_renamed_loop(node, name, scoped))
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
        init: list[ir.Stmt] = [ir.Assign(n, v, loc, tracked=False) for n, v in zip((name, stop_name, step_name), bounds)]
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
        if not rebinds:
            self.loop_bindings.add(name)
        self.loop_depth += 1
        self.divergent_depth += divergent
        try:
            body = self.block(node.body)
        finally:
            self.loop_depth -= 1
            self.divergent_depth -= divergent
            self.loop_bindings.discard(name)
        guard = None
        if not rebinds and self.bounds_check and ty.bits <= 32:
            # v + step could wrap: the bounds-elimination pass keeps this entry check where a
            # proof in the body relies on the loop variable's range
            guard = self.range_guard(stop_v, step_v, ty, node)
            init.append(guard)
        step_stmt = ir.Assign(name, ir.BinOp(BinaryOp.ADD, var, step_v, ty, loc), loc, tracked=False)
        facts = ir.ForRange(name, ty, bounds[0], bounds[1], bounds[2], rebinds, guard)
        return [*init, ir.While(cond, body, loc, step=[step_stmt], unroll=unroll, range=facts)]

    def unroll_hint(self, call: ast.Call) -> tuple[ast.expr, int]:
        """``ox.unroll(range(...), n)``: the range, and how many times to unroll its loop
        (``#pragma unroll n``; without ``n``, ``#pragma unroll``: 0, LLVM decides)."""
        if call.keywords or not 1 <= len(call.args) <= 2:
            raise self.error(call, "ox.unroll() takes a range and an optional unroll count: ox.unroll(range(n), 4)")
        factor = 0
        if len(call.args) == 2:
            value = self.const_int(call.args[1])
            if value is None or not 1 <= value <= 1024:
                raise self.error(call.args[1], f"the unroll count must be a compile-time integer from 1 to 1024, "
                                 f"got {ast.unparse(call.args[1])}", "1 keeps the loop rolled")
            factor = value
        inner = call.args[0]
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "range"):
            raise self.error(inner, f"ox.unroll() takes a range(...), not {ast.unparse(inner)!r}",
                             "for a loop with constant bounds, ox.static_range unrolls it completely")
        return inner, factor

    def static_for(self, node: ast.For, it: ast.Call) -> list[ir.Stmt]:
        """``for k in oxide.static_range(n)``: the body is repeated n times with k a constant."""
        assert isinstance(node.target, ast.Name)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "static_range() takes 1 to 3 compile-time integers")
        bounds = [self.const_int(a) for a in it.args]
        for b, a in zip(bounds, it.args):
            if b is None:
                raise self.error(a, f"static_range() needs compile-time integers, got {ast.unparse(a)}",
                                 f"{self.not_constant_hint(a)}; or loop with range()")
        if bounds[2:] == [0]:
            raise self.error(it.args[2], "static_range() step must not be zero")
        steps = range(*bounds)  # type: ignore[arg-type]
        count = max(0, -(-(steps.stop - steps.start) // steps.step))  # len() overflows past 2**63
        if count > 1024:
            raise self.error(it, f"static_range() would unroll {count} times (limit 1024)")
        return self.unrolled_for(node, list(steps), "static_range")

    def constant_values_for(self, node: ast.For, it: ast.Tuple | ast.List) -> list[ir.Stmt]:
        """``for off in (16, 8, 4, 2, 1):`` (the offsets of a warp reduction): unrolled as
        static_range, the body once per value with the variable a constant."""
        values = [self.const_int(e) for e in it.elts]
        for v, e in zip(values, it.elts):
            if v is None:
                raise self.error(e, f"a loop over a tuple needs compile-time integers, got {ast.unparse(e)}",
                                 f"{self.not_constant_hint(e)}; or loop with range()")
        if len(values) > 1024:
            raise self.error(it, f"this loop would unroll {len(values)} times (limit 1024)")
        return self.unrolled_for(node, values, "tuple")  # type: ignore[arg-type]

    def unrolled_for(self, node: ast.For, values: list[int], what: str) -> list[ir.Stmt]:
        """The body once per value of ``values`` (static_range's or a tuple's)."""
        assert isinstance(node.target, ast.Name)
        name = node.target.id
        if name in self.locals and self.locals[name] != I64:
            raise self.error(node.target, f"loop variable {name!r} is {type_name(self.locals[name])}, "
                             f"{'static_range' if what == 'static_range' else 'a loop over a tuple'} gives i64")
        self.locals[name] = I64
        out: list[ir.Stmt] = []
        self.static_loop_depth += 1
        rebinds = self._rebinds(name, node.body)
        outer = self.constexprs.get(name)
        try:
            for v in values:
                if rebinds:  # the body assigns it: an i64 variable set to each value
                    value = ir.Const(v, I64, self.loc(node))
                    out.append(ir.Assign(name, value, self.loc(node)))
                else:  # a compile-time constant, typed by its use like a literal
                    self.constexprs[name] = v
                out.append(ir.Block(self.block(node.body), self.loc(node), unrolled=name))
        finally:
            self.static_loop_depth -= 1
            if not rebinds:
                if outer is None:
                    self.constexprs.pop(name, None)
                else:
                    self.constexprs[name] = outer
        if values and not rebinds:  # after the loop it holds its last value, as in Python
            out.append(ir.Assign(name, ir.Const(values[-1], I64, self.loc(node)), self.loc(node), tracked=False))
        return out

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

    def _rebinds(self, name: str, body: list[ast.stmt]) -> bool:
        """Does a loop over ``name`` rebind it: an enclosing loop's variable, or assigned in ``body``?"""
        return name in self.loop_bindings or any(
            isinstance(t, ast.Name) and t.id == name for t in _assignment_targets(body))

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
