"""Thread intrinsics: ``thread.index_1d()``, ``thread.index_2d()``, ``block.sync()``,
``grid.sync()``, and the special registers ``thread.idx``, ``block.idx``, ``block.dim``,
``grid.dim`` (``.x/.y/.z``).

These are typed into IR nodes of their own, not ``ir.Intrinsic``: a thread index is an
``ir.ThreadIndex1D`` (its type carries the disjointness the views check), ``block.sync()`` is
the call of ``llvm.nvvm.barrier0`` that the barrier-divergence pass looks for, and a special
register is an ``ir.SpecialReg`` (an attribute, not a call: the frontend reads
``SPECIAL_REGISTERS``). lower/llvm.py lowers those nodes, so these entries' lowering is never
reached.

``grid.sync()`` is an ``ir.Intrinsic`` lowered here: a barrier of every thread of the grid, as
cooperative groups' ``grid.sync()`` does it. The driver offers none by itself; a kernel that
reaches it is marked cooperative in its manifest (``passes/divergence.py``), so the
runtime launches it with all blocks resident at once (or refuses a grid that does not fit).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import BOOL, I32, THREAD_INDEX, VOID, ThreadIndexType, TupleType
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "SPECIAL_REGISTERS", "BARRIER", "GRID_SYNC"]

# (namespace, attribute) -> the PTX special register it reads, with ``.x/.y/.z`` appended
SPECIAL_REGISTERS = {
    ("thread", "idx"): "tid", ("block", "idx"): "ctaid", ("block", "dim"): "ntid", ("grid", "dim"): "nctaid",
}
BARRIER = "llvm.nvvm.barrier0"  # what block.sync() is in the IR
GRID_SYNC = "grid.sync"  # the ir.Intrinsic grid.sync() is
# barriers that also reduce a predicate over the block: __syncthreads_count / _and / _or
BLOCK_VOTES = {"block.sync_count": "llvm.nvvm.barrier0.popc", "block.sync_and": "llvm.nvvm.barrier0.and",
               "block.sync_or": "llvm.nvvm.barrier0.or"}
# the grid barrier's counter: one per loaded module (the runtime orders the cooperative launches
# of a module's kernels in a context one after the other, so no two use it at once)
GRID_BARRIER_COUNTER = "__oxide_grid_barrier"


def _no_arguments(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> None:
    if node.args:
        raise tr.error(node, f"{info.name}() takes no arguments")


def _type_index_1d(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    return ir.ThreadIndex1D(THREAD_INDEX, tr.loc(node))


def _type_index_2d(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    loc = tr.loc(node)
    row, col = ThreadIndexType("row"), ThreadIndexType("col")
    return ir.MakeTuple([ir.ThreadIndex1D(row, loc), ir.ThreadIndex1D(col, loc)], TupleType((row, col)), loc)


def _type_index_3d(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    loc = tr.loc(node)
    axes = (ThreadIndexType("depth"), ThreadIndexType("row"), ThreadIndexType("col"))
    return ir.MakeTuple([ir.ThreadIndex1D(a, loc) for a in axes], TupleType(axes), loc)


# a condition that is the same in every thread but read from memory (thread 0's flag in shared
# memory, after a barrier) looks thread-dependent: a block vote makes it one value for the block
UNIFORM_HINT = ("; if every thread sees the same condition (a flag one thread wrote to shared memory before a "
                "barrier), test it through a block vote, which every thread gets alike: "
                "`if block.sync_or(flag[0]):`")


def _type_sync(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    if tr.divergent_depth:
        raise tr.error(node, "block.sync() under a condition that differs between threads "
                       "can deadlock the block",
                       "move block.sync() out of the branch or loop so every thread reaches it" + UNIFORM_HINT)
    return ir.Call(BARRIER, [], VOID, tr.loc(node))


def _type_block_vote(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """``block.sync_count(p)``: a block barrier that also counts the threads whose ``p`` is
    true (``__syncthreads_count``); ``sync_and`` / ``sync_or`` say whether all / any are."""
    if len(node.args) != 1 or node.keywords:
        raise tr.error(node, f"{info.name}() takes one predicate", f"write {info.name}(x > 0)")
    if tr.divergent_depth:
        raise tr.error(node, f"{info.name}() under a condition that differs between threads "
                       "can deadlock the block",
                       f"move {info.name}() out of the branch or loop so every thread reaches it" + UNIFORM_HINT)
    pred = tr.truth(tr.expr(node.args[0]), node.args[0])
    return ir.Intrinsic(info.name, [pred], I32 if info.name == "block.sync_count" else BOOL, tr.loc(node))


def _lower_block_vote(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    pred = fl.b.zext(fl.expr(e.args[0]), ll.IntType(32))
    result = fl.b.call(fl.intrinsic(BLOCK_VOTES[info.name], ll.IntType(32), [ll.IntType(32)]), [pred])
    if info.name == "block.sync_count":
        return result
    return fl.b.icmp_unsigned("!=", result, ll.Constant(ll.IntType(32), 0))


def _cpu_block_vote(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: the scheduler's barrier counts the threads whose predicate holds."""
    b = fl.b
    i32 = ll.IntType(32)
    pred = b.zext(fl.expr(e.args[0]), i32)
    count = b.call(fl.cpu_runtime("oxide_cpu_block_vote"), [fl.sync_site(e.loc), pred])
    if info.name == "block.sync_count":
        return count
    if info.name == "block.sync_or":
        return b.icmp_unsigned("!=", count, ll.Constant(i32, 0))
    threads = b.mul(b.mul(fl.sreg("ntid.x"), fl.sreg("ntid.y")), fl.sreg("ntid.z"))
    return b.icmp_unsigned("==", count, threads)


