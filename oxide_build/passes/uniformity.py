"""How alike a value is across the threads of a block: the same in every thread, the same in
the 128 threads of each warpgroup, or different with the thread's place inside its warpgroup.
The warpgroup-collective check (``passes/warpgroup_divergence.py``) and the mbarrier lint
(``passes/mbarrier_lint.py``) read conditions through it.

The levels, from the most uniform:

- ``BLOCK``: constants, kernel parameters, ``block.*``, ``grid.*``, ``cluster.*``, block votes
  (``block.sync_or``), memory read at a block-uniform address, and what is computed from those
  only;
- ``WARPGROUP``: ``ox.warpgroup.id()``, ``thread.idx.x // c`` and ``thread.idx.x >> k`` for a
  multiple ``c`` of 128 (``k >= 7``), ``warp.id() // 4``, a comparison of ``thread.idx.x`` with a
  constant multiple of 128 (``thread.idx.x < 128``), ``thread.idx.y`` and ``.z``. This assumes
  the warpgroups are rows of x: ``block.dim.x`` a multiple of 128, or a one-dimensional block;
- ``UNKNOWN``: may differ between threads, nothing says how (inline PTX, ``volatile.load``,
  ``mbarrier.try_wait``): never reported as differing within a warpgroup;
- ``LANE``: differs between the threads of one warpgroup: ``thread.idx.x`` and the thread
  indices, ``warp.lane()``, ``warp.id()``, warp votes and shuffles (one answer per warp, four
  warps to a warpgroup), atomics, clocks,
  ``ldmatrix`` fragments, memory read at such an address, and any value computed from one of
  them in another way than above (``thread.idx.x % 128 < 64``).

A local takes the highest level of the values assigned to it; a device function's parameter
the highest level its callers pass; a call's result the highest level its callee returns.
Control dependence is not followed (a local assigned a constant under a lane-dependent branch
stays ``BLOCK``): the checks built on this miss such cases rather than refuse correct code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from ..intrinsics import Role, intrinsic_info
from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp

__all__ = ["Uniformity", "ProgramUniformity", "program_uniformity"]

WARPGROUP_THREADS = 128


class Uniformity(IntEnum):
    BLOCK = 0
    WARPGROUP = 1
    UNKNOWN = 2
    LANE = 3



@dataclass
class _FunctionFacts:
    levels: dict[str, Uniformity] = field(default_factory=dict)  # locals and parameters
    positions: dict[str, int] = field(default_factory=dict)  # locals equal to linear thread index // stride
    returns: Uniformity = Uniformity.BLOCK


@dataclass
class ProgramUniformity:
    """The levels of every function's locals, grown to a fixed point over the call graph."""

    functions: dict[str, _FunctionFacts] = field(default_factory=dict)

    def level(self, symbol: str, e: ir.Expr) -> Uniformity:
        """How alike ``e``, an expression of function ``symbol``, is across the block."""
        return _Levels(self, self.functions.setdefault(symbol, _FunctionFacts())).level(e)


