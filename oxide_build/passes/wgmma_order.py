"""wgmma accumulators: ``ox.wgmma.mma(acc, ...)`` writes ``acc`` asynchronously until a
``ox.wgmma.wait_group(n, acc)`` that completes its group, so reading or writing ``acc`` in
between reads values the tensor cores have not written yet (or races with them): wrong results
without an error. This pass follows each function's statements (both branches of an ``if``, a
loop's body as on its second trip) with the accumulators an ``mma`` may still be writing, and
refuses an element read or store of one of them at the access, naming the ``mma``.

Groups: ``commit_group()`` closes the ``mma`` calls issued since the last one into a group, and
``wait_group(n)`` waits until at most the newest ``n`` groups are pending. So each pending
accumulator carries its age, the number of ``commit_group()`` calls since its newest ``mma``
(0: not committed yet); ``wait_group(n, acc)`` clears ``acc`` when its age is above ``n`` (the
wait must name it, which also keeps the compiler from moving the reads above the wait). Where
paths join (the branches of an ``if``, a loop's trips) an accumulator keeps its youngest age.
With ``S`` issued, then ``O``, each committed, ``wait_group(1, S)`` makes ``S`` readable while
``O`` stays pending: FlashAttention-3's overlap.

A register A operand (``ox.wgmma.mma(acc, a_fragment, b, b_index)``) is read by the tensor
cores until the same wait: writing it in between is refused too (reading it is fine). The
``mma`` itself takes the pending accumulator: chaining ``mma`` calls on one accumulator is
the point.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..intrinsics import Role, has_role
from ..ir import nodes as ir
from ..ir.verify import IRError

__all__ = ["WgmmaOrder"]


@dataclass(frozen=True)
class PendingMma:
    """An ``mma`` that may still be running: where it is, its age (``commit_group()`` calls
    since it), and whether the array is its accumulator (else its register A, read-only)."""
    loc: ir.Loc
    age: int
    accumulator: bool


Pending = dict[str, PendingMma]  # array name -> the newest mma that may still use it


def _join(a: Pending, b: Pending) -> Pending:
    """What may be pending after either of two paths: each array at its youngest age."""
    out = dict(a)
    for name, p in b.items():
        q = out.get(name)
        if q is None or p.age < q.age or (p.age == q.age and p.accumulator and not q.accumulator):
            out[name] = p
    return out


def _accesses(e: ir.Expr) -> Iterator[tuple[str, ir.Loc]]:
    """The array names ``e`` reads elements of (``acc[i]``), outside wgmma calls."""
    if has_role(e, Role.WGMMA):
        return
    if isinstance(e, ir.ViewLoad) and isinstance(e.view, ir.Var):
        yield e.view.name, e.loc
    for child in ir.children(e):
        yield from _accesses(child)


def _wgmma_call(s: ir.Stmt) -> ir.Intrinsic | None:
    if isinstance(s, ir.ExprStmt) and isinstance(s.value, ir.Intrinsic) and has_role(s.value, Role.WGMMA):
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
            if has_role(call, Role.WGMMA_MMA) and names:
                out = {**pending, names[0]: PendingMma(call.loc, 0, True)}
                a = call.args[1]
                if isinstance(a, ir.Var) and a.name != names[0] and call.options[2] == "0":  # a register A
                    out[a.name] = PendingMma(call.loc, 0, False)
                return out
            if has_role(call, Role.WGMMA_COMMIT):
                return {name: PendingMma(p.loc, p.age + 1, p.accumulator) for name, p in pending.items()}
            if has_role(call, Role.WGMMA_WAIT):
                n = int(call.options[0])
                # a named accumulator, or any register A (only its writes are refused), whose group is done
                return {name: p for name, p in pending.items()
                        if not (p.age > n and (name in names or not p.accumulator))}
            return pending
        if isinstance(s, ir.If):
            self._check(fn, [s.cond], pending)
            then = self._block(fn, s.then, dict(pending))
            orelse = self._block(fn, s.orelse, dict(pending))
            return _join(then, orelse)
        if isinstance(s, ir.While):
            self._check(fn, [s.cond], pending)
            once = self._block(fn, s.body + s.step, dict(pending))
            again = _join(pending, once)  # the second trip starts with what the first left pending
            self._check(fn, [s.cond], again)
            twice = self._block(fn, s.body + s.step, dict(again))
            return _join(again, twice)
        if isinstance(s, ir.Block):
            return self._block(fn, s.body, pending)
        if isinstance(s, ir.Store) and isinstance(s.view, ir.Var) and s.view.name in pending:
            p = pending[s.view.name]
            self._fail(fn, s.view.name, s.loc, p, "written")
        self._check(fn, ir.statement_roots(s), pending)
        return pending

    def _check(self, fn: ir.Function, roots: list[ir.Expr], pending: Pending) -> None:
        if not pending:
            return
        for root in roots:
            for name, loc in _accesses(root):
                if name in pending and pending[name].accumulator:
                    self._fail(fn, name, loc, pending[name], "read")

    def _fail(self, fn: ir.Function, name: str, loc: ir.Loc, mma: PendingMma, what: str) -> None:
        if mma.accumulator:
            raise IRError(f"the wgmma accumulator {name!r} is {what} while the ox.wgmma.mma at line {mma.loc.line} "
                          "may still be writing it", fn.python_name, fn.file, loc,
                          f"call ox.wgmma.wait_group(0, {name}) first (or wait_group(n, {name}) with n groups "
                          "committed after its mma): the mma is asynchronous until then", user_error=True)
        raise IRError(f"the register A operand {name!r} is written while the ox.wgmma.mma at line {mma.loc.line} may "
                      "still be reading it", fn.python_name, fn.file, loc,
                      "call ox.wgmma.wait_group(n) first, n at most the groups committed after that mma",
                      user_error=True)
