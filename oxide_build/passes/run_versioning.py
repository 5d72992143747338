"""Run versioning: a run of straight-line code whose bounds checks nothing proves (the loads of
an unrolled ``static_range`` tile copy, the nine taps of a stencil, the three loads of a split
index) tests all of them once, at the run's start, and runs a copy without them when every one
holds; else the run as written, with its checks.

Each check of a load or store ends a basic block (compare, then a branch to the failure path),
and a load cannot move above a branch: so in ``tile[ty + 8 * i, tx] = src[base + i * 8 * W]``
unrolled eight times, each load waits for the shared store before it, and their latencies add
up where the unchecked code issues the eight loads together. In the copy that one test guards
there are no branches between them.

A run is a maximal sequence of statements of one statement list that are assignments, stores,
expression statements and ``if``s of such statements, with no convergent intrinsic, in them
or in the device functions they call (a barrier or warp operation must not end up under a
test that threads may take differently), no loop, ``return``, ``break``, ``continue``, ``assert`` or array
declaration, nor an ``if`` whose condition a test cannot recompute or that assigns such a
local (the pass looks into its branches instead). For each checked access of a 1-D view or array (and each ``checked_index`` of a
tensor or array axis) in the run, the test asks ``0 <= index < length``, with the index as the
run's start sees it: the locals the run assigns before the access replaced by the values they
were assigned (a run ends after a local assigned what a test cannot recompute, a load or a call's
result, that a later index or condition reads: the accesses after it are tested after it) (pure integer arithmetic: ``+ - * // % << >> & | ^``, comparisons, casts between
integers, selects; oxide's ``//`` and ``%`` are defined for every operand) and the view not
rebound in the run. An access that only runs where a condition holds (inside an ``if`` of the
run, a conditional expression's branch, a later operand of ``and``/``or``) is tested as ``not
condition or in range``, the condition seen from the run's start the same way. An access whose
index or condition reads a value the run loads, or a local it assigns in an ``if``, keeps its
check in both copies.

Where the test holds, no removed check could have failed, so the copy without them does what
the run as written does; where it fails, the run as written runs, and the first failing access
is reported at its own file:line as without the pass. The test reads only values known at the
run's start, each computed as the access computes it.

An access inside a loop whose test reads nothing the innermost loop around it assigns keeps its
check: check versioning tests such an index before a counted loop, and a test inside the loop
would be taken on every trip. Where the test fails, one of the checks it removed fails in the
run as written, which ends the thread there: that copy never reaches the code after the run,
and it is lowered as an out-of-line path with no edge back (``If.orelse_fails``; a merge there
would keep LLVM from unrolling the loop around the run, and its instructions from sinking).

A run is versioned when its test has at least ``min_checks`` distinct parts (a load and a store of
one index are one: LLVM folds the second check into the first); a run larger than
``max_run_size`` IR nodes is cut into pieces of at most that size, each versioned on its own
(the pass copies what it versions). It runs after check versioning and inside its and the
launch versioning's fast copies only (the checked copies run when a check may fail).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from ..intrinsics import intrinsic_info
from ..ir import nodes as ir
from ..ir.ops import CompareOp, LogicOp
from ..ir.printer import print_expr
from ..ir.types import BOOL, I64, ArrayType, ViewType, as_scalar
from .bounds_elimination import _clone, _set_children

__all__ = ["RunVersioning"]

_MAX_EXPANDED = 96  # IR nodes of one index or condition as the run's start sees it


@dataclass(frozen=True)
class RunVersioning:
    name: str = "run-versioning"
    min_checks: int = 2
    max_run_size: int = 1536

    def apply(self, program: ir.Program) -> ir.Program:
        calls = _CallsConvergent({fn.symbol: fn for fn in program.functions})
        for fn in program.functions:
            if not fn.checked_copy:  # a split kernel's checked copy runs when a check may fail
                fn.body = self._block(fn.body, _Context(fn, calls))
        return program

    def _block(self, stmts: list[ir.Stmt], cx: _Context) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        run: list[ir.Stmt] = []
        for s in stmts:
            if _runnable(s, cx.calls):
                run.append(s)
                continue
            out += self._runs(run, cx)
            run = []
            if isinstance(s, ir.If) and (s.launch_versioned or s.check_versioned):
                s.then = self._block(s.then, cx)  # the else branch is the checked copy: a check fails there
            elif isinstance(s, ir.If):
                s.then, s.orelse = self._block(s.then, cx), self._block(s.orelse, cx)
            elif isinstance(s, ir.While):
                assigned = frozenset(st.name for st in ir.statements([*s.body, *s.step]) if isinstance(st, ir.Assign))
                s.body = self._block(s.body, replace(cx, loop_assigned=assigned))
            elif isinstance(s, ir.Block):
                s.body = self._block(s.body, cx)
            out.append(s)
        return out + self._runs(run, cx)

    def _runs(self, run: list[ir.Stmt], cx: _Context) -> list[ir.Stmt]:
        """``run`` cut into pieces of at most ``max_run_size`` nodes, each versioned."""
        out: list[ir.Stmt] = []
        piece: list[ir.Stmt] = []
        size = 0
        later: list[set[str]] = [set()]  # the names the indices and conditions after each statement read
        for s in reversed(run[1:]):
            later.append(later[-1] | _index_names([s]))
        later.reverse()
        for s, after in zip(run, later):
            n = _size(s)
            if piece and size + n > self.max_run_size:
                out += self._version(piece, cx)
                piece, size = [], 0
            piece.append(s)
            size += n
            if _opaque(s) & after:  # the accesses after it that read it can be tested after it only
                out += self._version(piece, cx)
                piece, size = [], 0
        if piece:
            out += self._version(piece, cx)
        return out

    def _version(self, run: list[ir.Stmt], cx: _Context) -> list[ir.Stmt]:
        # the statements before the first checked access and after the last stay outside
        marks = [any(True for _ in _accesses([s])) for s in run]
        if sum(marks) == 0:
            return run
        first, last = marks.index(True), len(marks) - marks[::-1].index(True)
        head, run, tail = run[:first], run[first:last], run[last:]
        if len(run) == 1 and isinstance(run[0], ir.If):
            # one if: its branches are runs of their own, whose values need no guard in the test
            s = run[0]
            s.then, s.orelse = self._block(s.then, cx), self._block(s.orelse, cx)
            return head + run + tail
        return head + self._versioned(run, cx) + tail

    def _versioned(self, run: list[ir.Stmt], cx: _Context) -> list[ir.Stmt]:
        fn = cx.fn
        if sum(1 for _ in _accesses(run)) < self.min_checks or _size_of(run) > self.max_run_size:
            return run
        tests: list[ir.Expr] = []
        seen: set[str] = set()
        removable: list[int] = []
        prelude: list[ir.Assign] = []  # the values the run assigns, computed once for the test
        taken = set(fn.locals)
        env: dict[str, ir.Expr | None] = {}

        def hoist(value: ir.Expr, loc: ir.Loc) -> ir.Expr:
            if isinstance(value, (ir.Var, ir.Const, ir.SpecialReg)) or as_scalar(value.ty) is None:
                return value
            n = len(prelude)
            while f"$run{n}" in taken:
                n += 1
            name = f"$run{n}"
            taken.add(name)
            prelude.append(ir.Assign(name, value, loc, tracked=False))
            return ir.Var(name, value.ty, loc)

        for n, (access, guards, at) in enumerate(_accesses_in_order(run, env, hoist)):
            test = _in_range(access, guards, at)
            if test is not None and cx.loop_assigned is not None \
                    and not _reads(test, {a.name: a.value for a in prelude}) & cx.loop_assigned:
                continue  # the same in every trip of the loop: LLVM hoists its check out of it
            if test is not None:
                text = print_expr(test)
                if text not in seen:  # the same index checked again (tid.x of each row of a tile)
                    seen.add(text)
                    tests.append(test)
                removable.append(n)
        if len(tests) < self.min_checks:  # one test: no fewer branches than the checks it stands for
            return run
        fast = _clone(run, {})
        chosen = set(removable)
        for n, (access, _, _) in enumerate(_accesses_in_order(fast, {})):
            if n in chosen:
                access.check_site = None
        loc = _loc(run[0])
        for a in prelude:
            fn.locals[a.name] = a.value.ty
        return [*prelude, ir.If(ir.BoolOp(LogicOp.AND, tests, BOOL, loc), fast, run, loc, check_versioned=True,
                                  orelse_fails=True)]


@dataclass(frozen=True)
class _Context:
    fn: ir.Function
    calls: _CallsConvergent
    # the locals the innermost loop around the run assigns (None outside loops)
    loop_assigned: frozenset[str] | None = None


def _reads(e: ir.Expr, prelude: dict[str, ir.Expr]) -> set[str]:
    """The locals ``e`` reads, through the prelude's values it reads."""
    names: set[str] = set()
    for x in ir.subexpressions(e):
        if isinstance(x, ir.Var):
            names |= _reads(prelude[x.name], prelude) if x.name in prelude else {x.name}
    return names


