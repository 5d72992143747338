"""Constant loop unrolling: a ``for v in range(a, b, c)`` whose bounds are compile-time
constants, whose trip count is small and whose body is small gets the hint to unroll it
completely (``While.unroll`` set to the trip count: LLVM's ``llvm.loop.unroll.count``).

LLVM's own heuristic unrolls a loop fully only when the copies stay under a small size
threshold, so a loop over 20 spheres or 16 features stays rolled where nvcc unrolls it; rolled,
every index into a local or constant array is computed at run time (a local array then lives
in local memory, a constant array is read with an indexed load). Unrolled, the indices are
constants: SROA keeps local arrays in registers and constant loads take an immediate offset.

A loop is unrolled when (the pass's fields, defaults as nvcc unrolls by default):

- its bounds are constants and its body does not assign its variable (the trip count is known);
- the user gave no hint (``ox.unroll(range(...), n)`` wins, ``n = 1`` keeps it rolled);
- the trip count is at most ``max_trip`` and ``trip × size`` at most ``max_unrolled_size``,
  where ``size`` counts the body's IR expressions and statements, a call as ``call_size``
  (it is inlined), a nested loop as its own unrolled size (an inner loop left rolled: the
  outer loop stays rolled too).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir

__all__ = ["ConstantLoopUnroll"]


@dataclass(frozen=True)
class ConstantLoopUnroll:
    name: str = "constant-loop-unroll"
    max_trip: int = 32
    max_unrolled_size: int = 4096
    call_size: int = 32

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            self._size(fn.body)
        return program

    def _size(self, stmts: list[ir.Stmt]) -> int | None:
        """The IR size of ``stmts`` once the loops this pass unrolls are unrolled (None: it
        holds a loop left rolled); marks those loops on the way."""
        total = 0
        rolled = False
        for s in stmts:
            total += 1 + sum(self._expr_size(e) for e in ir.statement_roots(s))
            if isinstance(s, ir.If):
                parts = (self._size(s.then), self._size(s.orelse))
                rolled |= None in parts
                total += sum(p or 0 for p in parts)
            elif isinstance(s, ir.Block):
                inner = self._size(s.body)
                rolled |= inner is None
                total += inner or 0
            elif isinstance(s, ir.While):
                body, step = self._size(s.body), self._size(s.step)
                trip = _trip_count(s)
                if body is None or step is None or trip is None or s.unroll is not None:
                    rolled = True
                    continue
                unrolled = trip * (body + step + self._expr_size(s.cond))
                if trip > self.max_trip or unrolled > self.max_unrolled_size:
                    rolled = True
                    continue
                if trip > 1:
                    s.unroll = trip
                total += unrolled
        return None if rolled else total

    def _expr_size(self, e: ir.Expr) -> int:
        return sum(self.call_size if isinstance(x, ir.Call) else 1 for x in ir.subexpressions(e))


def _trip_count(s: ir.While) -> int | None:
    """How many times a ``for v in range(...)`` loop with constant bounds runs, else None."""
    r = s.range
    if r is None or r.rebinds:
        return None
    values: list[int] = []
    for b in (r.start, r.stop, r.step):
        if not isinstance(b, ir.Const) or not isinstance(b.value, int) or isinstance(b.value, bool):
            return None
        values.append(b.value)
    start, stop, step = values
    if step == 0:
        return None
    return len(range(start, stop, step))
