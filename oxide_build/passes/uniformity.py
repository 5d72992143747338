"""How alike a value is across the threads of a block: the same in every thread, the same in
the 128 threads of each warpgroup, or different with the thread's place inside its warpgroup.
The one analysis of this over the call graph: the warpgroup-collective check
(``passes/warpgroup_divergence.py``) and the mbarrier lint (``passes/mbarrier_lint.py``) read
conditions through it, the barrier-divergence pass (``passes/divergence.py``) and the
frontend's check of ``block.sync()`` under a condition (``differs_between_threads``) read it in
its operand mode.

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

The operand mode (``by_operands=True``, what a barrier under a condition needs: may the
condition differ at all?) counts a value at least as varying as each of its operands and any
memory read as varying (another thread may write it): a block vote of a lane-dependent
condition, a call of a function that returns a constant with a lane-dependent argument, or a
read at a uniform address, which the levels above call ``BLOCK``, differ there (a block vote's
answer stays the block's, whatever its condition reads); a call of a
function with no body here (CUDA C++) is as varying as its arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from ..intrinsics import Role, has_role, intrinsic_info
from ..ir import nodes as ir
from ..ir.ops import BinaryOp, CompareOp

__all__ = ["Uniformity", "ProgramUniformity", "program_uniformity", "differs_between_threads", "own_floor"]

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
    by_operands: bool = False  # the operand mode (module docstring)

    def level(self, symbol: str, e: ir.Expr) -> Uniformity:
        """How alike ``e``, an expression of function ``symbol``, is across the block."""
        return _Levels(self, self.functions.setdefault(symbol, _FunctionFacts())).level(e)

    def differs(self, symbol: str, e: ir.Expr) -> bool:
        """Whether ``e``, an expression of function ``symbol``, may differ between the threads
        of a block."""
        levels = _Levels(self, self.functions.setdefault(symbol, _FunctionFacts()))
        return levels.differs(e) if self.by_operands else levels.level(e) > Uniformity.BLOCK


_NOTHING: frozenset[str] = frozenset()
_NO_LEVELS: dict[str, Uniformity] = {}
_NO_FUNCTIONS: dict[str, _FunctionFacts] = {}


def own_floor(e: ir.Expr, varying: set[str] | frozenset[str], levels: dict[str, Uniformity],
              functions: dict[str, _FunctionFacts]) -> Uniformity:
    """The operand mode's level of ``e`` itself, before its operands: its own source of
    variation (a thread index, a memory read, a varying intrinsic, a local in ``varying`` or
    of level ``levels``, the result of a callee in ``functions``)."""
    if isinstance(e, ir.Var):
        return Uniformity.LANE if e.name in varying else levels.get(e.name, Uniformity.BLOCK)
    if isinstance(e, (ir.Const, ir.BinOp)):
        return Uniformity.BLOCK
    if isinstance(e, (ir.ThreadIndex1D, ir.ViewLoad)):
        return Uniformity.LANE if isinstance(e, ir.ThreadIndex1D) else Uniformity.UNKNOWN
    if isinstance(e, ir.SpecialReg):
        if e.name == "tid.x":
            return Uniformity.LANE
        return Uniformity.WARPGROUP if e.name in ("tid.y", "tid.z") else Uniformity.BLOCK
    if isinstance(e, ir.Intrinsic):
        info = intrinsic_info(e.name)
        if info is None:
            return Uniformity.BLOCK
        if info.has(Role.LANE_VARYING):
            return Uniformity.LANE
        if info.has(Role.WARPGROUP_UNIFORM):
            return Uniformity.WARPGROUP
        return Uniformity.UNKNOWN if info.thread_dependent else Uniformity.BLOCK
    if isinstance(e, ir.Call):
        callee = functions.get(e.symbol)
        return callee.returns if callee is not None else Uniformity.BLOCK
    return Uniformity.BLOCK


def differs_between_threads(e: ir.Expr, varying: set[str]) -> bool:
    """The operand mode's answer for ``e`` inside one function while it is translated (the
    frontend: its callees are not known yet, their results count as alike as their
    arguments), with the locals ``varying`` known to differ between threads."""
    return _differs(e, varying, _NO_LEVELS, _NO_FUNCTIONS)


def _differs(e: ir.Expr, varying: set[str] | frozenset[str], levels: dict[str, Uniformity],
             functions: dict[str, _FunctionFacts]) -> bool:
    """Whether ``e`` or an operand has a floor above BLOCK; a block vote's operands are not
    looked into (its answer is the block's whatever they read)."""
    block = Uniformity.BLOCK
    todo = [e]
    while todo:
        x = todo.pop()
        if own_floor(x, varying, levels, functions) is not block:
            return True
        if not (isinstance(x, ir.Intrinsic) and has_role(x, Role.BLOCK_UNIFORM)):
            todo.extend(ir.children(x))
    return False


class _Levels:
    def __init__(self, program: ProgramUniformity, facts: _FunctionFacts, varying: set[str] | None = None) -> None:
        self.program = program
        self.facts = facts
        self.by_operands = program.by_operands
        self.varying = varying

    def level(self, e: ir.Expr) -> Uniformity:
        stride = self.position(e)
        if stride is not None:
            return Uniformity.WARPGROUP if stride % WARPGROUP_THREADS == 0 else Uniformity.LANE
        if isinstance(e, ir.Const):
            return Uniformity.BLOCK
        if isinstance(e, ir.Var):
            if self.varying is not None and e.name in self.varying:
                return Uniformity.LANE
            return self.facts.levels.get(e.name, Uniformity.BLOCK)
        if self.by_operands:
            return self._operand_level(e)
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

    def floor(self, e: ir.Expr) -> Uniformity:
        """The operand mode's level of ``e`` itself, before its operands (``own_floor``)."""
        return own_floor(e, self.varying or _NOTHING, self.facts.levels, self.program.functions)

    def differs(self, e: ir.Expr) -> bool:
        """The operand mode's question: does ``e`` or an operand of it vary at all? (A thread
        position, or a comparison of one, has a varying leaf: the levels need not be
        ranked for this.)"""
        return _differs(e, self.varying or _NOTHING, self.facts.levels, self.program.functions)

    def _operand_level(self, e: ir.Expr) -> Uniformity:
        """The operand mode: ``e``'s floor, raised to each operand's level."""
        if isinstance(e, ir.Compare):
            positional = self._positional_compare(e)
            if positional is not None:
                return positional
        floor = self.floor(e)
        if isinstance(e, ir.Intrinsic) and has_role(e, Role.BLOCK_UNIFORM):
            return floor  # the block's answer, whatever its operands read
        for c in ir.children(e):
            if floor == Uniformity.LANE:
                break
            floor = max(floor, self.level(c))
        return floor

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


def program_uniformity(program: ir.Program, by_operands: bool = False) -> ProgramUniformity:
    """The levels of every function's locals, parameters and results (``by_operands``: in the
    operand mode)."""
    facts = ProgramUniformity({fn.symbol: _FunctionFacts() for fn in program.functions}, by_operands)
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
