"""wgmma accumulators: ``ox.wgmma.mma(acc, ...)`` writes ``acc`` asynchronously until a
``ox.wgmma.wait_group(0, acc)`` after it, so reading or writing ``acc`` in between reads
values the tensor cores have not written yet (or races with them): wrong results without an
error. This pass follows each function's statements (both branches of an ``if``, a loop's body
as on its second trip) with the set of accumulators an ``mma`` may still be writing, and
refuses an element read or store of one of them at the access, naming the ``mma``.

``wait_group(n)`` with ``n > 0`` leaves the newest ``n`` groups pending, so only
``wait_group(0, acc)`` (naming the accumulator, which also keeps the compiler from moving the
reads above the wait) clears it. The ``mma`` itself takes the pending accumulator: chaining
``mma`` calls on one accumulator is the point.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir.verify import IRError

__all__ = ["WgmmaOrder"]

Pending = dict[str, ir.Loc]  # accumulator name -> the mma that may still write it


def _accesses(e: ir.Expr) -> Iterator[tuple[str, ir.Loc]]:
    """The array names ``e`` reads elements of (``acc[i]``), outside wgmma calls."""
    if isinstance(e, ir.Intrinsic) and e.name.startswith("wgmma."):
        return
    if isinstance(e, ir.ViewLoad) and isinstance(e.view, ir.Var):
        yield e.view.name, e.loc
    for child in ir.children(e):
        yield from _accesses(child)


def _wgmma_call(s: ir.Stmt) -> ir.Intrinsic | None:
    if isinstance(s, ir.ExprStmt) and isinstance(s.value, ir.Intrinsic) and s.value.name.startswith("wgmma."):
        return s.value
    return None


@dataclass(frozen=True)
class WgmmaOrder:
    name: str = "wgmma-order"

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            self._block(fn, fn.body, {})
        return program

    def _block(self, fn: ir.Function, stmts: list[ir.Stmt], pending: Pending) -> Pending:
        for s in stmts:
            pending = self._stmt(fn, s, pending)
        return pending

    def _stmt(self, fn: ir.Function, s: ir.Stmt, pending: Pending) -> Pending:
        call = _wgmma_call(s)
        if call is not None:
            names = [a.name for a in call.args if isinstance(a, ir.Var)]
            if call.name == "wgmma.mma" and names:
                return {**pending, names[0]: call.loc}
            if call.name == "wgmma.wait_group" and call.options[0] == "0":
                return {name: loc for name, loc in pending.items() if name not in names}
            return pending
        if isinstance(s, ir.If):
            self._check(fn, [s.cond], pending)
            then = self._block(fn, s.then, dict(pending))
            orelse = self._block(fn, s.orelse, dict(pending))
            return {**then, **orelse}
        if isinstance(s, ir.While):
            self._check(fn, [s.cond], pending)
            once = self._block(fn, s.body + s.step, dict(pending))
            again = {**pending, **once}  # the second trip starts with what the first left pending
            self._check(fn, [s.cond], again)
            twice = self._block(fn, s.body + s.step, dict(again))
            return {**again, **twice}
        if isinstance(s, ir.Block):
            return self._block(fn, s.body, pending)
        if isinstance(s, ir.Store) and isinstance(s.view, ir.Var) and s.view.name in pending:
            self._fail(fn, s.view.name, s.loc, pending[s.view.name], "written")
        self._check(fn, ir.statement_roots(s), pending)
        return pending

    def _check(self, fn: ir.Function, roots: list[ir.Expr], pending: Pending) -> None:
        if not pending:
            return
        for root in roots:
            for name, loc in _accesses(root):
                if name in pending:
                    self._fail(fn, name, loc, pending[name], "read")

    def _fail(self, fn: ir.Function, name: str, loc: ir.Loc, mma: ir.Loc, what: str) -> None:
        raise IRError(f"the wgmma accumulator {name!r} is {what} while the ox.wgmma.mma at line {mma.line} may still "
                      "be writing it", fn.python_name, fn.file, loc,
                      f"call ox.wgmma.wait_group(0, {name}) first: the mma is asynchronous until then",
                      user_error=True)