# ---- what a run may hold --------------------------------------------------------------------

def _convergent(x: ir.Intrinsic) -> bool:
    if x.name in ("flat_index", "checked_index"):
        return False
    info = intrinsic_info(x.name)
    return info is None or info.convergent


class _CallsConvergent:
    """Whether a device function reaches a convergent intrinsic (a barrier, a warp operation),
    through the functions it calls; an unknown callee (C++) counts as one."""

    def __init__(self, functions: dict[str, ir.Function]) -> None:
        self.functions = functions
        self.known: dict[str, bool] = {}

    def __call__(self, symbol: str) -> bool:
        if symbol not in self.known:
            self.known[symbol] = True  # a recursive call: assumed convergent
            fn = self.functions.get(symbol)
            self.known[symbol] = fn is None or any(
                not _runnable_expr(r, self) for st in ir.statements(fn.body) for r in ir.statement_roots(st))
        return self.known[symbol]


def _opaque(s: ir.Stmt) -> set[str]:
    """The locals ``s`` leaves a value a test before it cannot recompute: assigned a load or a
    call's result, or in a branch of an ``if``."""
    if isinstance(s, ir.Assign):
        return {s.name} if _expanded(s.value, {}) is None else set()
    if isinstance(s, ir.If):
        return _assigned(s.then) | _assigned(s.orelse)
    return set()


