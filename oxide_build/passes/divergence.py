"""Barrier divergence, across calls: ``block.sync()`` must be reached by every thread of the
block (``grid.sync()`` by every thread of the grid), so neither it nor a call of a function
that reaches it may stand under a condition that differs between threads (the block would
deadlock).

The frontend catches ``block.sync()`` written directly under such a condition; this pass sees
through calls. A value is thread-dependent when it comes from the thread's identity
(``thread.index_*``, ``thread.idx``), from memory (a view read, an atomic, a warp operation),
from a parameter that some call passes a thread-dependent value, or from a call whose callee
returns such a value. A condition on a thread-dependent value is divergent; a call under a
divergent condition of a function that reaches ``block.sync()`` is an error that names the
call and the sync.

The pass also marks the kernels that reach ``grid.sync()`` (directly or through calls)
``cooperative``: the grid barrier waits for every block, so all must be resident at once; the
manifest carries the mark and the runtime launches them cooperatively.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..intrinsics import Role, has_role, intrinsic_info
from ..intrinsics.thread import BARRIER  # what block.sync() is in the IR: a call of the LLVM barrier
from ..ir import nodes as ir
from ..ir.verify import IRError

__all__ = ["BarrierDivergence", "BARRIER", "is_thread_dependent", "calls_and_barriers", "functions_reaching", "reached_from"]


def _barrier_name(x: ir.Expr, grid_barrier: Role = Role.GRID_BARRIER) -> str | None:
    """"block.sync()", "grid.sync()" or a block vote's name where ``x`` is that barrier."""
    if isinstance(x, ir.Call) and x.symbol == BARRIER:
        return "block.sync()"
    if has_role(x, grid_barrier):
        return "grid.sync()"
    if has_role(x, Role.BLOCK_BARRIER):
        assert isinstance(x, ir.Intrinsic)
        return f"{x.name}()"
    return None


def calls_and_barriers(program: ir.Program, barrier: Role | None) -> tuple[dict[str, list[str]], dict[str, ir.Loc]]:
    """Each function's callees, and the functions that contain an intrinsic of role ``barrier``
    (one place each; None: none)."""
    calls: dict[str, list[str]] = {}
    found: dict[str, ir.Loc] = {}
    for fn in program.functions:
        calls[fn.symbol] = []
        for s in ir.statements(fn.body):
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    if barrier is not None and has_role(x, barrier):
                        found.setdefault(fn.symbol, x.loc)
                    elif isinstance(x, ir.Call):
                        calls[fn.symbol].append(x.symbol)
    return calls, found


def functions_reaching(program: ir.Program, mark: Callable[[ir.Expr], str | None]
                       ) -> dict[str, tuple[str, ir.Loc, str]]:
    """The functions that contain an expression ``mark`` names (a barrier, a collective), directly
    or through the functions they call, each with one such place: (file, location, name)."""
    reaches: dict[str, tuple[str, ir.Loc, str]] = {}
    calls: dict[str, list[str]] = {}
    for fn in program.functions:
        calls[fn.symbol] = []
        for s in ir.statements(fn.body):
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    name = mark(x)
                    if name is not None:
                        reaches.setdefault(fn.symbol, (fn.file, x.loc, name))
                    elif isinstance(x, ir.Call):
                        calls[fn.symbol].append(x.symbol)
    changed = True
    while changed:
        changed = False
        for caller, callees in calls.items():
            if caller not in reaches:
                reached = next((reaches[c] for c in callees if c in reaches), None)
                if reached is not None:
                    reaches[caller] = reached
                    changed = True
    return reaches


def reached_from(kernel: ir.Function, program: ir.Program,
                 calls: dict[str, list[str]] | None = None) -> list[ir.Function]:
    """``kernel``, then every function it calls directly or through others, each once, nearest
    first (``calls``: the call graph of ``calls_and_barriers``, when the caller has it)."""
    if calls is None:
        calls, _ = calls_and_barriers(program, None)
    by_symbol = {fn.symbol: fn for fn in program.functions}
    out: list[ir.Function] = []
    seen: set[str] = set()
    order = [kernel.symbol]
    while order:
        symbol = order.pop(0)
        fn = by_symbol.get(symbol)
        if fn is None or symbol in seen:
            continue
        seen.add(symbol)
        out.append(fn)
        order += calls.get(symbol, [])
    return out



@dataclass
class _Facts:
    """What the analysis knows of the program, grown to a fixed point."""

    dependent_params: dict[str, set[str]] = field(default_factory=dict)  # symbol -> params
    returns_dependent: set[str] = field(default_factory=set)  # symbols
    dependent_vars: dict[str, set[str]] = field(default_factory=dict)  # symbol -> locals
    barrier_at: dict[str, tuple[str, ir.Loc, str]] = field(default_factory=dict)  # symbol -> a sync it reaches

    def depends(self, symbol: str, e: ir.Expr) -> bool:
        return is_thread_dependent(e, self.dependent_vars.get(symbol, set()), self.returns_dependent)


