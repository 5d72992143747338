"""The bounds prover's bookkeeping in the translator (bounds.py proves): the facts each scope
knows, the definitions of stable locals, the facts of loop ranges, the check sites of view
accesses (left out where the facts prove the index in range), the i32 grid limits the
proofs assumed (launch preconditions), and the non-negative widening of products.
"""
from __future__ import annotations

import ast

from oxide.runtime.manifest import Precondition
from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp
from ..ir.types import BOOL, I64, ArrayType, ViewType, as_scalar
from .bounds import Poly, add, atom, const, mul
from .context import Scope
from .names import Names
from . import view_values

__all__ = ["BoundsFacts"]


class BoundsFacts(Names):
    """The facts in scope for the bounds prover, and the check sites they leave."""

    def record_grid_preconditions(self) -> None:
        """The grid limits the bounds proofs assumed (bounds.py) become launch preconditions
        (checked by the runtime, so the device code has no check for them)."""
        for assumed in self.prover.grid_checks():
            loc = assumed.loc
            node = ast.Constant(0, lineno=loc.line, col_offset=loc.col - 1)
            site = self.builder.add_error_site(
                "assert", self.kernel_name, self.module, node,
                f"grid.{assumed.axis} <= {assumed.limit}: the i32 index arithmetic here assumes it "
                "(compute the index in i64 to lift the limit)")
            axis = "xyz".index(assumed.axis)
            self.preconditions.append(Precondition(site, ["le", ["grid", axis], ["const", assumed.limit]]))

    def define(self, name: str, value: ir.Expr | None) -> None:
        if self.bounds_check:
            self.prover.define(name, value if self._stable(name) else None, self.scopes[-1].facts)

    def add_facts(self, cond: ir.Expr, negated: bool) -> None:
        if self.bounds_check:
            self.scopes[-1].facts += self.prover.facts_of(cond, negated, self.scopes[-1].facts)

    def scope_where(self, cond: ir.Expr, negated: bool) -> Scope:
        """The current facts plus those of ``cond`` (or of its negation)."""
        facts = self.scopes[-1].facts
        if not self.bounds_check:
            return Scope(list(facts))
        return Scope(facts + self.prover.facts_of(cond, negated, facts))

    def expr_where(self, node: ast.expr, scope: Scope) -> ir.Expr:
        """``node`` translated under the facts of ``scope``."""
        self.scopes.append(scope)
        try:
            return self.expr(node)
        finally:
            self.scopes.pop()

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

    def range_facts(self, start: ir.Expr, stop: ir.Expr, step: ir.Expr, ty: ScalarType,
                    node: ast.For) -> tuple[list[Poly], bool]:
        """Facts on the variable of ``for v in range(start, stop, step)`` inside the body, and
        whether they need a check at loop entry that ``v + step`` cannot wrap around."""
        assert isinstance(node.target, ast.Name)
        facts = self.scopes[-1].facts
        p = self.prover
        lo, hi, st = p.poly(start, facts), p.poly(stop, facts), p.poly(step, facts)
        if lo is None or hi is None or st is None:
            return [], False
        v = p.poly(ir.Var(node.target.id, ty, self.loc(node.target)), facts)
        assert v is not None
        limits = _int_limits(ty)
        positive = p.nonneg(add(st, const(-1)), facts)
        if positive:  # step ≥ 1: start ≤ v < stop
            body = [add(v, lo, -1), add(add(hi, v, -1), const(-1))]
            # v + step must not wrap: stop - 1 + step ≤ max
            no_wrap = add(add(const(limits[1] + 1), hi, -1), st, -1)
        elif p.nonneg(add(const(-1), st, -1), facts):  # step ≤ -1: stop < v ≤ start
            body = [add(lo, v, -1), add(add(v, hi, -1), const(-1))]
            no_wrap = add(add(hi, const(1 - limits[0])), st)
        else:
            return [], False
        if p.nonneg(no_wrap, facts):
            return body, False
        if ty.bits > 32 or not positive:
            return [], False  # no wider type to check in (or no guard for negative steps): keep the checks
        return body + [no_wrap], True  # using any of them adds the entry check (range_guard)

    def range_guard(self, stop: ir.Expr, step: ir.Expr, ty: ScalarType, node: ast.For) -> ir.Stmt:
        """``stop + step <= max + 1``, computed in i64 (both are values of 32 bits or fewer)."""
        loc = self.loc(node.iter)
        limits = _int_limits(ty)
        limit = ir.Const(limits[1] + 1, I64, loc)
        total = ir.BinOp(BinaryOp.ADD, ir.Cast(stop, I64, loc), ir.Cast(step, I64, loc), I64, loc)
        site = self.builder.add_error_site(
            "assert", self.kernel_name, self.module, node.iter,
            f"{ast.unparse(node.iter)}: stop + step must not exceed {limits[1] + 1} ({ty.name} loop variable)")
        return ir.Check(ir.Compare(CompareOp.LE, total, limit, I64, BOOL, loc), site, loc)

    def proves_vector(self, index: ir.Expr, width: int, view: ir.Expr) -> bool:
        """Elements width·index … width·index + width - 1 all in range?"""
        facts = self.scopes[-1].facts
        bound = self.view_bound(view)
        p = self.prover.poly(index, facts)
        if p is None or bound is None:
            return False
        first = mul(p, const(width)) or Poly()
        return self.prover.nonneg(first, facts) and self.prover.in_range(add(first, const(width - 1)), bound, facts)

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
        return self.proofs[key][0]

    def view_bound(self, view: ir.Expr, axis: int | None = None) -> Poly | None:
        if not (isinstance(view, ir.Var) and isinstance(view.ty, ViewType) and view.name in self.param_names):
            return view_values.view_bound(self, view)  # type: ignore[arg-type]  # arrays, slices, view locals
        if axis is None or not view.ty.is_tensor:
            return atom(("len", view.name))
        return atom(("shape", view.name, str(axis)))

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        if not self.bounds_check:
            return None
        if isinstance(index, ir.Intrinsic) and index.name == "flat_index":
            return None  # an array indexed per axis: each axis was proven or checked
        bound = self.view_bound(view)
        if bound is None and isinstance(view.ty, ArrayType) and view.ty.size is not None:
            bound = const(view.ty.size)
        if bound is not None and self.proves(index, bound):
            return None
        if isinstance(index, ir.Const) and isinstance(index.value, int) and index.value < 0:
            raise self.error(node, "negative indices are not supported",
                             "views have no wrap-around indexing; index from 0")
        if isinstance(view.ty, ArrayType):
            size = view.ty.size
            if view.ty.dynamic:
                return None  # dynamic shared memory: its size is known only at launch
            if size is not None and isinstance(index, ir.Const) and isinstance(index.value, int):
                if index.value >= size:
                    raise self.error(node, f"index {index.value} is out of bounds for an array of {size} elements",
                                     f"valid indices are 0 to {size - 1}")
                return None
        return self.builder.add_error_site("bounds", self.kernel_name, self.module, node, what)

    def mark_nonneg_widening(self, *sides: ir.Expr) -> None:
        """``i64(r) * cols`` with r, cols ≥ 0 proven: both widen with zext, so the product is one
        32×32→64 multiply (mul.wide.u32) instead of a 64-bit one (sext and zext do not pair)."""
        if not self.bounds_check:
            return
        if not all(isinstance(s, ir.Cast) or (isinstance(s, ir.Const) and int(s.value) >= 0) for s in sides):
            return
        casts = [s for s in sides if isinstance(s, ir.Cast)]
        for c in casts:
            src = as_scalar(c.operand.ty)
            if src is None or src.kind != "int" or src.bits > 32:
                return
            p = self.prover.poly(c.operand, self.scopes[-1].facts)
            if p is None or not self.prover.proves_nonneg(p, self.scopes[-1].facts):
                return
        for c in casts:
            c.nonneg = True


def _poly_key(p: Poly) -> object:
    return tuple(sorted(p.items()))


def _int_limits(ty: ScalarType) -> tuple[int, int]:
    if ty.kind == "uint":
        return 0, (1 << ty.bits) - 1
    return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1