def _index_names(stmts: list[ir.Stmt]) -> set[str]:
    """The names read by the indices and the conditions of ``stmts``."""
    roots: list[ir.Expr] = []
    for st in ir.statements(stmts):
        if isinstance(st, ir.Store):
            roots.append(st.index)
        elif isinstance(st, ir.If):
            roots.append(st.cond)
        for r in ir.statement_roots(st):
            for x in ir.subexpressions(r):
                if isinstance(x, ir.ViewLoad):
                    roots.append(x.index)
                elif isinstance(x, ir.Intrinsic) and x.name == "checked_index":
                    roots.append(x.args[0])
                elif isinstance(x, ir.Select) and x.scoped:
                    roots.append(x.cond)
                elif isinstance(x, ir.BoolOp):
                    roots += x.values[:-1]
    return {x.name for r in roots for x in ir.subexpressions(r) if isinstance(x, ir.Var)}


def _runnable(s: ir.Stmt, calls: _CallsConvergent) -> bool:
    if isinstance(s, ir.If):  # its condition recomputed in the test, for the accesses it guards
        return not s.launch_versioned and not s.check_versioned and _expanded(s.cond, {}) is not None \
            and all(_runnable(x, calls) for x in (*s.then, *s.orelse)) \
            and not set().union(*(_opaque(x) for x in ir.statements([*s.then, *s.orelse]))) & _index_names([*s.then, *s.orelse])
    if not isinstance(s, (ir.Assign, ir.Store, ir.ExprStmt)):
        return False
    return all(_runnable_expr(r, calls) for r in ir.statement_roots(s))


def _runnable_expr(e: ir.Expr, calls: _CallsConvergent) -> bool:
    """No convergent intrinsic in ``e``, nor in the device functions it calls."""
    for x in ir.subexpressions(e):
        if isinstance(x, ir.Call) and calls(x.symbol) or isinstance(x, ir.Intrinsic) and _convergent(x):
            return False
    return True


def _size(s: ir.Stmt) -> int:
    return sum(1 for st in ir.statements([s]) for r in ir.statement_roots(st) for _ in ir.subexpressions(r))


def _size_of(run: list[ir.Stmt]) -> int:
    return sum(_size(s) for s in run)


def _loc(s: ir.Stmt) -> ir.Loc:
    return getattr(s, "loc", ir.Loc(0, 0))


# ---- the checked accesses, in a fixed order --------------------------------------------------

Access = ir.ViewLoad | ir.Store | ir.Intrinsic


