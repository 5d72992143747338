"""``ox.wgmma.fence()`` where PTX requires it: before the first ``ox.wgmma.mma`` of a kernel,
and between the threads' own access to the registers an ``mma`` uses (its accumulator, or its
register A fragment) and that ``mma``. Without it the tensor cores may read the registers before
the threads' writes land, or overwrite them before the threads' reads: wrong results, no error.

The pass follows each function's statements (both branches of an ``if``, a loop's body twice,
as on its second trip) with the register arrays accessed since the last fence, and refuses an
``mma`` on one of them at the call, naming the line of the access. ``mma`` after ``mma`` on one
accumulator needs no fence (PTX orders them), nor do the other ``wgmma`` calls
(``commit_group``, ``wait_group(n, acc)``, which name the accumulator without touching it). A
kernel starts unfenced; a device function starts fenced (its caller's business), and a call of
a device function counts as a fence (it may make one).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..intrinsics import Role, has_role
from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..ir.verify import IRError

__all__ = ["WgmmaFence"]

ENTRY = ir.Loc(0, 0)  # "accessed" at the kernel's start: nothing fenced yet

Unfenced = dict[str, ir.Loc]  # register array -> where the threads accessed it since the last fence


def _register_arrays(e: ir.Expr) -> Iterator[str]:
    """The per-thread arrays ``e`` names (an accumulator, an A fragment, ``frags[k]``)."""
    for x in ir.subexpressions(e):
        if isinstance(x, ir.Var) and isinstance(x.ty, ArrayType) and x.ty.space == "local":
            yield x.name



def _accesses(e: ir.Expr, tracked: set[str]) -> Iterator[tuple[str, ir.Loc]]:
    """The tracked register arrays ``e`` reads or hands on, outside wgmma calls."""
    if has_role(e, Role.WGMMA):
        return
    if isinstance(e, ir.Var) and e.name in tracked:
        yield e.name, e.loc
        return
    for child in ir.children(e):
        yield from _accesses(child, tracked)


@dataclass(frozen=True)
class WgmmaFence:
    name: str = "wgmma-fence"

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            tracked = {name for s in ir.statements(fn.body) for root in ir.statement_roots(s)
                       for x in ir.subexpressions(root) if isinstance(x, ir.Intrinsic) and has_role(x, Role.WGMMA_MMA)
                       for a in x.args for name in _register_arrays(a)}
            if tracked:
                start: Unfenced = {name: ENTRY for name in tracked} if fn.is_kernel else {}
                _FenceWalk(fn, tracked).block(fn.body, start)
        return program


class _FenceWalk:
    def __init__(self, fn: ir.Function, tracked: set[str]) -> None:
        self.fn = fn
        self.tracked = tracked

    def block(self, stmts: list[ir.Stmt], unfenced: Unfenced) -> Unfenced:
        for s in stmts:
            unfenced = self.statement(s, unfenced)
        return unfenced

    def statement(self, s: ir.Stmt, unfenced: Unfenced) -> Unfenced:
        if isinstance(s, ir.If):
            unfenced = self.expressions([s.cond], unfenced)
            return {**self.block(s.then, dict(unfenced)), **self.block(s.orelse, dict(unfenced))}
        if isinstance(s, ir.While):
            unfenced = self.expressions([s.cond], unfenced)
            once = self.block(s.body + s.step, dict(unfenced))
            again = self.expressions([s.cond], {**unfenced, **once})
            twice = self.block(s.body + s.step, dict(again))
            return {**again, **twice}
        if isinstance(s, ir.Block):
            return self.block(s.body, unfenced)
        if isinstance(s, ir.Store) and isinstance(s.view, ir.Var) and s.view.name in self.tracked:
            unfenced = {**unfenced, s.view.name: s.loc}
        return self.expressions(ir.statement_roots(s), unfenced)

    def expressions(self, roots: list[ir.Expr], unfenced: Unfenced) -> Unfenced:
        for root in roots:
            for x in ir.subexpressions(root):
                if has_role(x, Role.WGMMA_FENCE):
                    unfenced = {}
                elif isinstance(x, ir.Intrinsic) and has_role(x, Role.WGMMA_MMA):
                    self.check(x, unfenced)
                elif isinstance(x, ir.Call):
                    unfenced = {}  # the callee may fence
            for name, loc in _accesses(root, self.tracked):
                unfenced = {**unfenced, name: loc}
        return unfenced

    def check(self, mma: ir.Intrinsic, unfenced: Unfenced) -> None:
        for a in mma.args:
            for name in _register_arrays(a):
                if name not in unfenced:
                    continue
                at = unfenced[name]
                if at == ENTRY:
                    message = (f"ox.wgmma.mma() on {name!r} with no ox.wgmma.fence() before it since "
                               f"{self.fn.python_name}() began: the first wgmma of a warpgroup needs one")
                else:
                    message = (f"ox.wgmma.mma() on {name!r}, which line {at.line} accessed with no ox.wgmma.fence() "
                               "since: the tensor cores may use the registers before that access is done")
                raise IRError(message, self.fn.python_name, self.fn.file, mma.loc,
                              "call ox.wgmma.fence() before the mma (after the threads last read or write the "
                              "accumulator or the A fragment)", user_error=True)
