"""The bounds prover: proves view, tensor-axis and array indices in range from the conditions
that dominate them, so the bounds-elimination pass (bounds_elimination.py) can drop their checks.

Integer values are written as polynomials over *atoms* — parameters and locals that never change
once set, ``len(x)``, ``x.shape[k]``, the special registers, ``warp.lane()`` — with exact integer
coefficients. A local assigned once is replaced by the polynomial of its value, so
``i = i64(r) * cols + c`` and the guard ``r < rows`` speak about the same atoms. A polynomial is
only formed when the machine arithmetic that computes it provably does not wrap (intervals of
the atoms, refined by the facts in scope); otherwise the value stays an opaque atom. A product
of atoms is refined by the facts in which it is a term as well: ``i < 4095`` with
``i = block.idx.y * block.dim.y + thread.idx.y`` bounds ``ctaid.y·ntid.y`` by 4094, so
``(i + 1) * 4096`` is exact in i32 where the atoms' ranges alone would allow 2^36.

Facts are polynomials known to be ≥ 0: guards of ``if``/``elif``/``while``, conditional
expressions, ``and`` chains, ``assert``, early returns, ``range`` loops, hardware limits
(``thread.idx.x < block.dim.x`` …) and floor divisions (``4 * (n // 4) <= n``). A goal ``g ≥ 0``
is proven when the interval of ``g``, of ``g - k·f`` or of ``g - k₁·f₁ - k₂·f₂`` for facts ``f``
is non-negative. A row-major index ``A·u + v`` is in range of ``len(x)`` when ``0 ≤ v < A``,
``0 ≤ u < T`` and ``len(x) ≥ A·T`` is a fact (e.g. ``assert len(x) >= i64(rows) * cols``).

In a kernel, i32 index arithmetic on ``block.idx`` (e.g. ``block.idx.x * 32 + thread.idx.x``)
would wrap only on grids far larger than any 2-D problem needs; rather than give up, the prover
assumes a grid limit that makes it exact, and the runtime checks that limit once at launch
(a launch precondition the pass records) (a failed launch is reported as a ``KernelError`` naming the limit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from ..intrinsics import intrinsic_info
from ..ir import nodes as ir
from ..ir.types import THREAD_INDEX_DIM, ScalarType, ThreadIndexType, Type, ViewType, as_scalar

__all__ = ["Poly", "Prover", "GridAssumption", "add", "atom", "const", "mul"]

Atom = tuple[str, ...]
Mono = tuple[Atom, ...]  # sorted atoms; () is the constant term


class Poly(dict[Mono, int]):
    """monomial -> coefficient; ``assumes``: grid axes whose assumed limit the value relies on."""

    __slots__ = ("assumes",)

    def __init__(self, items: dict[Mono, int] | None = None, assumes: frozenset[str] = frozenset()) -> None:
        super().__init__(items or {})
        self.assumes = assumes

T = TypeVar("T")
MAX_DEGREE = 4
GRID_AXES = ir.GRID_AXES
_REG_RANGES: dict[str, tuple[int, int]] = {
    "tid.x": (0, 1023), "tid.y": (0, 1023), "tid.z": (0, 63),
    "ntid.x": (1, 1024), "ntid.y": (1, 1024), "ntid.z": (1, 64),
    "ctaid.x": (0, 2**31 - 2), "ctaid.y": (0, 65534), "ctaid.z": (0, 65534),
    "nctaid.x": (1, 2**31 - 1), "nctaid.y": (1, 65535), "nctaid.z": (1, 65535),
}
_LENGTH_RANGE = (0, 2**62)
_SMALLEST_GRID_LIMIT = 1 << 16


def const(value: int) -> Poly:
    return Poly({(): value} if value else {})


def atom(a: Atom) -> Poly:
    return Poly({(a,): 1})


def add(p: Poly, q: Poly, k: int = 1) -> Poly:
    """p + k·q"""
    out = Poly(p, p.assumes | q.assumes)
    for m, c in q.items():
        v = out.get(m, 0) + k * c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def mul(p: Poly, q: Poly) -> Poly | None:
    out = Poly(None, p.assumes | q.assumes)
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2))
            if len(m) > MAX_DEGREE:
                return None
            v = out.get(m, 0) + c1 * c2
            if v:
                out[m] = v
            else:
                out.pop(m, None)
    return out


def _type_range(ty: Type) -> tuple[int, int] | None:
    if isinstance(ty, ThreadIndexType):
        return (0, 2**62)
    if not isinstance(ty, ScalarType):
        return None
    if ty.kind == "int":
        return (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1)
    if ty.kind == "uint":
        return (0, (1 << ty.bits) - 1)
    if ty.kind == "bool":
        return (0, 1)
    return None


def _mul_range(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


@dataclass
class GridAssumption:
    """The kernel's index arithmetic is exact only when ``grid.<axis> <= limit``."""

    axis: str
    limit: int
    loc: ir.Loc