def is_thread_dependent(e: ir.Expr, names: set[str], calls: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether ``e`` can differ between the threads of a block: it reads the thread's identity,
    memory, a thread-dependent intrinsic, one of the locals ``names`` or the result of one of
    the functions ``calls``. A block vote's result (``block.sync_or(p)``) is the block's one
    value, whatever ``p`` reads."""
    votes = [x for x in ir.subexpressions(e) if has_role(x, Role.BLOCK_UNIFORM)]
    inside_votes = {id(y) for v in votes for y in ir.subexpressions(v) if y is not v}
    for x in ir.subexpressions(e):
        if id(x) in inside_votes:
            continue
        if isinstance(x, (ir.ThreadIndex1D, ir.ViewLoad)):
            return True
        if isinstance(x, ir.SpecialReg) and x.name.startswith("tid."):
            return True
        if isinstance(x, ir.Intrinsic) and getattr(intrinsic_info(x.name), "thread_dependent", False):
            return True
        if isinstance(x, ir.Var) and x.name in names:
            return True
        if isinstance(x, ir.Call) and x.symbol in calls:
            return True
    return False


def _mark_cooperative(program: ir.Program) -> None:
    """``cooperative`` on each kernel that reaches grid.sync()."""
    calls, syncs = calls_and_barriers(program, Role.GRID_BARRIER)
    reaching = set(syncs)
    changed = True
    while changed:
        changed = False
        for caller, callees in calls.items():
            if caller not in reaching and any(c in reaching for c in callees):
                reaching.add(caller)
                changed = True
    for fn in program.functions:
        if fn.is_kernel:
            fn.cooperative = fn.symbol in reaching


@dataclass(frozen=True)
class BarrierDivergence:
    name: str = "barrier-divergence"

    def apply(self, program: ir.Program) -> ir.Program:
        _mark_cooperative(program)
        functions = {f.symbol: f for f in program.functions}
        facts = _Facts()
        facts.barrier_at = functions_reaching(program, _barrier_name)
        if not any(not f.is_kernel and f.symbol in facts.barrier_at for f in program.functions):
            # no call reaches block.sync(); one written in a kernel the frontend has checked
            return program
        changed = True
        while changed:
            changed = False
            for fn in program.functions:
                changed |= self._propagate(fn, functions, facts)
        names = {f.symbol: f.python_name for f in program.functions}
        for fn in program.functions:
            self._check(fn.body, fn, facts, names, divergent=False)
        return program

    @staticmethod
    def _propagate(fn: ir.Function, functions: dict[str, ir.Function], facts: _Facts) -> bool:
        """One round: fn's dependent locals, whether it returns a dependent value, and which
        parameters of its callees receive dependent arguments. True if anything grew."""
        grew = False
        names = facts.dependent_vars.setdefault(fn.symbol, set())
        before = len(names)
        names |= facts.dependent_params.get(fn.symbol, set())
        for s in ir.statements(fn.body):
            if isinstance(s, ir.Assign) and s.name not in names and facts.depends(fn.symbol, s.value):
                names.add(s.name)
            if isinstance(s, ir.Return) and s.value is not None and fn.symbol not in facts.returns_dependent \
                    and facts.depends(fn.symbol, s.value):
                facts.returns_dependent.add(fn.symbol)
                grew = True
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    callee = functions.get(x.symbol) if isinstance(x, ir.Call) else None
                    if callee is None or not isinstance(x, ir.Call):
                        continue
                    params = facts.dependent_params.setdefault(callee.symbol, set())
                    for param, arg in zip(callee.params, x.args):
                        if param.name not in params and facts.depends(fn.symbol, arg):
                            params.add(param.name)
                            grew = True
        return grew or len(names) != before

    def _check(self, stmts: list[ir.Stmt], fn: ir.Function, facts: _Facts, names: dict[str, str],
               divergent: bool) -> None:
        for s in stmts:
            if divergent:
                for root in ir.statement_roots(s):
                    for x in ir.subexpressions(root):
                        if isinstance(x, ir.Call) and x.symbol != BARRIER and x.symbol in facts.barrier_at:
                            raise self._error(fn, x, facts, names[x.symbol])
                        barrier = _barrier_name(x)
                        if barrier is not None:
                            scope = barrier.partition(".")[0]  # the namespace of the one it names: block or grid
                            raise IRError(f"{barrier} under a condition that differs between threads can "
                                          f"deadlock the {scope}", fn.python_name, fn.file, x.loc,
                                          f"move {barrier} out of the branch or loop so every thread reaches it",
                                          user_error=True)
            if isinstance(s, ir.If):
                inner = divergent or facts.depends(fn.symbol, s.cond)
                self._check(s.then, fn, facts, names, inner)
                self._check(s.orelse, fn, facts, names, inner)
            elif isinstance(s, ir.While):
                inner = divergent or facts.depends(fn.symbol, s.cond)
                self._check(s.body, fn, facts, names, inner)
                self._check(s.step, fn, facts, names, inner)

    @staticmethod
    def _error(fn: ir.Function, call: ir.Call, facts: _Facts, callee: str) -> IRError:
        file, loc, barrier = facts.barrier_at[call.symbol]
        scope = barrier.partition(".")[0]  # the namespace of the one it names: block or grid
        return IRError(
            f"{callee}() reaches {barrier} (at {file}:{loc.line}:{loc.col}), and this call is under a "
            "condition that differs between threads: the threads that skip it never arrive at the "
            f"barrier, and the {scope} can deadlock",
            fn.python_name, fn.file, call.loc,
            f"call {callee}() where every thread of the {scope} calls it, or move {barrier} out of {callee}()",
            user_error=True,
        )
