"""Bounds elimination: the frontend checks every view, tensor-axis and array index (a check
site on the access, or a ``checked_index``); this pass removes the checks that the facts
dominating them prove in range (bounds_prover.py says how), and the error sites they had.

It walks each function's IR in the order the source is evaluated and keeps, per block, the
facts known there: the conditions of ``if`` / ``while`` (negated in ``else``), of ``and`` /
``or`` operands and conditional expressions, ``assert``, early returns (``if i >= n:
return``), ``range`` loops (``ForRange``; a loop variable that could wrap keeps the entry
check ``guard`` only when a proof used its range) and the values of names assigned once.
What a ``Block`` (``with oxide.unsafe():``, one copy of a ``static_range`` body) establishes
ends with it; the pass splices blocks into the enclosing list.

It also marks the casts of a 64-bit product it proves non-negative (``BinOp.widening``) as
``nonneg``, so NVPTX forms one mul.wide.u32 — in functions without bounds checks too, there from
the facts that need no check at run time (no grid limit, no range guard) — and records the grid limits its proofs assumed as
launch preconditions (the error sites the frontend reserved in ``Function.grid_sites``). Error
sites it leaves unused are dropped and the others renumbered in order, so the ids match what
the frontend would have given had it proven the same.

Signed ``//`` and ``%`` whose operands it proves >= 0 are marked (``BinOp.operands_nonneg``,
and ``divisor_positive`` for a divisor >= 1): Python's rounding and C's agree there, so the
lowering divides unsigned, without the sign fix-up and the guards.

Integer ``+``, ``-``, ``*`` that the facts show exact in their type are marked ``no_wrap`` (the
lowering's ``nsw`` / ``nuw``), and an unchecked access's 32-bit index ``rest + c`` through exact
sums and products by constants (``(i - 1) * n + (j + 1)``) becomes ``i64(rest) + c`` where rest is
exact too (``constant_offset``): a stencil's taps share one address, as C's ``int`` indices do
after their sign extension. Both only where the proof costs no run-time check.

**Launch versioning** (``launch_versioning``): a check of a kernel that no fact proves, but that
a launch-invariant fact would — ``len(x) >= N`` for a guard ``i < N`` in scope (N an integer
argument or a view length), ``len(A) >= R·C`` for two guards, or a limit on the block's shape
for an index of ``thread.idx`` (``tile[thread.idx.y + i, thread.idx.x]`` of a 32 x 33 tile, i
< 32 by 8: ``block.dim.x <= 32 and block.dim.y <= 8``; per axis the largest limit that proves
the check, the least of those over the kernel's checks), or ``len(x) >= C`` for an index the
guards keep within constants (``A[(i + 1) * NJ + j]`` under ``0 < i < NI - 1`` with NI and NJ
module constants: the largest extent a view's checks need, one test per view) — is noted; when
the kernel has such
checks, its body after the leading asserts becomes ``if <those facts>: <the body proven under
them> else: <the body as proven without them>`` (``If.launch_versioned``). The test reads only
arguments, lengths and ``block.dim``, in i64 where no value can overflow, so every thread of the
grid takes the same branch; the checked copy keeps every check and error site, so a failing
access is reported as without the test. The kernel's shared arrays are declared once, before
the test: both copies address the same allocation (one runs per launch). The launch-instances
pass, next, makes the two copies two entry points where the launchers can evaluate the test.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Iterator, TypeVar

from oxide.abi.manifest import ErrorSite

from ..intrinsics import intrinsic_info
from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp, LogicOp
from ..ir.types import BOOL, I32, I64, ArrayType, ScalarType, ViewType, as_scalar, int_limits, is_present_name
from .bounds_prover import Poly, Prover, add, atom, const, mul

__all__ = ["BoundsElimination"]

T = TypeVar("T")

Access = ir.ViewLoad | ir.ViewSlice | ir.Intrinsic | ir.Store  # what a bounds check guards


@dataclass(frozen=True)
class BoundsElimination:
    name: str = "bounds-elimination"
    # a kernel whose checks launch-invariant facts would prove runs a copy without them when a
    # test at its entry shows those facts (len(x) >= N for the guard i < N)
    launch_versioning: bool = True

    def apply(self, program: ir.Program) -> ir.Program:
        removed: set[int] = set()
        checked: list[Access] = []  # the accesses whose checks stay
        for fn in program.functions:
            if fn.grid_sites or _has_checks(fn.body):
                proofs = _FunctionProofs(fn, program, removed, versioning=self.launch_versioning)
                proofs.run()
                checked += proofs.checked
            fn.body = _spliced(fn.body)
        if removed:
            _compact_sites(program, removed, checked)
        return program


@dataclass
class _Scope:
    """The facts (polynomials known to be >= 0) that hold in a block."""

    facts: list[Poly] = field(default_factory=list)
    # an assert about optional views (``x is None or x.shape[0] == n``, frontend/optional_views.py):
    # its condition holds where each of those flags is true; and the flags known true here
    conditional: list[tuple[frozenset[str], ir.Expr]] = field(default_factory=list)
    present: frozenset[str] = frozenset()


def _present_flags(cond: ir.Expr, negated: bool) -> set[str]:
    """The optional views' flags (``x.present``) that are true where ``cond`` is (false: negated)."""
    if isinstance(cond, ir.Var) and is_present_name(cond.name):
        return set() if negated else {cond.name}
    if isinstance(cond, ir.Not):
        return _present_flags(cond.operand, not negated)
    if isinstance(cond, ir.BoolOp) and (cond.op == LogicOp.AND) != negated:
        return set().union(*(_present_flags(v, negated) for v in cond.values))
    return set()


def _guarded_by_presence(cond: ir.Expr) -> list[tuple[frozenset[str], ir.Expr]]:
    """``(flags, c)`` for each ``not x.present or ... or c`` that ``cond`` (an ``and`` of them)
    asserts: c holds where those flags are true."""
    if isinstance(cond, ir.BoolOp) and cond.op == LogicOp.AND:
        return [g for v in cond.values for g in _guarded_by_presence(v)]
    if not (isinstance(cond, ir.BoolOp) and cond.op == LogicOp.OR and len(cond.values) >= 2):
        return []
    flags = [v.operand.name for v in cond.values[:-1]
             if isinstance(v, ir.Not) and isinstance(v.operand, ir.Var) and is_present_name(v.operand.name)]
    if len(flags) != len(cond.values) - 1:
        return []
    return [(frozenset(flags), cond.values[-1])]