class Prover:
    """Linear-arithmetic facts of one function; the pass owns the scopes (lists of facts)."""

    def __init__(self, stable: Callable[[str], bool], assume_grid: bool) -> None:
        self.stable = stable  # a name whose value cannot change while it is visible
        self.assume_grid = assume_grid
        self.defs: dict[str, Poly | None] = {}  # stable local -> polynomial of its value
        self.grid_limit: dict[str, int] = {}
        self.assumptions: dict[str, GridAssumption] = {}
        self.global_facts: list[Poly] = []
        self.conditional_facts: list[tuple[Poly, Poly]] = []  # (fact, holds when this is ≥ 0)
        self.divisions: dict[Atom, tuple[Poly, Poly]] = {}  # the atom of num // den -> (num, den), den not constant
        self._holding_memo: dict[tuple[int, ...], tuple[list[Poly], tuple[Poly, ...]]] = {}
        self._atom_types: dict[Atom, tuple[int, int]] = {}
        self.used: set[int] = set()  # id() of facts that narrowed a range or closed a proof
        self.active: set[str] = set()  # grid axes whose assumed limit a proof relied on
        self._touched: set[str] = set()  # axes relied on by the proof under way
        self._range_memo: dict[tuple[object, ...], tuple[dict[Atom, tuple[int, int]], tuple[Poly, ...]]] = {}
        self._range_uses: dict[tuple[int, Atom], tuple[Poly, ...]] = {}  # (memo dict, atom) -> facts used
        # (memo dict, monomial of several atoms) -> its range narrowed by facts, and those facts
        self._monomial_ranges: dict[tuple[int, Mono], tuple[tuple[int, int], tuple[Poly, ...]]] = {}
        self._use_log: list[Poly] = []
        for axis in GRID_AXES:  # thread.idx < block.dim, block.idx < grid.dim
            for inner, outer in (("tid", "ntid"), ("ctaid", "nctaid")):
                self.global_facts.append(add(add(atom(("reg", f"{outer}.{axis}")), atom(("reg", f"{inner}.{axis}")), -1), const(-1)))

    # ---- values as polynomials ------------------------------------------------------------

    def define(self, name: str, value: ir.Expr | None, facts: list[Poly]) -> None:
        """``name = value`` was translated; None forgets what was known of it."""
        self.defs[name] = self.poly(value, facts) if value is not None else None
        self._forget_uses(name)

    def forget(self, name: str) -> None:
        """``name`` is rebound (a loop variable after its loop): forget values built on it."""
        self.defs.pop(name, None)
        self._forget_uses(name)

    def _forget_uses(self, name: str) -> None:
        """Values computed from the old binding of ``name`` no longer hold."""
        stale = ("var", name)
        for other, p in list(self.defs.items()):
            if other != name and p is not None and any(stale in m for m in p):
                self.defs[other] = None

    def poly(self, e: ir.Expr, facts: list[Poly]) -> Poly | None:
        """The exact value of integer expression ``e``, or None when it may wrap or is opaque."""
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool) or not isinstance(e.value, int):
                return None
            return const(e.value)
        if isinstance(e, ir.Var):
            if not self.stable(e.name):
                return None
            if e.name in self.defs and self.defs[e.name] is not None:
                return self.defs[e.name]
            if _type_range(e.ty) is None:
                return None
            self._atom_types[("var", e.name)] = _type_range(e.ty)  # type: ignore[assignment]
            return atom(("var", e.name))
        if isinstance(e, ir.ThreadIndex1D):
            axis = THREAD_INDEX_DIM[e.ty.axis if isinstance(e.ty, ThreadIndexType) else "1d"]
            return add(mul(atom(("reg", f"ctaid.{axis}")), atom(("reg", f"ntid.{axis}"))) or Poly(),
                       atom(("reg", f"tid.{axis}")))
        if isinstance(e, ir.SpecialReg):
            return atom(("reg", e.name)) if e.name in _REG_RANGES else None
        if isinstance(e, ir.Intrinsic) and not e.args and getattr(intrinsic_info(e.name), "value_range", None):
            return atom(("intrinsic", e.name))
        if isinstance(e, ir.ViewLen) and isinstance(e.view, ir.Var) and self.stable(e.view.name):
            return atom(("len", e.view.name))  # a view parameter, or a local holding one view
        if (isinstance(e, ir.ViewDim) and e.which == "shape" and isinstance(e.view, ir.Var)
                and isinstance(e.view.ty, ViewType)):
            return atom(("shape", e.view.name, str(e.axis)))
        if isinstance(e, ir.Cast):
            inner = self.poly(e.operand, facts)
            return self._fits(inner, e.ty, facts, e.loc)
        if isinstance(e, ir.Neg):
            inner = self.poly(e.operand, facts)
            return self._fits(None if inner is None else add(Poly(), inner, -1), e.ty, facts, e.loc)
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%"):
            left, right = self.poly(e.left, facts), self.poly(e.right, facts)
            if left is None or right is None:
                return None
            if e.op == "%":
                return self._fits(self._mod(left, right), e.ty, facts, e.loc)
            if e.op == "+":
                result: Poly | None = add(left, right)
            elif e.op == "-":
                result = add(left, right, -1)
            elif e.op == "*":
                result = mul(left, right)
            else:
                result = self._floordiv(left, right)
            return self._fits(result, e.ty, facts, e.loc)
        return None

    def _floordiv(self, num: Poly, den: Poly) -> Poly | None:
        """``num // den`` (Python floor division) as a fresh atom d with its facts:
        den·d ≤ num ≤ den·d + den - 1 (for a constant den > 0, or when den ≥ 1 is proven).
        Where the types (and the atoms' own ranges) say num ≥ 0 and den ≥ 0, 0 ≤ d ≤ num (x // 0
        is 0), wherever d appears."""
        d: Atom = ("div", repr(sorted(num.items())), repr(sorted(den.items())))
        p = atom(d)
        lower = add(num, mul(den, p) or Poly(), -1)  # num - den·d ≥ 0
        upper = add(add(mul(den, p) or Poly(), den), add(num, const(1)), -1)  # den·d + den - 1 - num ≥ 0
        if len(den) == 1 and () in den and den[()] > 0:
            c = den[()]
            if d not in self._atom_types:
                lo, hi = self.interval(num, [])
                self._atom_types[d] = (lo // c, hi // c)
                self.global_facts += [lower, upper]
            return p
        if d not in self._atom_types:
            self._atom_types[d] = (-(2**63), 2**63 - 1)
            num_lo, num_hi = self._unassumed(lambda: self._base_interval(num))
            if num_lo >= 0 and self._base_interval(den)[0] >= 0:
                self._atom_types[d] = (0, num_hi)
            positive = add(den, const(-1))
            self.conditional_facts += [(lower, positive), (upper, positive)]
            self.divisions[d] = (num, den)
        return p

    def _mod(self, num: Poly, den: Poly) -> Poly | None:
        """``num % den`` (Python's remainder, the divisor's sign; ``x % 0 == x``) as a fresh
        atom m with num = den·(num // den) + m: 0 ≤ m ≤ c - 1 for a constant den = c > 0, and
        0 ≤ m ≤ den - 1 where den ≥ 1 is proven; where the types say num ≥ 0 and den ≥ 0,
        0 ≤ m ≤ num wherever m appears."""
        d = self._floordiv(num, den)
        if d is None:
            return None
        m: Atom = ("mod", repr(sorted(num.items())), repr(sorted(den.items())))
        p = atom(m)
        if m in self._atom_types:
            return p
        rest = add(add(num, mul(den, d) or Poly(), -1), p, -1)  # num - den·d - m, which is 0
        exact = [rest, add(Poly(), rest, -1)]
        top = add(add(den, p, -1), const(-1))  # den - 1 - m ≥ 0
        if len(den) == 1 and () in den and den[()] > 0:
            self._atom_types[m] = (0, den[()] - 1)
            self.global_facts += exact
            return p
        self._atom_types[m] = (-(2**63), 2**63 - 1)
        num_lo, num_hi = self._unassumed(lambda: self._base_interval(num))
        if num_lo >= 0 and self._base_interval(den)[0] >= 0:
            self._atom_types[m] = (0, num_hi)
        positive = add(den, const(-1))
        self.conditional_facts += [(f, positive) for f in (*exact, p, top)]
        return p

    def _fits(self, p: Poly | None, ty: Type, facts: list[Poly], loc: ir.Loc) -> Poly | None:
        """``p`` if its value fits ``ty`` (no wrap-around), else None."""
        rng = _type_range(ty)
        if p is None or rng is None:
            return None
        lo, hi = self._unassumed(lambda: self._base_interval(p))
        if rng[0] <= lo and hi <= rng[1]:  # the types alone say so (the common case)
            return p
        lo, hi = self._unassumed(lambda: self.interval(p, facts))
        if rng[0] <= lo and hi <= rng[1]:
            return p
        lo, hi = self.interval(p, facts)
        if rng[0] <= lo and hi <= rng[1]:  # exact under the limits assumed so far
            return Poly(p, p.assumes | frozenset(a for a in self.grid_limit if _mentions_grid(p, a)))
        if not self.assume_grid:
            return None
        for axis in GRID_AXES:  # would a (generous) grid limit make it exact?
            if not _mentions_grid(p, axis):
                continue
            current = self.grid_limit.get(axis, _REG_RANGES[f"nctaid.{axis}"][1])
            limit = 1 << (current.bit_length() - 1)
            while limit >= _SMALLEST_GRID_LIMIT:
                self.grid_limit[axis] = limit
                lo, hi = self.interval(p, facts)
                if rng[0] <= lo and hi <= rng[1]:
                    if axis not in self.assumptions or self.assumptions[axis].limit > limit:
                        self.assumptions[axis] = GridAssumption(axis, limit, loc)
                    return Poly(p, p.assumes | {axis})
                limit >>= 1
            if axis in self.assumptions:
                self.grid_limit[axis] = self.assumptions[axis].limit
            else:
                self.grid_limit.pop(axis, None)
        return None

    # ---- intervals ------------------------------------------------------------------------

    def _base_range(self, a: Atom) -> tuple[int, int]:
        if a[0] == "reg":
            lo, hi = _REG_RANGES[a[1]]
            axis = a[1].rsplit(".", 1)[-1]
            if a[1].startswith(("ctaid.", "nctaid.")) and axis in self.grid_limit:
                hi = self.grid_limit[axis] - (1 if a[1].startswith("ctaid.") else 0)
            return lo, hi
        if a[0] in ("len", "shape"):
            return _LENGTH_RANGE
        if a[0] == "intrinsic":
            info = intrinsic_info(a[1])
            assert info is not None and info.value_range is not None
            return info.value_range
        return self._atom_types.get(a, (-(2**63), 2**63 - 1))

    def _base_interval(self, p: Poly) -> tuple[int, int]:
        lo = hi = 0
        for m, c in p.items():
            r = (1, 1)
            for a in m:
                r = _mul_range(r, self._base_range(a))
            lo += min(c * r[0], c * r[1])
            hi += max(c * r[0], c * r[1])
        return lo, hi

    def _ranges(self, facts: list[Poly]) -> dict[Atom, tuple[int, int]]:
        """The atom ranges already worked out under ``facts`` (and the grid limits in force):
        unrolled loops ask about the same atoms under the same facts again and again."""
        key = (tuple(map(id, facts)), tuple(sorted(self.grid_limit.items())), len(self.global_facts))
        entry = self._range_memo.get(key)
        if entry is None:  # the entry keeps the facts alive, so their ids stay theirs
            entry = self._range_memo[key] = ({}, tuple(facts))
        return entry[0]

    def interval(self, p: Poly, facts: list[Poly], cache: dict[Atom, tuple[int, int]] | None = None) -> tuple[int, int]:
        if cache is None:
            cache = self._ranges(facts)
        lo = hi = 0
        for m, c in p.items():
            r = (1, 1)
            for a in m:
                if a not in cache:
                    cache[a] = self._atom_range(a, facts, cache)
                r = _mul_range(r, cache[a])
            if len(m) > 1:
                r = self._monomial_range(m, r, facts, cache)
            lo += min(c * r[0], c * r[1])
            hi += max(c * r[0], c * r[1])
        return lo, hi

    def _monomial_range(self, m: Mono, r: tuple[int, int], facts: list[Poly],
                        cache: dict[Atom, tuple[int, int]]) -> tuple[int, int]:
        """The range ``r`` of a product of atoms (the product of theirs), narrowed by the facts in
        which that product is a term: ``4094 - ctaid.y·ntid.y - tid.y >= 0`` (``i < 4095`` of
        ``i = block.idx.y * block.dim.y + thread.idx.y``) bounds ``ctaid.y·ntid.y`` by 4094, where
        the atoms' own ranges give 65535·1024. Sound for any fact: the rest of it is bounded by its
        interval."""
        key = (id(cache), m)
        known = self._monomial_ranges.get(key)
        if known is None:
            lo, hi = r
            used: list[Poly] = []
            for f in (*facts, *self.global_facts):
                c = f.get(m)
                if not c:
                    continue
                def atom_range(b: Atom) -> tuple[int, int]:
                    if b not in cache:
                        cache[b] = self._atom_range(b, facts, cache)
                    return cache[b]

                lo, hi, narrowed = _narrowed(lo, hi, c, _rest_high(f, m, atom_range))
                if narrowed:
                    used.append(f)
            known = self._monomial_ranges[key] = ((lo, hi), tuple(used))
        for f in known[1]:
            self._use(f)
        (lo, hi) = known[0]
        return max(lo, r[0]), min(hi, r[1])

    def upper_bound(self, p: Poly, facts: list[Poly]) -> int:
        """An upper bound of ``p`` wherever ``facts`` hold: the least that ``p``'s interval, or
        its interval once one or two facts are subtracted to cancel its terms, gives."""
        cache = self._ranges(facts)
        neg = add(Poly(), p, -1)
        best = self.interval(p, facts, cache)[1]
        candidates = [*facts, *self.global_facts]
        for f1 in candidates:
            for k1 in _multipliers(neg, f1):
                g1 = add(neg, f1, -k1)  # -p = k1·f1 + g1 with f1 >= 0: p <= -min(g1)
                best = min(best, -self.interval(g1, facts, cache)[0])
                for f2 in candidates:
                    for k2 in _multipliers(g1, f2):
                        best = min(best, -self.interval(add(g1, f2, -k2), facts, cache)[0])
        return best

    def _atom_range(self, a: Atom, facts: list[Poly], cache: dict[Atom, tuple[int, int]],
                    depth: int = 2) -> tuple[int, int]:
        """The atom's range, narrowed by facts in which it appears alone and linearly (the
        other atoms of such a fact narrowed the same way, ``depth`` levels down)."""
        if a in cache:
            for f in self._range_uses.get((id(cache), a), ()):  # facts that narrowed it count as used
                self._use(f)
            return cache[a]
        first_use = len(self._use_log)
        lo, hi = self._base_range(a)
        cache[a] = (lo, hi)  # while in progress: a cycle sees the base range
        single = (a,)
        for f in (*facts, *self.global_facts):
            c = f.get(single)
            if not c or any(a in m for m in f if m != single):
                continue
            rest_hi = _rest_high(f, single, lambda b: self._atom_range(b, facts, cache, depth - 1) if depth
                                 else self._base_range(b))
            lo, hi, narrowed = _narrowed(lo, hi, c, rest_hi)
            if narrowed:
                self._use(f)
        if depth == 2:
            cache[a] = (lo, hi)
            self._range_uses[(id(cache), a)] = tuple(self._use_log[first_use:])
        else:
            del cache[a]
        return lo, hi

    # ---- proofs ---------------------------------------------------------------------------

    def nonneg(self, g: Poly, facts: list[Poly], pairs: bool = True) -> bool:
        """Is ``g ≥ 0`` wherever ``facts`` hold? (``pairs``: also try two facts together)"""
        cache = self._ranges(facts)
        if self.interval(g, facts, cache)[0] >= 0:
            return True
        candidates = [*facts, *self.global_facts]
        for f1 in candidates:
            for k1 in _multipliers(g, f1):
                g1 = add(g, f1, -k1)
                if self.interval(g1, facts, cache)[0] >= 0:
                    self._use(f1)
                    return True
                if not pairs:
                    continue
                for f2 in candidates:
                    for k2 in _multipliers(g1, f2):
                        if self.interval(add(g1, f2, -k2), facts, cache)[0] >= 0:
                            self._use(f1)
                            self._use(f2)
                            return True
        return False

    def _use(self, f: Poly) -> None:
        self.used.add(id(f))
        self._touched |= f.assumes
        self._use_log.append(f)

    def in_range(self, index: Poly, bound: Poly, facts: list[Poly]) -> bool:
        """Is ``0 <= index < bound`` wherever ``facts`` hold? A proof activates the grid
        assumptions it relied on."""
        below = add(add(bound, index, -1), const(-1))

        def attempt() -> bool:  # the cheap proofs first: one fact, then row-major, then pairs
            low = self.nonneg(index, facts)
            if (low and self.nonneg(below, facts, pairs=False)) or self._row_major(index, bound, facts):
                return True
            if self.conditional_facts and self._with_holding(facts) is not facts:
                more = self._with_holding(facts)
                low = low or self.nonneg(index, more)
                if low and self.nonneg(below, more):
                    return True
            elif low and self.nonneg(below, facts):
                return True
            return self._quotient_in_range(index, bound, facts)

        return self._proof(attempt, index, bound)

    def proves_nonneg(self, p: Poly, facts: list[Poly]) -> bool:
        """Is ``p ≥ 0`` wherever ``facts`` hold? (Activates the grid assumptions it relies on.)"""
        return self._proof(lambda: self.nonneg(p, facts) or self.nonneg(p, self._with_holding(facts)), p)

    def _with_holding(self, facts: list[Poly]) -> list[Poly]:
        """``facts`` and the conditional facts (of divisions by a non-constant) whose condition
        they prove (``facts`` itself when there are none)."""
        key = (*map(id, facts), len(self.conditional_facts))
        entry = self._holding_memo.get(key)
        if entry is None:  # the entry keeps the facts alive, so their ids stay theirs
            extra = self._unassumed(lambda: [f for f, cond in self.conditional_facts
                                             if self.nonneg(cond, facts, pairs=False)])
            entry = self._holding_memo[key] = (facts + extra if extra else facts, tuple(facts))
        return entry[0]

    def _quotient_in_range(self, index: Poly, bound: Poly, facts: list[Poly]) -> bool:
        """index = num // den, a division by a non-constant den ≥ 1: 0 ≤ index < bound when
        0 ≤ num < den·bound."""
        if len(index) != 1 or next(iter(index.items()))[1] != 1:
            return False
        (mono,) = index
        if len(mono) != 1 or mono[0] not in self.divisions:
            return False
        num, den = self.divisions[mono[0]]
        scaled = mul(den, bound)
        if scaled is None or not self.nonneg(add(den, const(-1)), facts):
            return False
        return self.nonneg(num, facts) and self.nonneg(add(add(scaled, num, -1), const(-1)), facts)

    def _proof(self, attempt: Callable[[], bool], *goals: Poly) -> bool:
        self._touched = set().union(*(g.assumes for g in goals))
        proven = self._unassumed(attempt)
        if not proven and self.grid_limit:  # with the assumed grid limits
            self._touched |= {a for a in self.grid_limit if any(_mentions_grid(g, a) for g in goals)}
            proven = attempt()
        if proven:
            self.active |= self._touched
        return proven

    def trial(self, f: Callable[[], T]) -> T:
        """``f()`` with what proofs record (the facts used, the grid assumptions and limits)
        as it was before: a question asked to choose a hypothesis, not a proof the code keeps."""
        saved = (set(self.used), set(self.active), dict(self.assumptions), dict(self.grid_limit))
        try:
            return f()
        finally:
            self.used, self.active, self.assumptions, self.grid_limit = saved

    def _unassumed(self, f: Callable[[], T]) -> T:
        """``f()`` with the hardware's own grid limits, not the assumed ones."""
        saved, self.grid_limit = self.grid_limit, {}
        try:
            return f()
        finally:
            self.grid_limit = saved

    def _row_major(self, index: Poly, bound: Poly, facts: list[Poly]) -> bool:
        """index = A·u + v with 0 ≤ v < A, 0 ≤ u < T and bound ≥ A·T."""
        one = const(1)
        products = [*facts, *self.global_facts] + [f for f, _ in self.conditional_facts]
        # a row length is a parameter or a view length far more often than a thread index
        for a in sorted({x for m in index if len(m) >= 2 for x in m}, key=lambda x: (x[0] == "reg", x)):
            u = Poly()
            v = Poly()
            for m, c in index.items():
                if a in m:
                    rest = list(m)
                    rest.remove(a)
                    u[tuple(rest)] = c
                else:
                    v[m] = c
            a_poly = atom(a)
            if not (self.nonneg(v, facts) and self.nonneg(add(add(a_poly, v, -1), one, -1), facts)
                    and self.nonneg(u, facts)):
                continue
            for f in products:
                for m, c in f.items():
                    if c >= 0 or a not in m:
                        continue
                    rest = list(m)
                    rest.remove(a)
                    t = Poly({tuple(rest): 1})
                    ta = Poly({m: 1})
                    if (self.nonneg(add(add(t, u, -1), one, -1), facts)
                            and self.nonneg(add(bound, ta, -1), facts + self._holding(facts))):
                        return True
        return False

    def _holding(self, facts: list[Poly]) -> list[Poly]:
        return [f for f, cond in self.conditional_facts if self.nonneg(cond, facts)]

    def facts_of(self, cond: ir.Expr, negated: bool, facts: list[Poly]) -> list[Poly]:
        """Facts (polynomials ≥ 0) that hold where ``cond`` is true (false when negated)."""
        if isinstance(cond, ir.Not):
            return self.facts_of(cond.operand, not negated, facts)
        if isinstance(cond, ir.BoolOp):
            if (cond.op == "and") != negated:
                out: list[Poly] = []
                for v in cond.values:
                    out += self.facts_of(v, negated, facts + out)
                return out
            return []
        if not isinstance(cond, ir.Compare):
            return []
        st = as_scalar(cond.operand_ty)
        if st is None or st.kind not in ("int", "uint"):
            return []
        left, right = self.poly(cond.left, facts), self.poly(cond.right, facts)
        if left is None or right is None:
            return []
        op = cond.op
        if negated:
            op = op.inverse
        minus_one = const(-1)
        if op == "<":
            return [add(add(right, left, -1), minus_one)]
        if op == "<=":
            return [add(right, left, -1)]
        if op == ">":
            return [add(add(left, right, -1), minus_one)]
        if op == ">=":
            return [add(left, right, -1)]
        if op == "==":
            return [add(right, left, -1), add(left, right, -1)]
        if op == "!=":  # at an end of the difference's range (``else`` of ``i == 0``, i ≥ 0): one past it
            d = add(left, right, -1)
            lo, hi = self._unassumed(lambda: self._base_interval(d))
            if lo == 0:
                return [add(d, minus_one)]
            if hi == 0:
                return [add(add(Poly(), d, -1), minus_one)]
        return []

    def grid_checks(self) -> list[GridAssumption]:
        """The grid limits that proofs relied on, to be checked at kernel entry."""
        return [self.assumptions[a] for a in GRID_AXES if a in self.assumptions and a in self.active]


def _mentions_grid(p: Poly, axis: str) -> bool:
    return any(("reg", f"ctaid.{axis}") in m or ("reg", f"nctaid.{axis}") in m for m in p)


def _rest_high(f: Poly, term: Mono, atom_range: Callable[[Atom], tuple[int, int]]) -> int:
    """The largest value of ``f`` without its ``term``, each atom in ``atom_range``."""
    high = 0
    for m, k in f.items():
        if m == term:
            continue
        r = (1, 1)
        for b in m:
            r = _mul_range(r, atom_range(b))
        high += max(k * r[0], k * r[1])
    return high


def _narrowed(lo: int, hi: int, c: int, rest_high: int) -> tuple[int, int, bool]:
    """``[lo, hi]``, the range of a term t, narrowed by the fact ``c·t + rest >= 0`` whose rest is
    at most ``rest_high``; and whether it narrowed."""
    if c > 0 and -(rest_high // c) > lo:  # c·t ≥ -rest
        return -(rest_high // c), hi, True
    if c < 0 and rest_high // -c < hi:
        return lo, rest_high // -c, True
    return lo, hi, False


def _multipliers(g: Poly, f: Poly) -> set[int]:
    """k > 0 such that g - k·f cancels a non-constant term of g."""
    out = set()
    for m, c in f.items():
        if m and m in g and (g[m] > 0) == (c > 0) and g[m] % c == 0:
            out.add(g[m] // c)
    return out