def _cpu_grid_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: a cooperative launch runs every thread of the grid as a fiber, and the
    scheduler's grid barrier waits for all of them."""
    fl.b.call(fl.cpu_runtime("oxide_cpu_grid_sync"), [fl.sync_site(e.loc)])
    return ll.Constant(ll.IntType(32), 0)


def _type_grid_sync(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    _no_arguments(tr, info, node)
    if tr.divergent_depth:
        raise tr.error(node, "grid.sync() under a condition that differs between threads can "
                       "deadlock the grid",
                       "move grid.sync() out of the branch or loop so every thread of every block reaches it")
    return ir.Intrinsic(info.name, [], VOID, tr.loc(node))


def _lower_grid_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """Cooperative groups' grid barrier (``sync_grids``): after a block barrier, thread 0 of
    each block adds to a counter in global memory, block (0, 0, 0) adds
    ``0x80000000 - (blocks - 1)`` and every other block 1, so once all have arrived the sum is
    ``0x80000000``: the counter's top bit has flipped and its low bits are back where they
    were. Thread 0 waits for the flip; then a block barrier releases its block. The counter
    needs no reset between barriers or launches.

    The ordering is cooperative groups' on sm_70 and later: the add is a release at GPU scope
    (``atom.add.release.gpu``: ``MEMBAR.ALL.GPU`` before the ``ATOM``) and each poll an acquire
    at GPU scope (``ld.acquire.gpu``: ``LD.E.STRONG.GPU``, each read reaching the L2, then
    ``CCTL.IVALL``); the acquire read that sees the flip synchronizes with every block's release
    (PTX memory model: release and acquire patterns through morally strong operations at GPU
    scope), and the block barriers carry that to the rest of each block. No fence follows the
    wait: a second ``MEMBAR.ALL.GPU`` there cost about 0.3 us a barrier on the H200
    (sequential_rows' 1023 barriers). Inline PTX, so both backends emit the same (libNVVM's
    LLVM 7 has no scoped atomics)."""
    b = fl.b
    module = fl.module
    counter = module.globals.get(GRID_BARRIER_COUNTER)
    if counter is None:
        counter = ll.GlobalVariable(module, ll.IntType(32), GRID_BARRIER_COUNTER, addrspace=1)
        counter.linkage = "internal"
        counter.initializer = ll.Constant(ll.IntType(32), 0)
        counter.align = 4
    i32 = ll.IntType(32)
    barrier = fl.intrinsic(BARRIER, ll.VoidType(), [])
    arrive_add = ll.InlineAsm(ll.FunctionType(i32, [counter.type, i32]), "atom.add.release.gpu.global.u32 $0, [$1], $2;",
                              "=r,l,r,~{memory}", side_effect=True)
    poll = ll.InlineAsm(ll.FunctionType(i32, [counter.type]), "ld.acquire.gpu.global.u32 $0, [$1];",
                        "=r,l,~{memory}", side_effect=True)
    b.call(barrier, [])
    tid = b.or_(b.or_(fl.sreg("tid.x"), fl.sreg("tid.y")), fl.sreg("tid.z"))
    arrive = fl.llfn.append_basic_block("grid.sync.arrive")
    wait = fl.llfn.append_basic_block("grid.sync.wait")
    done = fl.llfn.append_basic_block("grid.sync.done")
    b.cbranch(b.icmp_unsigned("==", tid, ll.Constant(i32, 0)), arrive, done)
    b.position_at_end(arrive)
    blocks = b.mul(b.mul(fl.sreg("nctaid.x"), fl.sreg("nctaid.y")), fl.sreg("nctaid.z"))
    first_block = b.icmp_unsigned("==", b.or_(b.or_(fl.sreg("ctaid.x"), fl.sreg("ctaid.y")), fl.sreg("ctaid.z")),
                                  ll.Constant(i32, 0))
    top = ll.Constant(i32, 0x80000000)
    add = b.select(first_block, b.sub(top, b.sub(blocks, ll.Constant(i32, 1))), ll.Constant(i32, 1))
    old = b.call(arrive_add, [counter, add])
    b.branch(wait)
    b.position_at_end(wait)
    now = b.call(poll, [counter])
    flipped = b.icmp_unsigned("!=", b.and_(b.xor(old, now), top), ll.Constant(i32, 0))
    b.cbranch(flipped, done, wait)
    b.position_at_end(done)
    b.call(barrier, [])
    return ll.Constant(i32, 0)


def _lowered_as_ir_node(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is typed into an IR node of its own, which lower/llvm.py lowers")


LANE = frozenset({Role.LANE_VARYING})
ENTRIES = [
    IntrinsicInfo("thread.index_1d", _type_index_1d, _lowered_as_ir_node, thread_dependent=True, roles=LANE),
    IntrinsicInfo("thread.index_2d", _type_index_2d, _lowered_as_ir_node, thread_dependent=True, roles=LANE),
    IntrinsicInfo("thread.index_3d", _type_index_3d, _lowered_as_ir_node, thread_dependent=True, roles=LANE),
    # block.sync() is an ir.Call of BARRIER in the IR (the passes know that one by its symbol)
    IntrinsicInfo("block.sync", _type_sync, _lowered_as_ir_node, convergent=True, roles=frozenset({Role.ORDERS_THREADS})),
    IntrinsicInfo(GRID_SYNC, _type_grid_sync, _lower_grid_sync, convergent=True,
                  roles=frozenset({Role.GRID_BARRIER, Role.ORDERS_THREADS}), cpu_lowering=_cpu_grid_sync),
    # a block vote is a barrier, and its answer is the block's
    *(IntrinsicInfo(name, _type_block_vote, _lower_block_vote, convergent=True,
                    roles=frozenset({Role.BLOCK_BARRIER, Role.ORDERS_THREADS, Role.BLOCK_UNIFORM}),
                    cpu_lowering=_cpu_block_vote)
      for name in BLOCK_VOTES),
]
