"""Warpgroup-collective calls under a condition that differs within a warpgroup.

``ox.wgmma.*`` (``fence``, ``mma``, ``commit_group``, ``wait_group``) and
``ox.warpgroup.setmaxnreg_inc/dec`` are ``.sync.aligned`` instructions of a whole warpgroup:
its 128 threads must execute the same one together, or the result is undefined (a hang, or
wrong registers). So a branch around them may split the block between warpgroups (warp
specialization: ``if ox.warpgroup.id() == 0:`` producer, ``else:`` consumers) but never inside
one. This pass reads every condition's level (``passes/uniformity.py``): a collective call, or a
call of a function that reaches one, under a condition that differs within a warpgroup
(``thread.idx.x % 128 < 64``, ``warp.lane() == 0``, a thread index), or after a ``return``,
``break`` or ``continue`` taken under one, is an error naming the call and the condition's line.
Conditions of unknown uniformity (memory, inline PTX) are accepted.

``block.sync()`` keeps the stricter rule of ``passes/divergence.py``: any thread-dependent
condition, warpgroup-uniform ones included, is an error there.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..intrinsics import Role, intrinsic_info
from ..ir import nodes as ir
from ..ir.verify import IRError
from .divergence import functions_reaching
from .uniformity import ProgramUniformity, Uniformity, program_uniformity

__all__ = ["WarpgroupDivergence", "is_warpgroup_collective"]

Reach = tuple[str, ir.Loc, str]  # (file, place, intrinsic) of a collective a function reaches


def is_warpgroup_collective(name: str) -> bool:
    """Whether the intrinsic ``name`` must be reached by all 128 threads of a warpgroup at once."""
    info = intrinsic_info(name)
    return info is not None and info.has(Role.WARPGROUP_COLLECTIVE)


@dataclass(frozen=True)
class _Divergence:
    """Why the code at hand is reached by part of a warpgroup: the condition's place, and
    whether it is an early exit taken under it."""

    loc: ir.Loc
    exit: str = ""  # "return", "break", "continue"


@dataclass(frozen=True)
class WarpgroupDivergence:
    name: str = "warpgroup-divergence"

    def apply(self, program: ir.Program) -> ir.Program:
        reaches = functions_reaching(program, _collective_name)
        if not reaches:
            return program
        uniformity = program_uniformity(program)
        names = {f.symbol: f.python_name for f in program.functions}
        for fn in program.functions:
            _Checker(fn, uniformity, reaches, names).block(fn.body, None)
        return program


def _collective_name(x: ir.Expr) -> str | None:
    return x.name if isinstance(x, ir.Intrinsic) and is_warpgroup_collective(x.name) else None


class _Checker:
    def __init__(self, fn: ir.Function, uniformity: ProgramUniformity, reaches: dict[str, Reach],
                 names: dict[str, str]) -> None:
        self.fn = fn
        self.uniformity = uniformity
        self.reaches = reaches
        self.names = names

    def splits_warpgroups(self, cond: ir.Expr) -> bool:
        return self.uniformity.level(self.fn.symbol, cond) == Uniformity.LANE

    def block(self, stmts: list[ir.Stmt], why: _Divergence | None) -> _Divergence | None:
        """Checks ``stmts``, reached under ``why``; returns the divergence that an early exit
        taken by part of a warpgroup leaves after them (``return``: the rest of the function;
        ``break``, ``continue``: the rest of the loop's body)."""
        left: _Divergence | None = None
        for s in stmts:
            current = why or left
            if current is not None:
                self.check_statement(s, current)
            if isinstance(s, (ir.Return, ir.Break, ir.Continue)):
                if current is not None and left is None:
                    left = _Divergence(current.loc, _EXITS[type(s)])
            elif isinstance(s, ir.If):
                inner = current or (_Divergence(s.cond.loc) if self.splits_warpgroups(s.cond) else None)
                for branch in (s.then, s.orelse):
                    left = left or self.block(branch, inner)
            elif isinstance(s, ir.While):
                inner = current or (_Divergence(s.cond.loc) if self.splits_warpgroups(s.cond) else None)
                after = self.block(s.body + s.step, inner)
                if after is not None and after.exit == "return":
                    left = left or after
            elif isinstance(s, ir.Block):
                left = left or self.block(s.body, current)
        return left

    def check_statement(self, s: ir.Stmt, why: _Divergence) -> None:
        for root in ir.statement_roots(s):
            for x in ir.subexpressions(root):
                if isinstance(x, ir.Intrinsic) and is_warpgroup_collective(x.name):
                    raise IRError(
                        f"ox.{x.name}() is warpgroup-collective: all 128 threads of a warpgroup must reach it "
                        f"together, and this call is {_under(why)}",
                        self.fn.python_name, self.fn.file, x.loc, _HINT, user_error=True)
                if isinstance(x, ir.Call) and x.symbol in self.reaches:
                    file, loc, name = self.reaches[x.symbol]
                    callee = self.names.get(x.symbol, x.symbol)
                    raise IRError(
                        f"{callee}() reaches ox.{name}() (at {file}:{loc.line}:{loc.col}), which is "
                        f"warpgroup-collective, and this call is {_under(why)}",
                        self.fn.python_name, self.fn.file, x.loc,
                        f"call {callee}() where all threads of the warpgroup call it: {_HINT}", user_error=True)


_EXITS: dict[type, str] = {ir.Return: "return", ir.Break: "break", ir.Continue: "continue"}
_HINT = ("branch on values that are the same in a whole warpgroup (ox.warpgroup.id(), thread.idx.x // 128, "
         "thread.idx.x < 128 * k, block and launch values), or move the call out of the branch")


def _under(why: _Divergence) -> str:
    if why.exit:
        return (f"reached after a `{why.exit}` that part of a warpgroup takes (under the condition at line "
                f"{why.loc.line}, which differs within a warpgroup)")
    return f"under a condition that differs within a warpgroup (line {why.loc.line})"
