"""Barrier divergence, across calls: ``block.sync()`` must be reached by every thread of the
block (``grid.sync()`` by every thread of the grid), so neither it nor a call of a function
that reaches it may stand under a condition that differs between threads (the block would
deadlock).

The frontend catches ``block.sync()`` written directly under such a condition; this pass sees
through calls. A value is thread-dependent when it comes from the thread's identity
(``thread.index_*``, ``thread.idx``), from memory (a view read, an atomic, a warp operation),
from a parameter that some call passes a thread-dependent value, or from a call whose callee
returns such a value (``passes/uniformity.py``'s analysis in its operand mode, the one the
frontend asks too). A condition on a thread-dependent value is divergent; a call under a
divergent condition of a function that reaches ``block.sync()`` is an error that names the
call and the sync.

The pass also marks the kernels that reach ``grid.sync()`` (directly or through calls)
``cooperative``: the grid barrier waits for every block, so all must be resident at once; the
manifest carries the mark and the runtime launches them cooperatively.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..intrinsics import Role, has_role
from ..intrinsics.thread import BARRIER  # what block.sync() is in the IR: a call of the LLVM barrier
from ..ir import nodes as ir
from ..ir.verify import IRError
from .uniformity import ProgramUniformity, program_uniformity

__all__ = ["BarrierDivergence", "BARRIER", "calls_and_barriers", "functions_reaching", "reached_from"]


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
                 calls: dict[str, list[str]] | None = None,
                 by_symbol: dict[str, ir.Function] | None = None) -> list[ir.Function]:
    """``kernel``, then every function it calls directly or through others, each once, nearest
    first (``calls``: the call graph of ``calls_and_barriers``, and ``by_symbol``: the program's
    functions by symbol, when the caller has them: a pass asking for every kernel passes both,
    or each kernel would cost a walk over the whole program)."""
    if calls is None:
        calls, _ = calls_and_barriers(program, None)
    if by_symbol is None:
        by_symbol = {fn.symbol: fn for fn in program.functions}
    out: list[ir.Function] = []
    seen: set[str] = set()
    order = deque([kernel.symbol])
    while order:
        symbol = order.popleft()
        fn = by_symbol.get(symbol)
        if fn is None or symbol in seen:
            continue
        seen.add(symbol)
        out.append(fn)
        order += calls.get(symbol, [])
    return out



@dataclass
class _Facts:
    """What the pass knows of the program: the barrier each function reaches, and which values
    differ between threads (passes/uniformity.py in its operand mode)."""

    barrier_at: dict[str, tuple[str, ir.Loc, str]] = field(default_factory=dict)  # symbol -> a sync it reaches
    uniformity: ProgramUniformity = field(default_factory=ProgramUniformity)

    def depends(self, symbol: str, e: ir.Expr) -> bool:
        return self.uniformity.differs(symbol, e)


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
        facts = _Facts()
        facts.barrier_at = functions_reaching(program, _barrier_name)
        if not any(not f.is_kernel and f.symbol in facts.barrier_at for f in program.functions):
            # no call reaches block.sync(); one written in a kernel the frontend has checked
            return program
        facts.uniformity = program_uniformity(program, by_operands=True)
        names = {f.symbol: f.python_name for f in program.functions}
        for fn in program.functions:
            self._check(fn.body, fn, facts, names, divergent=False)
        return program

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