def _checked(x: object) -> bool:
    if isinstance(x, (ir.ViewLoad, ir.Store)):
        return x.check_site is not None
    return isinstance(x, ir.Intrinsic) and x.check_site is not None


def _accesses(run: list[ir.Stmt]) -> Iterator[Access]:
    for s in ir.statements(run):
        if isinstance(s, ir.Store) and s.check_site is not None:
            yield s
        for r in ir.statement_roots(s):
            for x in ir.subexpressions(r):
                if _checked(x):
                    yield x  # type: ignore[misc]


_Guarded = tuple[Access, list[ir.Expr | None], dict[str, "ir.Expr | None"]]


Hoist = Callable[[ir.Expr, ir.Loc], ir.Expr]


def _accesses_in_order(run: list[ir.Stmt], env: dict[str, ir.Expr | None], hoist: Hoist | None = None) -> Iterator[_Guarded]:
    """Every checked access of ``run`` (each expression once, in a fixed order: the same in a
    copy), with the conditions under which it runs (None: one the run's start cannot see) and
    the locals' values, from the run's start, where it runs (None: unknown there). ``env`` is
    updated as the walk passes the run's assignments; ``hoist`` makes a local of the value of an
    assignment the run always makes (so the test computes it once, however many indices read it)."""
    seen: set[int] = set()
    yield from _walk(run, [], env, seen, hoist)


def _walk(stmts: list[ir.Stmt], guards: list[ir.Expr | None], env: dict[str, ir.Expr | None],
          seen: set[int], hoist: Hoist | None = None) -> Iterator[_Guarded]:
    for s in stmts:
        if isinstance(s, ir.If):
            yield from _walk_expr(s.cond, guards, env, seen)
            cond = _expanded(s.cond, env)
            inner = dict(env)
            yield from _walk(s.then, [*guards, cond], inner, seen)
            other = dict(env)
            yield from _walk(s.orelse, [*guards, _negated(cond)], other, seen)
            for name in {*_assigned(s.then), *_assigned(s.orelse)}:
                env[name] = None  # its value depends on the branch taken
            continue
        if isinstance(s, ir.Store):
            for r in (s.view, s.index, s.value):
                yield from _walk_expr(r, guards, env, seen)
            if s.check_site is not None:
                yield s, list(guards), dict(env)
        elif isinstance(s, ir.Assign):
            yield from _walk_expr(s.value, guards, env, seen)
            value = _expanded(s.value, env)  # in a branch: its value where the branch runs
            if value is not None and hoist is not None and not guards:
                # computed before the test, where the facts that marked its casts and divisions
                # hold too (those of the run's start)
                value = hoist(value, s.loc)
            env[s.name] = value
        elif isinstance(s, ir.ExprStmt):
            yield from _walk_expr(s.value, guards, env, seen)


def _walk_expr(e: ir.Expr, guards: list[ir.Expr | None], env: dict[str, ir.Expr | None],
               seen: set[int]) -> Iterator[_Guarded]:
    if id(e) in seen:
        return
    seen.add(id(e))
    if isinstance(e, ir.Select) and e.scoped:
        yield from _walk_expr(e.cond, guards, env, seen)
        cond = _expanded(e.cond, env)
        yield from _walk_expr(e.if_true, [*guards, cond], env, seen)
        yield from _walk_expr(e.if_false, [*guards, _negated(cond)], env, seen)
        return
    if isinstance(e, ir.BoolOp):
        more = list(guards)
        for v in e.values:
            yield from _walk_expr(v, more, env, seen)
            c = _expanded(v, env)
            more = [*more, c if e.op == LogicOp.AND else _negated(c)]  # later operands run where it allows
        return
    for c in ir.children(e):
        yield from _walk_expr(c, guards, env, seen)
    if _checked(e):
        yield e, list(guards), dict(env)  # type: ignore[misc]


def _assigned(stmts: list[ir.Stmt]) -> set[str]:
    return {s.name for s in ir.statements(stmts) if isinstance(s, ir.Assign)}


# ---- the test ------------------------------------------------------------------------------------