class _Levels:
    def __init__(self, program: ProgramUniformity, facts: _FunctionFacts) -> None:
        self.program = program
        self.facts = facts

    def level(self, e: ir.Expr) -> Uniformity:
        stride = self.position(e)
        if stride is not None:
            return Uniformity.WARPGROUP if stride % WARPGROUP_THREADS == 0 else Uniformity.LANE
        if isinstance(e, ir.Const):
            return Uniformity.BLOCK
        if isinstance(e, ir.Var):
            return self.facts.levels.get(e.name, Uniformity.BLOCK)
        if isinstance(e, ir.SpecialReg):
            return Uniformity.WARPGROUP if e.name in ("tid.y", "tid.z") else Uniformity.BLOCK
        if isinstance(e, ir.ThreadIndex1D):
            return Uniformity.LANE
        if isinstance(e, ir.Compare):
            positional = self._positional_compare(e)
            if positional is not None:
                return positional
        if isinstance(e, ir.Call):
            callee = self.program.functions.get(e.symbol)
            if callee is not None:  # its parameters carry what its callers pass
                return callee.returns
            return max([Uniformity.UNKNOWN, *(self.level(a) for a in e.args)])  # CUDA C++
        if isinstance(e, ir.Intrinsic):
            info = intrinsic_info(e.name)
            if info is not None and info.has(Role.WARPGROUP_UNIFORM):
                return Uniformity.WARPGROUP
            if info is not None and info.has(Role.BLOCK_UNIFORM):  # the block's answer, the same in every thread
                return Uniformity.BLOCK
            if info is not None and info.has(Role.LANE_VARYING):
                return Uniformity.LANE
            # None: the IR's own checked_index / flat_index, functions of their operands
            floor = Uniformity.UNKNOWN if info is not None and info.thread_dependent else Uniformity.BLOCK
            return max([floor, *(self.level(a) for a in e.args)])
        return max([Uniformity.BLOCK, *(self.level(c) for c in ir.children(e))])

    def position(self, e: ir.Expr) -> int | None:
        """``s`` where ``e`` is the block's linear thread index divided by ``s`` (rounded down)."""
        if isinstance(e, ir.SpecialReg) and e.name == "tid.x":
            return 1
        if isinstance(e, ir.Intrinsic):
            info = intrinsic_info(e.name)
            return info.thread_stride if info is not None else None
        if isinstance(e, ir.Var):
            return self.facts.positions.get(e.name)
        if isinstance(e, ir.Cast) and e.ty.kind in ("int", "uint"):
            return self.position(e.operand)
        if isinstance(e, ir.BinOp) and isinstance(e.right, ir.Const) and isinstance(e.right.value, int) \
                and not isinstance(e.right.value, bool):
            inner = self.position(e.left)
            if inner is not None and e.op == BinaryOp.FLOOR_DIV and e.right.value > 0:
                return inner * e.right.value
            if inner is not None and e.op == BinaryOp.SHR and 0 <= e.right.value < 32:
                return inner << e.right.value
        return None

    def _positional_compare(self, e: ir.Compare) -> Uniformity | None:
        """``thread.idx.x < 128``: a comparison of a thread position with a constant splits the
        block at a thread; the warpgroups are whole on each side when that thread starts one."""
        left, right, op = e.left, e.right, e.op
        if isinstance(left, ir.Const) and not isinstance(right, ir.Const):
            left, right = right, left
            op = {CompareOp.LT: CompareOp.GT, CompareOp.GT: CompareOp.LT, CompareOp.LE: CompareOp.GE,
                  CompareOp.GE: CompareOp.LE}.get(op, op)
        stride = self.position(left)
        if stride is None or not isinstance(right, ir.Const) or isinstance(right.value, (bool, float)):
            return None
        c = int(right.value)
        if op in (CompareOp.LT, CompareOp.GE):
            cuts = [c * stride]
        elif op in (CompareOp.LE, CompareOp.GT):
            cuts = [(c + 1) * stride]
        else:
            cuts = [c * stride, (c + 1) * stride]
        whole = all(cut % WARPGROUP_THREADS == 0 for cut in cuts)
        return Uniformity.WARPGROUP if whole else Uniformity.LANE


def program_uniformity(program: ir.Program) -> ProgramUniformity:
    """The levels of every function's locals, parameters and results."""
    facts = ProgramUniformity({fn.symbol: _FunctionFacts() for fn in program.functions})
    functions = {fn.symbol: fn for fn in program.functions}
    for fn in program.functions:
        facts.functions[fn.symbol].positions = _positions(fn)
    changed = True
    while changed:
        changed = False
        for fn in program.functions:
            changed |= _propagate(fn, functions, facts)
    return facts


def _positions(fn: ir.Function) -> dict[str, int]:
    """Locals assigned once, from a thread position (``tid = thread.idx.x``)."""
    assigned: dict[str, list[ir.Expr]] = {}
    for s in ir.statements(fn.body):
        if isinstance(s, ir.Assign):
            assigned.setdefault(s.name, []).append(s.value)
    positions: dict[str, int] = {}
    levels = _Levels(ProgramUniformity(), _FunctionFacts(positions=positions))
    grew = True
    while grew:
        grew = False
        for name, values in assigned.items():
            if len(values) == 1 and name not in positions and not any(p.name == name for p in fn.params):
                stride = levels.position(values[0])
                if stride is not None:
                    positions[name] = stride
                    grew = True
    return positions


def _propagate(fn: ir.Function, functions: dict[str, ir.Function], program: ProgramUniformity) -> bool:
    """One round over ``fn``: its locals' levels, its result's, and its callees' parameters'.
    True if anything rose."""
    facts = program.functions[fn.symbol]
    levels = _Levels(program, facts)
    grew = False
    for s in ir.statements(fn.body):
        if isinstance(s, ir.Assign):
            level = levels.level(s.value)
            if level > facts.levels.get(s.name, Uniformity.BLOCK):
                facts.levels[s.name] = level
                grew = True
        elif isinstance(s, ir.Return) and s.value is not None:
            level = levels.level(s.value)
            if level > facts.returns:
                facts.returns = level
                grew = True
        for root in ir.statement_roots(s):
            for x in ir.subexpressions(root):
                callee = functions.get(x.symbol) if isinstance(x, ir.Call) else None
                if callee is None or not isinstance(x, ir.Call):
                    continue
                callee_facts = program.functions[callee.symbol]
                for param, arg in zip(callee.params, x.args):
                    level = levels.level(arg)
                    if level > callee_facts.levels.get(param.name, Uniformity.BLOCK):
                        callee_facts.levels[param.name] = level
                        grew = True
    return grew
