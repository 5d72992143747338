"""Misuse of ``ox.mbarrier`` that the IR shows, as located errors (the typing already refuses a
phase other than 0 or 1, a non-integer phase and an arrival count outside 1..2**20-1).

Per function, along its statements in order (both branches of an ``if``, a loop's body twice,
as on its second trip), for the barrier arrays ``ox.mbarrier.array(n)`` it declares or takes:

- **used before it is initialized**: a barrier array declared here and used (``arrive``,
  ``wait``, ``tma.load``, ...) before any ``ox.mbarrier.init`` of it, or never initialized;
- **initialized but not published**: ``init`` under a condition that differs between threads
  (``if thread.idx.x == 0:``), then a use under conditions that do not include that one (other
  threads) with no ``block.sync()`` (or ``cluster.sync()``, ``grid.sync()``, a block vote,
  ``warp.sync()``, inline PTX, a wait on another, published barrier, a call that reaches one)
  in between: those threads may see the barrier uninitialized;
- **not fenced for TMA**: a ``tma.load`` counting its bytes on a barrier initialized in this
  function with no ``ox.mbarrier.fence_init()`` (or ``ox.fence.proxy_async()``, inline PTX)
  since: the TMA unit (the asynchronous proxy) may see the barrier before its initialization;
- **bytes never expected**: a ``tma.load`` on a barrier array declared here that no
  ``arrive_expect_tx``/``expect_tx`` of the function names: the phase completes before the box
  lands, or the transaction count goes negative;
- **initialized on every trip of a loop**: an ``init`` inside a loop of the same barrier on
  every trip (an index and conditions the loop does not change, no ``break``/``return`` in the
  loop, more than one trip) with no ``ox.mbarrier.inval`` of the array in the loop:
  initializing a live barrier is undefined.

Each rule names the call it refuses and the line of the call it relates to. A barrier array
passed to a device function is left out of the first two rules from there (the callee may
initialize it). What no rule here catches (a wait on the wrong phase of a ring, arrivals that
never complete a phase) is a hang on the GPU, not a compile error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..intrinsics import Role, has_role
from ..intrinsics.thread import BARRIER
from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..ir.verify import IRError
from ..ir.printer import print_expr
from .divergence import functions_reaching
from .uniformity import ProgramUniformity, Uniformity, program_uniformity

__all__ = ["MbarrierLint"]


Condition = tuple[str, bool]  # a condition's text and the branch taken (True: then)


def _is_sync(x: ir.Expr) -> bool:
    """Whether ``x`` orders what threads did before it for those after it: a block barrier,
    a cluster or grid one, a block vote, warp.sync, or inline PTX (it may be ``bar.sync``)."""
    if isinstance(x, ir.Call):
        return x.symbol == BARRIER
    return has_role(x, Role.ORDERS_THREADS)


def _barrier_args(x: ir.Intrinsic) -> list[tuple[str, ir.Expr]]:
    """The barrier arrays ``x`` names, each with the index that follows it."""
    out = []
    for i, a in enumerate(x.args):
        if isinstance(a, ir.Var) and isinstance(a.ty, ArrayType) and a.ty.barrier:
            index = x.args[i + 1] if i + 1 < len(x.args) else ir.Const(0, a.ty.elem, a.loc)
            out.append((a.name, index))
    return out


def _call_name(x: ir.Intrinsic) -> str:
    return f"ox.{x.name}()"


@dataclass
class _State:
    """What holds at a point of the walk."""

    initialized: set[str] = field(default_factory=set)  # arrays some init named before here
    unpublished: dict[str, tuple[ir.Loc, frozenset[Condition]]] = field(default_factory=dict)
    unfenced: dict[str, ir.Loc] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(set(self.initialized), dict(self.unpublished), dict(self.unfenced))

    def merge(self, other: _State) -> _State:
        return _State(self.initialized | other.initialized, {**other.unpublished, **self.unpublished},
                      {**other.unfenced, **self.unfenced})


@dataclass
class _Loop:
    loop: ir.While
    assigned: frozenset[str]
    invalidated: frozenset[str]
    leaves: bool  # a break or return inside: maybe one trip only
    once: bool  # a range loop of at most one trip


@dataclass
class _If:
    text: str
    taken: bool
    differs: bool  # differs between threads
    names: frozenset[str]  # the locals it reads
    opaque: bool  # reads memory or calls: may change from one trip to the next


Frame = _Loop | _If


@dataclass(frozen=True)
class MbarrierLint:
    name: str = "mbarrier-lint"

    def apply(self, program: ir.Program) -> ir.Program:
        if not any(isinstance(t, ArrayType) and t.barrier for fn in program.functions
                   for t in [*fn.locals.values(), *(p.ty for p in fn.params)]):
            return program
        uniformity = program_uniformity(program)
        syncing = set(functions_reaching(program, lambda x: "sync" if _is_sync(x) else None))
        fencing = set(functions_reaching(
            program, lambda x: "fence" if has_role(x, Role.MBARRIER_INIT_FENCE) else None))
        for fn in program.functions:
            _FunctionLint(fn, uniformity, syncing, fencing).run()
        return program


class _FunctionLint:
    def __init__(self, fn: ir.Function, uniformity: ProgramUniformity, syncing: set[str], fencing: set[str]) -> None:
        self.fn = fn
        self.uniformity = uniformity
        self.syncing = syncing
        self.fencing = fencing
        params = {p.name for p in fn.params}
        self.declared = {name for name, t in fn.locals.items()
                         if isinstance(t, ArrayType) and t.barrier and name not in params}
        self.declared_at: dict[str, ir.Loc] = {}
        self.passed: set[str] = set()  # handed to a device function
        self.expected: set[str] = set()  # named by an arrive_expect_tx / expect_tx
        self.first_init: dict[str, ir.Loc] = {}
        assigned: dict[str, list[ir.Expr]] = {}
        for s in ir.statements(fn.body):
            if isinstance(s, ir.Assign):
                assigned.setdefault(s.name, []).append(s.value)
            if isinstance(s, ir.ArrayDecl):
                self.declared_at.setdefault(s.name, s.loc)
            elif isinstance(s, ir.Assign) and has_role(s.value, Role.MBARRIER_ARRAY):
                self.declared_at.setdefault(s.name, s.loc)
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    if isinstance(x, ir.Call):
                        self.passed |= {a.name for a in x.args if isinstance(a, ir.Var)
                                        and isinstance(a.ty, ArrayType) and a.ty.barrier}
                    elif isinstance(x, ir.Intrinsic) and has_role(x, Role.MBARRIER_EXPECT_TX):
                        self.expected |= {name for name, _ in _barrier_args(x)}
                    elif isinstance(x, ir.Intrinsic) and has_role(x, Role.MBARRIER_INIT):
                        for name, _ in _barrier_args(x):
                            self.first_init.setdefault(name, x.loc)
        # locals assigned once, by their values: `t == 0` with `t = thread.idx.x` is the
        # condition `thread.idx.x == 0` written elsewhere
        self.definitions = {name: print_expr(values[0]) for name, values in assigned.items()
                            if len(values) == 1 and name not in params}

    def run(self) -> None:
        if any(isinstance(t, ArrayType) and t.barrier for t in [*self.fn.locals.values(),
                                                                 *(p.ty for p in self.fn.params)]):
            self.block(self.fn.body, _State(), [])

    def condition_text(self, cond: ir.Expr) -> str:
        """The condition as text that two copies of one source condition share: locals assigned
        once replaced by their values, no check-site numbers."""
        text = print_expr(cond)
        for _ in range(4):
            names = set(re.findall(r"[A-Za-z_$][A-Za-z_0-9$]*", text)) & self.definitions.keys()
            if not names:
                break
            text = re.sub(r"(?<![\w$.%])[A-Za-z_$][A-Za-z_0-9$]*(?![\w$(])",
                          lambda m: self.definitions[m.group(0)] if m.group(0) in names else m.group(0), text)
        return re.sub(r"!\d+", "", text)

    def error(self, loc: ir.Loc, message: str, hint: str) -> IRError:
        return IRError(message, self.fn.python_name, self.fn.file, loc, hint, user_error=True)

    # ---- the walk ---------------------------------------------------------------------------

    def block(self, stmts: list[ir.Stmt], state: _State, frames: list[Frame]) -> _State:
        for s in stmts:
            state = self.statement(s, state, frames)
        return state

    def statement(self, s: ir.Stmt, state: _State, frames: list[Frame]) -> _State:
        for root in ir.statement_roots(s):
            for x in ir.subexpressions(root):
                self.expression(x, state, frames)
        if isinstance(s, ir.If):
            differs = self.uniformity.level(self.fn.symbol, s.cond) > Uniformity.BLOCK
            text = self.condition_text(s.cond)
            names = frozenset(e.name for e in ir.subexpressions(s.cond) if isinstance(e, ir.Var))
            opaque = any(isinstance(e, (ir.ViewLoad, ir.Call, ir.Intrinsic)) for e in ir.subexpressions(s.cond))
            then = self.block(s.then, state.copy(), [*frames, _If(text, True, differs, names, opaque)])
            orelse = self.block(s.orelse, state.copy(), [*frames, _If(text, False, differs, names, opaque)])
            return then.merge(orelse)
        if isinstance(s, ir.While):
            inner = [*frames, self.loop_frame(s), _If(self.condition_text(s.cond), True, False, frozenset(), True)]
            body = s.body + s.step
            # a loop that names an array's init counts it initialized from its first trip on
            ahead = state.copy()
            ahead.initialized |= {name for t in ir.statements(body) for root in ir.statement_roots(t)
                                  for x in ir.subexpressions(root) if isinstance(x, ir.Intrinsic) and has_role(x, Role.MBARRIER_INIT)
                                  for name, _ in _barrier_args(x)}
            once = self.block(body, ahead.copy(), inner)
            twice = self.block(body, ahead.merge(once), inner)
            return state.merge(once).merge(twice)
        if isinstance(s, ir.Block):
            return self.block(s.body, state, frames)
        return state

    @staticmethod
    def loop_frame(s: ir.While) -> _Loop:
        body = list(ir.statements(s.body + s.step))
        assigned = frozenset(t.name for t in body if isinstance(t, ir.Assign))
        invalidated = frozenset(name for t in body for root in ir.statement_roots(t) for x in ir.subexpressions(root)
                                if isinstance(x, ir.Intrinsic) and has_role(x, Role.MBARRIER_INVALIDATE)
                                for name, _ in _barrier_args(x))
        leaves = any(isinstance(t, (ir.Break, ir.Return)) for t in body)
        once = False
        r = s.range
        if r is not None and isinstance(r.start, ir.Const) and isinstance(r.stop, ir.Const) \
                and isinstance(r.step, ir.Const) and int(r.step.value) != 0:
            once = len(range(int(r.start.value), int(r.stop.value), int(r.step.value))) <= 1
        return _Loop(s, assigned, invalidated, leaves, once)

    def expression(self, x: ir.Expr, state: _State, frames: list[Frame]) -> None:
        if isinstance(x, ir.Call):
            if x.symbol in self.syncing:
                state.unpublished.clear()
            if x.symbol in self.fencing:
                state.unfenced.clear()
            for a in x.args:
                if isinstance(a, ir.Var) and isinstance(a.ty, ArrayType) and a.ty.barrier:
                    state.initialized.add(a.name)
                    state.unpublished.pop(a.name, None)
                    state.unfenced.pop(a.name, None)
        if _is_sync(x):
            state.unpublished.clear()
        if not isinstance(x, ir.Intrinsic):
            return
        if has_role(x, Role.MBARRIER_INIT_FENCE):
            state.unfenced.clear()
        if has_role(x, Role.MBARRIER_INIT):
            for name, index in _barrier_args(x):
                self.check_loop_init(x, name, index, frames)
                state.initialized.add(name)
                required = frozenset((f.text, f.taken) for f in frames if isinstance(f, _If) and f.differs)
                if required:
                    state.unpublished[name] = (x.loc, required)
                else:
                    state.unpublished.pop(name, None)
                state.unfenced[name] = x.loc
            return
        uses = _barrier_args(x)
        for name, _ in uses:
            self.check_use(x, name, state, frames)
        if has_role(x, Role.MBARRIER_WAIT) and uses and all(name not in state.unpublished for name, _ in uses):
            # threads that waited on a published barrier see what its arriving threads did before
            state.unpublished.clear()

    # ---- the rules --------------------------------------------------------------------------

    def check_use(self, x: ir.Intrinsic, name: str, state: _State, frames: list[Frame]) -> None:
        call = _call_name(x)
        local = name in self.declared and name not in self.passed
        if local and name not in state.initialized:
            declared = self.declared_at.get(name)
            at = f" (declared at line {declared.line})" if declared else ""
            if name in self.first_init:
                raise self.error(x.loc, f"{call} uses the barrier array {name!r}{at} before it is initialized: "
                                 f"its ox.mbarrier.init() is at line {self.first_init[name].line}, after this call",
                                 "initialize it first: one thread calls ox.mbarrier.init(bar, count), then "
                                 "ox.mbarrier.fence_init() and block.sync(), before any thread uses it")
            raise self.error(x.loc, f"{call} uses the barrier array {name!r}{at}, which is never initialized",
                             f"call ox.mbarrier.init({name}[k], count) for each barrier in one thread, then "
                             "ox.mbarrier.fence_init() and block.sync(), before any thread uses it")
        if has_role(x, Role.ASYNC_BYTES) and local and name not in self.expected:
            declared = self.declared_at.get(name)
            at = f" (declared at line {declared.line})" if declared else ""
            raise self.error(x.loc, f"{call} counts its bytes on the barrier array {name!r}{at}, which no "
                             f"ox.mbarrier.arrive_expect_tx() or expect_tx() in {self.fn.python_name}() names: the "
                             "barrier's phase does not wait for the box to land",
                             f"before the load, in the thread that issues it: ox.mbarrier.arrive_expect_tx({name}[k], "
                             "ox.tma.box_bytes(desc)) (the bytes of every load on that barrier in the phase)")
        if name in state.unpublished:
            init, required = state.unpublished[name]
            taken = {(f.text, f.taken) for f in frames if isinstance(f, _If)}
            if not required <= taken:
                raise self.error(x.loc, f"{call} uses the barrier array {name!r}, which the ox.mbarrier.init() at line "
                                 f"{init.line} initialized in only some threads, with no block.sync() between them: "
                                 "the threads reaching this call may see the barrier uninitialized",
                                 "after the init and ox.mbarrier.fence_init(), call block.sync() where every thread "
                                 "of the block reaches it, before other threads use the barrier")
        if has_role(x, Role.ASYNC_BYTES) and name in state.unfenced:
            init = state.unfenced[name]
            raise self.error(x.loc, f"{call} counts its bytes on the barrier array {name!r}, initialized at line "
                             f"{init.line} with no ox.mbarrier.fence_init() since: the TMA unit may see the "
                             "barrier before its initialization",
                             "call ox.mbarrier.fence_init() after the inits, in the thread that made them, then "
                             "block.sync()")

    def check_loop_init(self, x: ir.Intrinsic, name: str, index: ir.Expr, frames: list[Frame]) -> None:
        reads = {e.name for e in ir.subexpressions(index) if isinstance(e, ir.Var)}
        opaque_index = any(isinstance(e, (ir.ViewLoad, ir.Call)) for e in ir.subexpressions(index))
        for depth, frame in enumerate(frames):
            if not isinstance(frame, _Loop):
                continue
            if frame.leaves or frame.once or opaque_index or reads & frame.assigned or name in frame.invalidated:
                continue
            guards = [f for f in frames[depth + 1:] if isinstance(f, _If)][1:]  # [0]: the loop's own condition
            if any(g.opaque or g.names & frame.assigned for g in guards):
                continue
            raise self.error(x.loc, f"ox.mbarrier.init() of the barrier array {name!r} inside the loop at line "
                             f"{frame.loop.loc.line} initializes the same barrier on every trip, with no "
                             f"ox.mbarrier.inval of it in the loop: initializing a barrier that is in use is "
                             "undefined",
                             "initialize the barriers once before the loop (then ox.mbarrier.fence_init() and "
                             "block.sync()); to reuse one, ox.mbarrier.inval(bar) it once every thread is done with "
                             "it, then initialize it again")