def _in_range(access: Access, guards: list[ir.Expr | None], env: dict[str, ir.Expr | None]) -> ir.Expr | None:
    """``not guards or 0 <= index < length`` as the run's start sees it, or None."""
    if any(g is None for g in guards):
        return None
    if isinstance(access, ir.Intrinsic):
        if access.name != "checked_index":
            return None  # a vector access, an atomic: its check stays
        raw, size = access.args
        length = _expanded(size, env) if isinstance(size, (ir.Const, ir.ViewDim)) else None
    else:
        raw = access.index
        length = _length(access.view, env)
    index = _expanded(raw, env)
    scalar = None if index is None else as_scalar(index.ty)
    if index is None or length is None or scalar is None or scalar.kind not in ("int", "uint"):
        return None
    loc = access.loc
    wide = index if index.ty == I64 else ir.Cast(index, I64, loc)  # as the check widens it
    test: ir.Expr = ir.BoolOp(LogicOp.AND, [
        ir.Compare(CompareOp.GE, wide, ir.Const(0, I64, loc), I64, BOOL, loc),
        ir.Compare(CompareOp.LT, copy.copy(wide), length, I64, BOOL, loc)], BOOL, loc)
    if guards:
        cond = guards[0] if len(guards) == 1 else ir.BoolOp(LogicOp.AND, list(guards), BOOL, loc)  # type: ignore[arg-type]
        test = ir.BoolOp(LogicOp.OR, [ir.Not(cond, BOOL, loc), test], BOOL, loc)  # type: ignore[arg-type]
    return test


def _length(view: ir.Expr, env: dict[str, ir.Expr | None]) -> ir.Expr | None:
    """The length a check of ``view`` compares with, when the run does not rebind it: a 1-D
    view's ``len``, a 1-D array's element count."""
    if isinstance(view, ir.Var) and view.name in env:
        return None
    if isinstance(view, ir.Var) and isinstance(view.ty, ViewType) and view.ty.ndim == 1:
        return ir.ViewLen(view, I64, view.loc)
    if isinstance(view, (ir.Var, ir.ModuleArray)) and isinstance(view.ty, ArrayType) and view.ty.shape is not None \
            and len(view.ty.shape) == 1:
        return ir.Const(view.ty.shape[0], I64, view.loc)
    return None


def _negated(cond: ir.Expr | None) -> ir.Expr | None:
    return None if cond is None else ir.Not(cond, BOOL, cond.loc)


_PURE = (ir.Const, ir.Var, ir.SpecialReg, ir.ThreadIndex1D, ir.BinOp, ir.Compare, ir.Not, ir.Neg, ir.Cast,
         ir.Select, ir.BoolOp, ir.ViewLen, ir.ViewDim)


def _expanded(e: ir.Expr, env: dict[str, ir.Expr | None]) -> ir.Expr | None:
    """A copy of ``e`` as the run's start sees it (the locals the run assigned replaced by their
    values, an index marker by its index), or None where it reads memory or an unknown local.

    The copy keeps what bounds elimination proved of its divisions' and casts' operands where
    ``e`` stands (``BinOp.operands_nonneg``, ``Cast.nonneg``): the facts it used hold there, and
    the test evaluates the copy only where the access's conditions hold (``not c or ...``
    branches), so it computes what the access computes, and LLVM shares the two."""
    budget = [_MAX_EXPANDED]

    def go(x: ir.Expr) -> ir.Expr | None:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if isinstance(x, ir.Intrinsic) and x.name in ("flat_index", "checked_index"):
            return go(x.args[0])
        if not isinstance(x, _PURE):
            return None
        if isinstance(x, ir.Var):
            if isinstance(x.ty, (ViewType, ArrayType)):
                return x if x.name not in env else None
            if x.name in env:
                value = env[x.name]
                if value is None:
                    return None
                budget[0] -= _count(value)
                return _clone(value, {}) if budget[0] >= 0 else None
            return ir.Var(x.name, x.ty, x.loc)
        if isinstance(x, ir.Cast):
            src = as_scalar(x.operand.ty)
            if not (src is not None and src.kind in ("int", "uint", "bool")
                    and x.ty.kind in ("int", "uint", "bool")):
                return None  # a float conversion out of range is not defined in LLVM
        if isinstance(x, (ir.ViewLen, ir.ViewDim)):
            return _clone(x, {}) if isinstance(x.view, ir.Var) and x.view.name not in env else None
        out = copy.copy(x)
        kids = ir.children(x)
        new = [go(k) for k in kids]
        if any(k is None for k in new):
            return None
        _set_children(out, new)  # type: ignore[arg-type]
        return out

    return go(e)


def _count(e: ir.Expr) -> int:
    return sum(1 for _ in ir.subexpressions(e))