_MAX_VERSIONED_SIZE = 4096  # IR nodes of the kernel body that may be versioned (it doubles)
# a constant extent a hypothesis asks a length for is below 2**31 - 1 and not one a narrower
# integer type's range gives (i < n for an n of that type): those say nothing about the sizes
_CONSTANT_EXTENT_LIMIT = (1 << 31) - 1
_TYPE_EXTENTS = frozenset((1 << k) - 1 for k in (7, 8, 15, 16))
_EXTENT_KEY = "constant extent"
# a kernel versioned on constant extents alone removes at least two checks: a second entry point
# to compile for one check run once (out[0] = total) is not worth it
_MIN_EXTENT_WEIGHT = 2
_BLOCK_DIM_MAX = {"x": 1024, "y": 1024, "z": 64}  # the hardware's limits on block.dim


def _block_fact(axis: str, limit: int) -> Poly:
    """``block.dim.<axis> <= limit`` as a fact (limit - ntid >= 0)."""
    return add(const(limit), atom(("reg", f"ntid.{axis}")), -1)


class _FunctionProofs:
    def __init__(self, fn: ir.Function, program: ir.Program, removed: set[int],
                 hypotheses: list[Poly] | None = None, versioning: bool = False) -> None:
        self.fn = fn
        self.program = program
        self.removed = removed
        self.param_names = {p.name for p in fn.params}
        self.loop_bindings: set[str] = set()  # variables of the range loops being walked
        self.scopes: list[_Scope] = [_Scope()]
        # a function compiled without bounds checks has no grid sites or range guards reserved
        # (frontend/checks.py): its proofs use only facts that need no check at run time
        self.checked_function = bool(fn.grid_sites)
        self.prover = Prover(self._stable, assume_grid=fn.is_kernel and self.checked_function)
        self.proofs: dict[tuple[object, ...], tuple[bool, tuple[Poly, ...]]] = {}
        self.seen: dict[int, ir.Expr] = {}  # id of an expression walked -> what replaces it
        self.checked: list[Access] = []  # the accesses whose checks stay
        self.guarded_facts: set[int] = set()  # id() of range facts whose use keeps a loop's entry guard
        if hypotheses is not None:  # the fast copy of a versioned kernel: they hold throughout
            self.scopes[0].facts += hypotheses
        # a kernel's checks that no fact proves: a launch-invariant fact that would (len(x) >= N
        # for the guard i < N), bound -> needed; the kernel is then versioned on them
        self.find_hypotheses = (versioning and hypotheses is None and fn.is_kernel and self.checked_function
                                and self._versionable(fn.body))
        self.hypotheses: dict[object, tuple[Poly, Poly, Poly]] = {}  # key -> (fact, bound, needed)
        # the checks the constant-extent hypotheses would remove (a check in a counted loop is
        # check versioning's: one test before the loop)
        self.extent_weight = 0
        # the block shape under which such checks are proven (``tile[thread.idx.y + 8 * i]``):
        # axis -> the largest block.dim along it that proves all of them
        self.block_limits: dict[str, int] = {}
        self.block_memo: dict[object, dict[str, int] | None] = {}  # (index, bound) -> its limits

    def run(self) -> None:
        original = _clone(self.fn.body, {}) if self.find_hypotheses else None
        self.fn.body = self.block(self.fn.body)
        if original is not None and (self.hypotheses or self.block_limits):
            self.version(original)
        for assumed in self.prover.grid_checks():
            site = self.fn.grid_sites[assumed.axis]
            entry = self.program.error_sites[site - 1]
            self.program.error_sites[site - 1] = entry._replace(
                line=assumed.loc.line, col=assumed.loc.col,
                what=f"grid.{assumed.axis} <= {assumed.limit}: the i32 index arithmetic here assumes it "
                     "(compute the index in i64 to lift the limit)")
            axis = "xyz".index(assumed.axis)
            self.fn.preconditions.append(ir.LaunchCondition(site, ["le", ["grid", axis], ["const", assumed.limit]]))
        used = {p.site for p in self.fn.preconditions}
        self.removed.update(site for site in self.fn.grid_sites.values() if site not in used)

    # ---- versioning on launch-invariant facts -----------------------------------------------

    def version(self, original: list[ir.Stmt]) -> None:
        """``fn.body`` becomes ``<prefix> if <hypotheses>: <the body proven under them> else:
        <the body as proven>``: the test reads only parameters and view lengths, so every thread
        of the grid takes the same branch (a barrier in the body stays uniform), and a failing
        access is reported as without it (the checked copy runs). The prefix (the asserts the
        launch-preconditions pass moves to the runtime, shared arrays) stays in front."""
        k = _prefix_length(original)
        region = original[k:]
        if not region:
            return
        loc: ir.Loc = getattr(region[0], "loc", ir.Loc(0, 0))
        tests: list[ir.Expr] = []
        facts: list[Poly] = []
        hypotheses = list(self.hypotheses.values())
        extents = [k for k in self.hypotheses if isinstance(k, tuple) and k[-1] == _EXTENT_KEY]
        if len(extents) == len(hypotheses) and not self.block_limits and self.extent_weight < _MIN_EXTENT_WEIGHT:
            return
        for axis, limit in sorted(self.block_limits.items()):
            dim = atom(("reg", f"ntid.{axis}"))
            hypotheses.append((_block_fact(axis, limit), const(limit), dim))
        for fact, bound, needed in hypotheses:
            left, right = self.launch_value(bound, loc), self.launch_value(needed, loc)
            if left is None or right is None:
                continue
            tests.append(ir.Compare(CompareOp.GE, left, right, I64, BOOL, loc))
            facts.append(fact)
        if not tests:
            return
        fast = _FunctionProofs(self.fn, self.program, set(), hypotheses=facts)
        fast.prover.grid_limit = dict(self.prover.grid_limit)
        fast.prover.assumptions = dict(self.prover.assumptions)
        fast_body = fast.block(original)
        if len(fast.checked) >= len(self.checked):
            return  # the facts proved nothing more: no copy
        self.prover.assumptions = fast.prover.assumptions  # the same limits, or lower ones
        self.prover.active |= fast.prover.active
        self.checked += fast.checked
        kept = {a.check_site for a in fast.checked} | {st.site for st in ir.statements(fast_body) if isinstance(st, ir.Check)}
        self.removed.difference_update(kept)  # a loop guard the fast copy keeps, say
        test = tests[0] if len(tests) == 1 else ir.BoolOp(LogicOp.AND, tests, BOOL, loc)
        # the shared arrays: one allocation, declared before the test, which both copies address
        # (one runs per launch); lowering makes each declaration's pointer in the entry block
        # whatever its place, so declaring it earlier changes nothing else
        fast_region, _ = _without_shared(fast_body[k:])
        slow_region, shared = _without_shared(self.fn.body[k:])
        self.fn.body = self.fn.body[:k] + shared + [ir.If(test, fast_region, slow_region, loc, launch_versioned=True)]

    def _versionable(self, body: list[ir.Stmt]) -> bool:
        """Small enough to copy, and each of its shared arrays declared once under its own name
        (``version`` declares them before the two copies, which share them). A device function's
        shared arrays are its own LLVM function's, one allocation however many calls reach it."""
        size = sum(1 for st in ir.statements(body) for r in ir.statement_roots(st) for _ in ir.subexpressions(r))
        names = [st.name for st in ir.statements(body) if isinstance(st, ir.ArrayDecl) and _is_shared_decl(st)]
        return size <= _MAX_VERSIONED_SIZE and len(names) == len(set(names))

    def launch_value(self, p: Poly, loc: ir.Loc) -> ir.Expr | None:
        """``p`` (over parameters and view lengths) as an i64 expression the kernel can
        evaluate at its entry, or None when some value in it could overflow i64."""
        params = {q.name: q.ty for q in self.fn.params}
        terms: list[ir.Expr] = []
        total = 0
        for mono, c in sorted(p.items()):
            lo, hi = self.prover._unassumed(lambda: self.prover._base_interval(Poly({mono: c})))
            total += max(abs(lo), abs(hi))
            factors: list[ir.Expr] = []
            for a in mono:
                ty = params.get(a[1])
                if a[0] == "reg" and a[1][:-2] == "ntid":  # block.dim: the same in every thread
                    factors.append(ir.Cast(ir.SpecialReg(a[1], I32, loc), I64, loc))
                elif ty is None:
                    return None
                elif a[0] == "var" and isinstance(ty, ScalarType) and ty.kind in ("int", "uint"):
                    var: ir.Expr = ir.Var(a[1], ty, loc)
                    factors.append(var if ty == I64 else ir.Cast(var, I64, loc))
                elif a[0] == "len" and isinstance(ty, ViewType):
                    factors.append(ir.ViewLen(ir.Var(a[1], ty, loc), I64, loc))
                elif a[0] == "shape" and isinstance(ty, ViewType):
                    factors.append(ir.ViewDim(ir.Var(a[1], ty, loc), int(a[2]), "shape", I64, loc))
                else:
                    return None
            term: ir.Expr = ir.Const(c, I64, loc)
            for f in factors:
                term = f if term == ir.Const(1, I64, loc) else ir.BinOp(BinaryOp.MUL, term, f, I64, loc)
            terms.append(term)
        if total > 1 << 62 and not (len(p) == 1 and len(terms) == 1 and p.get(next(iter(p))) == 1
                                    and len(next(iter(p))) == 1):  # every partial sum and product within i64 (or one value)
            return None
        out = terms[0] if terms else ir.Const(0, I64, loc)
        for t in terms[1:]:
            out = ir.BinOp(BinaryOp.ADD, out, t, I64, loc)
        return out

    def _launch_invariant(self, a: tuple[str, ...]) -> bool:
        if a[0] not in ("var", "len", "shape") or a[1] not in self.param_names:
            return False
        return self.fn.assign_counts.get(a[1], 0) == 0  # a parameter the kernel never rebinds

    def find_hypothesis(self, index: Poly, bound: Poly, facts: list[Poly]) -> None:
        """A launch-invariant ``bound >= needed`` under which ``0 <= index < bound`` is
        proven: ``needed`` the bound of a guard in scope (``i < N``: N) or the product of two
        guards' (``r < R and c < C``: R·C)."""
        if not all(self._launch_invariant(a) for m in bound for a in m):
            return
        if self.find_block_limits(index, bound, facts):
            return
        prover = self.prover
        if index and all(self._launch_invariant(a) for m in index for a in m):
            self._invariant_index(index, bound, facts)  # x[t]: t an argument
            return
        limits: list[Poly] = []
        for f in facts:
            invariant = Poly({m: c for m, c in f.items() if all(self._launch_invariant(a) for a in m)})
            if len(invariant) < len(f) and any(invariant.keys() - {()}):
                limits.append(add(invariant, const(1)))  # X - e - 1 >= 0: e < X
        needs = limits + [q for a, b in combinations(limits, 2) if (q := mul(a, b)) is not None]
        for needed in needs:
            key = (_poly_key(bound), _poly_key(needed))
            fact = self.hypotheses[key][0] if key in self.hypotheses else add(bound, needed, -1)
            if prover.trial(lambda: prover.in_range(index, bound, facts + [fact])):
                self.hypotheses.setdefault(key, (fact, bound, needed))
                return
        self._constant_extent(index, bound, facts)

    def _invariant_index(self, index: Poly, bound: Poly, facts: list[Poly]) -> None:
        """``bound >= index + 1`` (and ``index >= 0`` where its type allows less) for an index of
        arguments alone (``fict[t]`` with t a kernel argument): the same in every thread, so a
        test the launcher makes once."""
        prover = self.prover
        needs = [(bound, add(index, const(1)))]
        if prover.trial(lambda: prover._unassumed(lambda: prover._base_interval(index)))[0] < 0:
            needs.append((index, const(0)))
        found = []
        for b, needed in needs:
            key = (_poly_key(b), _poly_key(needed))
            fact = self.hypotheses[key][0] if key in self.hypotheses else add(b, needed, -1)
            found.append((key, (fact, b, needed)))
        if prover.trial(lambda: prover.in_range(index, bound, facts + [h[0] for _, h in found])):
            for key, h in found:
                self.hypotheses.setdefault(key, h)

    def _constant_extent(self, index: Poly, bound: Poly, facts: list[Poly]) -> None:
        """``bound >= hi + 1`` for an index the facts in scope keep within constants ``[0, hi]``
        (``A[(i + 1) * NJ + j]`` under ``0 < i < NI - 1``, ``0 < j < NJ - 1`` with NI and NJ module
        constants): one hypothesis per bound, the largest extent its checks need."""
        prover = self.prover
        hi = prover.trial(lambda: prover._unassumed(lambda: prover.upper_bound(index, facts)))
        # what the atoms' own ranges allow: thread.idx.x < 1024 is the hardware's, no size
        unguarded = prover.trial(lambda: prover._unassumed(lambda: prover.interval(index, [])))[1]
        constant = all(not m for m in index)  # out[0]
        if hi + 1 >= _CONSTANT_EXTENT_LIMIT or hi + 1 in _TYPE_EXTENTS or (not constant and hi >= unguarded):
            return  # an extent the index's type or the hardware gave (i < n with n read from memory)
        key = (_poly_key(bound), _EXTENT_KEY)
        known = self.hypotheses.get(key)
        if known is not None and known[2].get((), 0) > hi:
            self.extent_weight += 1
            return  # a larger extent of the same bound is already needed: its fact proves this
        needed = const(hi + 1)
        fact = add(bound, needed, -1)
        if prover.trial(lambda: prover.in_range(index, bound, facts + [fact])):
            self.hypotheses[key] = (fact, bound, needed)
            self.extent_weight += 1

    def find_block_limits(self, index: Poly, bound: Poly, facts: list[Poly]) -> bool:
        """Block-shape limits (``block.dim.y <= 8``) under which ``0 <= index < bound`` is
        proven, for an index of ``thread.idx``/``block.dim``: the largest along each axis the
        index reads, searched from the axis of the largest stride (``ty * 16 + tx``: y, then x
        with y's limit), the other axes at 1 until searched; kept as the least over the checks."""
        strides: dict[str, int] = {}
        for m, c in index.items():
            for a in m:
                if a[0] == "reg" and a[1][:-2] in ("tid", "ntid"):
                    axis = a[1][-1]
                    strides[axis] = max(strides.get(axis, 0), abs(c))
        if not strides:
            return False
        key = (_poly_key(index), _poly_key(bound))
        if key in self.block_memo:  # the same access in another copy of an unrolled body
            return self.block_memo[key] is not None
        found = self.block_memo[key] = self._block_limits_of(index, bound, facts, strides)
        if found is None:
            return False
        for axis, limit in found.items():
            self.block_limits[axis] = min(self.block_limits.get(axis, limit), limit)
        return True

    def _block_limits_of(self, index: Poly, bound: Poly, facts: list[Poly],
                         strides: dict[str, int]) -> dict[str, int] | None:
        prover = self.prover

        def under(limits: dict[str, int], question: Callable[[list[Poly]], T]) -> T:
            extra = [_block_fact(axis, limit) for axis, limit in sorted(limits.items())]
            return prover.trial(lambda: question(facts + extra))

        def proven_with(limits: dict[str, int]) -> bool:
            return under(limits, lambda more: prover.in_range(index, bound, more))

        def highest(limits: dict[str, int]) -> int:
            return under(limits, lambda more: prover.interval(index, more)[1])

        limits = {axis: 1 for axis in strides}
        if not proven_with(limits):
            return None  # not a matter of the block's shape
        found: dict[str, int] = {}
        for axis in sorted(strides, key=lambda a: (-strides[a], a)):
            lo, hi = 1, _BLOCK_DIM_MAX[axis]
            if proven_with({**limits, axis: hi}):
                limits[axis] = hi
                continue  # this axis does not matter
            top = _constant(bound)
            if top is not None:  # the index's interval grows by a stride a thread: the limit it allows first
                first, second = highest({**limits, axis: 1}), highest({**limits, axis: 2})
                if second > first:
                    guess = min(max((top - 1 - first) // (second - first) + 1, 1), hi - 1)
                    if proven_with({**limits, axis: guess}):
                        lo, hi = guess, guess + 1  # the interval's own limit, taken as the largest
            while hi - lo > 1:  # lo proves it, hi does not
                mid = (lo + hi) // 2
                if proven_with({**limits, axis: mid}):
                    lo = mid
                else:
                    hi = mid
            limits[axis] = found[axis] = lo
        return found

    def _stable(self, name: str) -> bool:
        """Does ``name`` keep one value while it is visible (so facts about it stay true)?"""
        if name in self.loop_bindings:
            return True
        if name in self.param_names:
            return self.fn.assign_counts.get(name, 0) == 0
        return self.fn.assign_counts.get(name, 0) == 1

    # ---- statements -------------------------------------------------------------------------

    def block(self, stmts: list[ir.Stmt], scope: _Scope | None = None) -> list[ir.Stmt]:
        parent = self.scopes[-1]
        self.scopes.append(scope or _Scope(list(parent.facts), list(parent.conditional), parent.present))
        defined_before = set(self.prover.defs)
        guards = {id(s.range.guard) for s in stmts if isinstance(s, ir.While) and s.range and s.range.guard}
        out: list[ir.Stmt] = []
        try:
            for s in stmts:
                if id(s) in guards:
                    out.append(s)  # decided with its loop, which follows
                    continue
                out.extend(self.stmt(s, out))
                if isinstance(s, ir.If) and not s.orelse and s.then and isinstance(s.then[-1], ir.Return):
                    # `if i >= len(x): return` proves `i < len(x)` for the rest of the block
                    self.add_facts(s.cond, negated=True)
        finally:
            self.scopes.pop()
            # a local first assigned in this block may not be assigned on every path that reaches
            # the code after it (a branch not taken, a loop run zero times): forget its value
            for name in set(self.prover.defs) - defined_before:
                self.prover.forget(name)
        return out

    def stmt(self, s: ir.Stmt, before: list[ir.Stmt]) -> list[ir.Stmt]:
        """``s`` with its proven checks gone (a block: its statements); ``before``: the
        statements of its block so far (a range loop's guard stands there)."""
        if isinstance(s, ir.Assign):
            s.value = self.expr(s.value)
            if s.tracked:
                self.define(s.name, s.value)
        elif isinstance(s, ir.Store):
            s.view = self.expr(s.view)
            s.index = self.expr(s.index)
            s.value = self.expr(s.value)
            if s.check_site is not None and self.element_proven(s.view, s.index):
                self.removed.add(s.check_site)
                s.check_site = None
            elif s.check_site is not None:
                self.checked.append(s)
            if s.check_site is None:
                s.index = self.constant_offset(s.index)
        elif isinstance(s, ir.If):
            s.cond = self.expr(s.cond)
            s.then = self.block(s.then, self.scope_where(s.cond, negated=False))
            s.orelse = self.block(s.orelse, self.scope_where(s.cond, negated=True))
        elif isinstance(s, ir.While) and s.range is not None:
            self.range_loop(s, s.range, before)
        elif isinstance(s, ir.While):
            s.cond = self.expr(s.cond)
            s.body = self.block(s.body, self.scope_where(s.cond, negated=False))
        elif isinstance(s, ir.Block):
            body = self.block(s.body, self.scopes[-1] if s.keeps_facts else None)
            if s.unrolled is not None:
                self.prover.forget(s.unrolled)
            return body
        elif isinstance(s, (ir.Return, ir.ExprStmt)):
            if s.value is not None:
                s.value = self.expr(s.value)
        elif isinstance(s, ir.Check):  # an assert
            s.cond = self.expr(s.cond)
            self.add_facts(s.cond, negated=False)
        return [s]

    def range_loop(self, s: ir.While, r: ir.ForRange, before: list[ir.Stmt]) -> None:
        self.prover.forget(r.var)
        facts: list[Poly] = []
        guarded = False
        if not r.rebinds:
            self.loop_bindings.add(r.var)
            facts, guarded = self.range_facts(r)
            if guarded and r.guard is None:  # no entry check to keep: its facts are not known
                facts, guarded = [], False
            if guarded:
                self.guarded_facts.update(map(id, facts))
        try:
            parent = self.scopes[-1]
            s.body = self.block(s.body, _Scope(parent.facts + facts, list(parent.conditional), parent.present))
        finally:
            self.loop_bindings.discard(r.var)
            self.prover.forget(r.var)
        if r.guard is None:
            assert not guarded, "the frontend reserves a guard wherever the range may need one"
            return
        if guarded and any(id(f) in self.prover.used for f in facts):
            return  # a proof in the body relied on the loop variable's range: v + step must not wrap
        before[:] = [x for x in before if x is not r.guard]
        self.removed.add(r.guard.site)
        r.guard = None

    # ---- expressions ------------------------------------------------------------------------

    def expr(self, e: ir.Expr) -> ir.Expr:
        """``e`` with its proven checks gone, walked once in evaluation order (a value used
        twice, as ``abs(x)``'s, is one expression)."""
        if isinstance(e, _LEAVES):
            return e  # nothing to check or rewrite below a name or a constant
        if id(e) in self.seen:
            return self.seen[id(e)]
        self.seen[id(e)] = e
        result = self._expr(e)
        self.seen[id(e)] = result
        if isinstance(result, (ir.ViewLoad, ir.ViewSlice, ir.Intrinsic)) and result.check_site is not None:
            self.checked.append(result)
        return result

    def _expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.BoolOp):
            # `i < len(x) and x[i] > 0`: later operands run only where the earlier ones allow
            negated = e.op == LogicOp.OR
            parent = self.scopes[-1]
            scope = _Scope(list(parent.facts), list(parent.conditional), parent.present)
            values: list[ir.Expr] = []
            for v in e.values:
                value = self.expr_where(v, scope)
                values.append(value)
                self.scopes.append(scope)
                try:
                    scope = self.scope_where(value, negated)
                finally:
                    self.scopes.pop()
            e.values = values
            return e
        if isinstance(e, ir.Select) and e.scoped:
            e.cond = self.expr(e.cond)
            e.if_true = self.expr_where(e.if_true, self.scope_where(e.cond, negated=False))
            e.if_false = self.expr_where(e.if_false, self.scope_where(e.cond, negated=True))
            return e
        if isinstance(e, ir.Intrinsic) and e.name == "checked_index":
            e.args = [self.expr(a) for a in e.args]
            index, size = e.args
            bound = self.axis_bound(size)
            if e.check_site is not None and bound is not None and self.proves(index, bound):
                self.removed.add(e.check_site)
                return index
            return e
        if isinstance(e, ir.Intrinsic) and e.check_site is not None:
            # an access through an intrinsic: its check is proven after the view and the index,
            # before the other operands (as the intrinsic's typing asks)
            info = intrinsic_info(e.name)
            lanes = info.vector_lanes if info is not None else None  # x.load4(k): the view methods of intrinsics/vector.py
            vector = lanes is not None
            lead = 3 if vector else 2
            e.args[:lead] = [self.expr(a) for a in e.args[:lead]]
            view, index = e.args[0], e.args[1]
            if lanes is not None:
                proven = self.proves_vector(index, lanes, view)
            else:
                proven = self.element_proven(view, index)
            if proven:
                self.removed.add(e.check_site)
                e.check_site = None
            e.args[lead:] = [self.expr(a) for a in e.args[lead:]]
            return e
        _set_children(e, [self.expr(c) for c in ir.children(e)])
        if isinstance(e, ir.ViewLoad) and e.check_site is not None and self.element_proven(e.view, e.index):
            self.removed.add(e.check_site)
            e.check_site = None
        elif isinstance(e, ir.ViewSlice) and e.check_site is not None and self.slice_proven(e):
            self.removed.add(e.check_site)
            e.check_site = None
        elif isinstance(e, ir.BinOp) and e.widening:
            self.mark_nonneg_widening(e.left, e.right)
        elif _signed_division(e):
            self.mark_nonneg_division(e)  # type: ignore[arg-type]
        if isinstance(e, ir.ViewLoad) and e.check_site is None:
            e.index = self.constant_offset(e.index)
        if _wrapping(e):
            self.mark_no_wrap(e)  # type: ignore[arg-type]
        return e

    def expr_where(self, e: ir.Expr, scope: _Scope) -> ir.Expr:
        """``e`` walked under the facts of ``scope``."""
        self.scopes.append(scope)
        try:
            return self.expr(e)
        finally:
            self.scopes.pop()

    # ---- facts --------------------------------------------------------------------------------

    def define(self, name: str, value: ir.Expr) -> None:
        self.prover.define(name, value if self._stable(name) else None, self.scopes[-1].facts)

    def add_facts(self, cond: ir.Expr, negated: bool) -> None:
        scope = self.scopes[-1]
        if not negated:
            scope.conditional += _guarded_by_presence(cond)
        scope.facts += self.prover.facts_of(cond, negated, scope.facts)
        self._facts_where_present(scope, _present_flags(cond, negated))

    def scope_where(self, cond: ir.Expr, negated: bool) -> _Scope:
        """The current facts plus those of ``cond`` (or of its negation)."""
        parent = self.scopes[-1]
        facts = parent.facts
        scope = _Scope(facts + self.prover.facts_of(cond, negated, facts), list(parent.conditional), parent.present)
        self._facts_where_present(scope, _present_flags(cond, negated))
        return scope

    def _facts_where_present(self, scope: _Scope, flags: set[str]) -> None:
        """``flags`` known true in ``scope``: the asserts about those optional views hold there."""
        if not flags or flags <= scope.present:
            return
        scope.present = scope.present | flags
        for needs, cond in scope.conditional:
            if needs <= scope.present and not needs <= scope.present - flags:  # newly holds
                scope.facts = scope.facts + self.prover.facts_of(cond, False, scope.facts)

    def range_facts(self, r: ir.ForRange) -> tuple[list[Poly], bool]:
        """Facts on the variable of ``for v in range(start, stop, step)`` inside the body, and
        whether they need a check at loop entry that ``v + step`` cannot wrap around."""
        facts = self.scopes[-1].facts
        p = self.prover
        lo, hi, st = p.poly(r.start, facts), p.poly(r.stop, facts), p.poly(r.step, facts)
        if lo is None or hi is None or st is None:
            return [], False
        v = p.poly(ir.Var(r.var, r.ty, r.start.loc), facts)
        assert v is not None
        limits = int_limits(r.ty)
        positive = p.nonneg(add(st, const(-1)), facts)
        if positive:  # step ≥ 1: start ≤ v < stop
            body = [add(v, lo, -1), add(add(hi, v, -1), const(-1))]
            start, stop, step = (_constant(q) for q in (lo, hi, st))
            if start is not None and stop is not None and step is not None and stop > start:
                # v ≤ the last value it takes (range(0, 32, 8): 24)
                body.append(add(const(start + (stop - start - 1) // step * step), v, -1))
            # v + step must not wrap: stop - 1 + step ≤ max
            no_wrap = add(add(const(limits[1] + 1), hi, -1), st, -1)
        elif p.nonneg(add(const(-1), st, -1), facts):  # step ≤ -1: stop < v ≤ start
            body = [add(lo, v, -1), add(add(v, hi, -1), const(-1))]
            no_wrap = add(add(hi, const(1 - limits[0])), st)
        else:
            return [], False
        if p.nonneg(no_wrap, facts):
            return body, False
        if r.ty.bits > 32 or not positive:
            return [], False  # no wider type to check in (or no guard for negative steps): keep the checks
        return body + [no_wrap], True  # using any of them keeps the entry check (the guard)

    # ---- proofs ---------------------------------------------------------------------------------

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
            if not self.proofs[key][0] and self.find_hypotheses:
                self.find_hypothesis(p, bound, facts)
        return self.proofs[key][0]

    def proves_vector(self, index: ir.Expr, width: int, view: ir.Expr) -> bool:
        """Elements width·index … width·index + width - 1 all in range?"""
        facts = self.scopes[-1].facts
        bound = self.view_bound(view)
        p = self.prover.poly(index, facts)
        if p is None or bound is None:
            return False
        first = mul(p, const(width)) or Poly()
        return self.prover.nonneg(first, facts) and self.prover.in_range(add(first, const(width - 1)), bound, facts)

    def element_proven(self, view: ir.Expr, index: ir.Expr) -> bool:
        bound = self.view_bound(view)
        if bound is None and isinstance(view.ty, ArrayType) and view.ty.size is not None:
            bound = const(view.ty.size)
        return bound is not None and self.proves(index, bound)

    def slice_proven(self, e: ir.ViewSlice) -> bool:
        """``0 <= start <= stop <= len(view)``?"""
        bound = self.view_bound(e.view)
        if bound is None:
            return False
        past_end = add(bound, const(1))
        if e.stop is None:
            return self.proves(e.start, past_end)
        stop = self.prover.poly(e.stop, self.scopes[-1].facts)
        return stop is not None and self.proves(e.stop, past_end) and self.proves(e.start, add(stop, const(1)))

    def view_bound(self, view: ir.Expr, axis: int | None = None) -> Poly | None:
        """The length of a view (a tensor parameter's shape along ``axis``) as a polynomial,
        when the prover may use it: ``len(name)`` for a parameter or a local that keeps one
        view, a constant for an array of known shape."""
        ty = view.ty
        if isinstance(view, ir.Var) and isinstance(ty, ViewType) and view.name in self.param_names:
            if axis is None or not ty.is_tensor:
                return atom(("len", view.name))
            return atom(("shape", view.name, str(axis)))
        if isinstance(ty, ArrayType) and ty.size is not None:
            return const(ty.size)
        if not isinstance(view, ir.Var) or not isinstance(ty, (ViewType, ArrayType)) or (
                isinstance(ty, ArrayType) and not ty.runtime_length):
            return None
        if view.name not in self.param_names and not self._stable(view.name):
            return None  # a local rebound to other views: its length changes
        return atom(("len", view.name))

    def axis_bound(self, size: ir.Expr) -> Poly | None:
        """The bound of a ``checked_index``: a tensor's shape along an axis, an array's size."""
        if isinstance(size, ir.ViewDim):
            return self.view_bound(size.view, size.axis)
        if isinstance(size, ir.Const) and isinstance(size.value, int):
            return const(size.value)
        return None

    def mark_nonneg_widening(self, *sides: ir.Expr) -> None:
        """``i64(r) * cols`` with r, cols ≥ 0 proven (or an unsigned r, ``i64(u32(r))``): both
        widen with zext, so the product is one 32×32→64 multiply (mul.wide.u32) instead of a
        64-bit one (sext and zext do not pair)."""
        if not all(isinstance(s, ir.Cast) or (isinstance(s, ir.Const) and int(s.value) >= 0) for s in sides):
            return
        casts = [s for s in sides if isinstance(s, ir.Cast)]
        signed = []
        for c in casts:
            src = as_scalar(c.operand.ty)
            if src is not None and src.kind == "uint" and src.bits <= 32:
                continue  # widens with zext already: u32(r) says r >= 0 where no fact can
            if src is None or src.kind != "int" or src.bits > 32:
                return
            p = self.prover.poly(c.operand, self.scopes[-1].facts)
            if p is None or not self.prover.proves_nonneg(p, self.scopes[-1].facts):
                return
            signed.append(c)
        for c in signed:
            c.nonneg = True

    def mark_no_wrap(self, e: ir.BinOp) -> None:
        """``a + b``, ``a - b``, ``a * b`` of integers whose value the facts here keep within its
        type (the prover forms its polynomial only then): ``no_wrap``, which the lowering makes
        ``nsw`` / ``nuw``. Only where the proof costs nothing at run time: no grid limit beyond
        those already checked at launch, no loop entry guard that would otherwise go."""
        e.no_wrap = self.exact_here(e)

    def exact_here(self, *values: ir.Expr) -> bool:
        """Does the machine arithmetic of each of ``values`` give its exact value under the facts
        here, with a proof that costs nothing at run time (no grid limit beyond those already
        checked at launch, no loop entry guard that would otherwise go)? Records nothing."""
        prover = self.prover
        facts = self.scopes[-1].facts
        used, active = set(prover.used), set(prover.active)

        def exact() -> bool:
            polys = [prover.poly(v, facts) for v in values]
            return (all(p is not None and p.assumes <= active for p in polys)
                    and not (prover.used - used) & self.guarded_facts)

        return prover.trial(exact)

    def constant_offset(self, index: ir.Expr) -> ir.Expr:
        """An unchecked access's index of 32 bits or fewer, ``(i - 1) * n + (j + 1)``, as
        ``i64(i * n + j) + (1 - n)`` where ``i * n + j`` is exact too: its constant apart and in
        i64, as C's ``int`` index is after its sign extension (signed overflow being undefined
        there), so the accesses of a stencil share one address and differ by immediate offsets.
        The index as it is where the rest could wrap, or it has no constant term."""
        ty = as_scalar(index.ty)
        if ty is None or ty.kind not in ("int", "uint") or ty.bits >= 64 or not _wrapping(index):
            return index
        rest, offset = _constant_terms(index, ty)
        if rest is None or offset == 0:
            return index
        if not self.exact_here(index, rest):  # the index as computed is its value, and so is the rest
            return index
        for x in ir.subexpressions(rest):
            if _wrapping(x):
                x.no_wrap = True  # type: ignore[union-attr]  # a part of an exact sum is exact
        loc = index.loc  # type: ignore[attr-defined]
        return ir.BinOp(BinaryOp.ADD, ir.Cast(rest, I64, loc), ir.Const(offset, I64, loc), I64, loc, no_wrap=True)

    def mark_nonneg_division(self, e: ir.BinOp) -> None:
        """``a // b``, ``a % b`` of signed integers with a, b ≥ 0 proven: Python's floor and C's
        truncation agree, so it lowers to one unsigned divide (no sign fix-up, no ``MIN // -1``
        guard); with b ≥ 1 proven, without the ``x // 0`` guard either."""
        facts = self.scopes[-1].facts
        prover = self.prover
        used, active = set(prover.used), set(prover.active)

        def costs_nothing(proof: bool) -> bool:
            """Did the proof hold without a new run-time check (a loop's entry guard, a grid limit)?"""
            if proof and not (prover.used - used) & self.guarded_facts and prover.active <= active:
                return True
            prover.used, prover.active = set(used), set(active)
            return False

        left, right = prover.poly(e.left, facts), prover.poly(e.right, facts)
        if not costs_nothing(left is not None and right is not None
                             and not left.assumes - active and not right.assumes - active):
            return
        assert left is not None and right is not None
        if costs_nothing(prover.proves_nonneg(left, facts) and prover.proves_nonneg(right, facts)):
            e.operands_nonneg = True
            e.divisor_positive = costs_nothing(prover.proves_nonneg(add(right, const(-1)), facts))



def _clone(x: T, memo: dict[int, object]) -> T:
    """A deep copy of IR ``x`` (an expression used twice stays one), without copying what
    cannot change: frozen dataclasses (types, locations), strings, numbers. copy.deepcopy's
    generic walk took most of the pass's time on kernels with large unrolled bodies."""
    cls = type(x)
    leaf = _LEAF_TYPES.get(cls)
    if leaf is None:
        params = getattr(cls, "__dataclass_params__", None)
        leaf = _LEAF_TYPES[cls] = cls not in (list, tuple, dict, set) and (params is None or params.frozen)
    if leaf:
        return x
    if cls is list:
        return [_clone(v, memo) for v in x]  # type: ignore[attr-defined, return-value]
    if cls is tuple:
        return tuple(_clone(v, memo) for v in x)  # type: ignore[attr-defined, return-value]
    if cls is dict:
        return {k: _clone(v, memo) for k, v in x.items()}  # type: ignore[attr-defined, return-value]
    if cls is set:
        return set(x)  # type: ignore[call-overload, no-any-return]
    if id(x) in memo:
        return memo[id(x)]  # type: ignore[return-value]
    new = object.__new__(cls)
    memo[id(x)] = new
    fields = new.__dict__
    for name, value in x.__dict__.items():
        fields[name] = _clone(value, memo)
    return new


_LEAF_TYPES: dict[type, bool] = {}  # a type _clone need not copy (immutable): True


def _constant(p: Poly) -> int | None:
    """The value of a constant polynomial, else None."""
    return None if set(p) - {()} else p.get((), 0)


def _poly_key(p: Poly) -> object:
    return tuple(sorted(p.items()))


def _prefix_length(body: list[ir.Stmt]) -> int:
    """The statements a versioned kernel keeps in front: up to its last hoistable assert (the
    launch preconditions, which must stay leading)."""
    return max((n + 1 for n, st in enumerate(body) if isinstance(st, ir.Check) and st.hoistable), default=0)


def _is_shared_decl(st: ir.Stmt) -> bool:
    """Does ``st`` declare a shared array (one allocation per declaration)?"""
    return isinstance(st, ir.ArrayDecl) and isinstance(st.ty, ArrayType) and st.ty.space == "shared"


def _without_shared(stmts: list[ir.Stmt]) -> tuple[list[ir.Stmt], list[ir.Stmt]]:
    """``stmts`` (and the bodies nested in them) without their shared-array declarations, and
    those declarations in source order."""
    decls: list[ir.Stmt] = []

    def strip(body: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for st in body:
            if _is_shared_decl(st):
                decls.append(st)
                continue
            if isinstance(st, ir.If):
                st.then, st.orelse = strip(st.then), strip(st.orelse)
            elif isinstance(st, ir.While):
                st.body, st.step = strip(st.body), strip(st.step)
            elif isinstance(st, ir.Block):
                st.body = strip(st.body)
            out.append(st)
        return out

    return strip(stmts), decls



_LEAVES = (ir.Const, ir.Var, ir.ThreadIndex1D, ir.SpecialReg)


def _set_children(e: ir.Expr, kids: list[ir.Expr]) -> None:
    """The inverse of ``ir.children``: ``e`` with these sub-expressions."""
    if isinstance(e, (ir.BinOp, ir.Compare)):
        e.left, e.right = kids
    elif isinstance(e, (ir.Not, ir.Neg, ir.Cast)):
        (e.operand,) = kids
    elif isinstance(e, ir.Select):
        e.cond, e.if_true, e.if_false = kids
    elif isinstance(e, (ir.BoolOp, ir.MakeTuple)):
        e.values = kids
    elif isinstance(e, (ir.Call, ir.Intrinsic)):
        e.args = kids
    elif isinstance(e, (ir.ViewLen, ir.ViewDim)):
        (e.view,) = kids
    elif isinstance(e, ir.ViewLoad):
        e.view, e.index = kids
    elif isinstance(e, ir.ViewSlice):
        e.view, e.start = kids[0], kids[1]
        if e.stop is not None:
            e.stop = kids[2]
    elif isinstance(e, ir.MakeVector):
        e.values = kids
    elif isinstance(e, (ir.VectorGet, ir.TupleGet)):
        (e.value,) = kids
    elif isinstance(e, (ir.VectorSet, ir.TupleSet)):
        e.value, e.element = kids
    else:  # a node without sub-expressions
        assert not kids, f"bounds elimination cannot rebuild {type(e).__name__}"


# ---- walking the whole IR -----------------------------------------------------------------------

def _expressions(stmts: list[ir.Stmt]) -> Iterator[ir.Expr]:
    todo = [e for s in ir.statements(stmts) for e in ir.statement_roots(s)]
    while todo:
        e = todo.pop()
        yield e
        todo.extend(ir.children(e))


def _has_checks(stmts: list[ir.Stmt]) -> bool:
    """Does the function have anything for the pass to prove?"""
    if any(isinstance(s, ir.Store) and s.check_site is not None
           or isinstance(s, ir.While) and s.range is not None and s.range.guard is not None
           for s in ir.statements(stmts)):
        return True
    return any(isinstance(e, (ir.ViewLoad, ir.ViewSlice, ir.Intrinsic)) and e.check_site is not None
               or isinstance(e, ir.BinOp) and e.widening or _signed_division(e) for e in _expressions(stmts))


def _constant_terms(e: ir.Expr, ty: ScalarType) -> tuple[ir.Expr | None, int]:
    """``e`` as (rest, c) with e = rest + c in integers, through the sums, differences and
    products by a constant of type ``ty`` inside it; rest is a new expression (None: e is
    constant). Machine arithmetic agrees only where e and rest are exact: the caller proves it."""
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return None, e.value
    if not (_wrapping(e) and e.ty == ty):
        return e, 0
    assert isinstance(e, ir.BinOp)
    (left, a), (right, b) = _constant_terms(e.left, ty), _constant_terms(e.right, ty)
    if e.op == BinaryOp.MUL:
        if left is None and right is not None:
            return ir.BinOp(BinaryOp.MUL, right, ir.Const(a, e.ty, e.loc), e.ty, e.loc), a * b
        if right is None and left is not None:
            return ir.BinOp(BinaryOp.MUL, left, ir.Const(b, e.ty, e.loc), e.ty, e.loc), a * b
        return e, 0
    sign = 1 if e.op == BinaryOp.ADD else -1
    if right is None:
        return left, a + sign * b
    if left is None:
        if sign < 0:
            return e, 0  # c - x: no rest without a negation
        return right, a + b
    return ir.BinOp(e.op, left, right, e.ty, e.loc), a + sign * b


def _wrapping(e: ir.Expr) -> bool:
    """``+``, ``-`` or ``*`` of integer scalars: machine arithmetic that wraps."""
    return (isinstance(e, ir.BinOp) and e.op in _WRAPPING_OPS and isinstance(e.ty, ScalarType)
            and e.ty.kind in ("int", "uint"))


_WRAPPING_OPS = frozenset({BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL})


def _signed_division(e: ir.Expr) -> bool:
    """``//`` or ``%`` of signed integers."""
    return isinstance(e, ir.BinOp) and e.op in ("//", "%") and e.ty.kind == "int"


def _spliced(stmts: list[ir.Stmt]) -> list[ir.Stmt]:
    """``stmts`` with every block's statements in its place."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Block):
            out.extend(_spliced(s.body))
            continue
        if isinstance(s, ir.If):
            s.then, s.orelse = _spliced(s.then), _spliced(s.orelse)
        elif isinstance(s, ir.While):
            s.body, s.step = _spliced(s.body), _spliced(s.step)
        out.append(s)
    return out


def _compact_sites(program: ir.Program, removed: set[int], checked: list[Access]) -> None:
    """Drops the error sites in ``removed`` and renumbers the others in order, everywhere: the
    checks that stay (``checked``: every access with a site, found by the walk), asserts and
    launch preconditions."""
    renumbered: dict[int, int] = {}
    kept: list[ErrorSite] = []
    for site in program.error_sites:
        if site.id in removed:
            continue
        renumbered[site.id] = len(kept) + 1
        kept.append(site._replace(id=len(kept) + 1))
    program.error_sites[:] = kept  # the frontend's result holds this list too
    for access in checked:
        assert access.check_site is not None
        access.check_site = renumbered[access.check_site]
    for fn in program.functions:
        fn.preconditions = [p._replace(site=renumbered[p.site]) for p in fn.preconditions]
        for s in ir.statements(fn.body):
            if isinstance(s, ir.Check):
                s.site = renumbered[s.site]
