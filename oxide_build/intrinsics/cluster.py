"""Thread block clusters (sm_90, ``cluster.*``): the blocks a launch with ``cluster=`` groups
together (``k.launch(..., cluster=(2, 1, 1))``, docs/runtime.md).

- ``rank()``: this block's rank in its cluster, 0 to ``num_blocks() - 1`` (``%cluster_ctarank``);
- ``num_blocks()``: the blocks in the cluster (``%cluster_nctarank``);
- ``sync()``: every thread of every block of the cluster arrives and waits
  (``barrier.cluster.arrive`` + ``barrier.cluster.wait``), with release/acquire ordering of
  memory, as ``cooperative_groups::this_cluster().sync()``;
- ``arrive(relaxed=False)`` / ``wait()``: the two halves of ``sync()``, so a block can work
  between them (``arrive`` releases this thread's writes, ``relaxed=True`` orders nothing;
  ``wait`` acquires what the other blocks' threads released before they arrived);
- ``map_shared(arr, rank)``: distributed shared memory: the shared array ``arr`` (or a slice
  of one) of the block ``rank`` of the cluster, as a view of the same shape (``mapa``). Reads
  are checked against the array's length as in ``arr`` itself (the array has the same length
  in every block); writes are inside ``with ox.unsafe():`` (every thread of every block may
  write the other block's array, as any thread may write a global memory array); atomics
  (``ox.atomic.*``) are safe, at device scope (``scope="block"`` is refused: the other block's
  threads are outside it). ``rank`` is checked against ``num_blocks()`` when the view is made.
  The other block must still be running: end a kernel that touches another block's shared
  memory with ``sync()`` (or ``arrive()`` ... ``wait()``);
- ``mbarrier_arrive(bars[k], rank)``: one arrival on barrier ``bars[k]`` of block ``rank``
  (``mbarrier.arrive.release.cluster.shared::cluster``): how a consumer block frees a stage
  that a multicast TMA load (``ox.tma.load(..., multicast=mask)``) of another block fills.

The values of ``rank()`` and ``num_blocks()`` are the same for every thread of a block (a
condition on them is not divergent).

Lowering: ``llvm.nvvm.read.ptx.sreg.cluster.*``, ``llvm.nvvm.barrier.cluster.*`` and
``llvm.nvvm.mapa`` (generic addresses) for LLVM's NVPTX; inline PTX where libNVVM compiles the
module (``mapa.u64``). A mapped view holds a generic address (the ``cluster`` array space), so
its accesses are generic ``ld``/``st``/``atom``, which reach the other block's shared memory on
sm_90; the remote arrive is inline PTX on both (LLVM 22 has no intrinsic of it).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import I32, I64, ArrayType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role
from .mbarrier import barrier_address, barrier_arguments, shared_address32

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "MAX_CLUSTER_BLOCKS", "cluster_rank_argument"]

MAX_CLUSTER_BLOCKS = 16  # sm_90's non-portable maximum
MIN_ARCH = "sm_90"  # IntrinsicInfo.min_arch of every entry here
# op -> (the LLVM intrinsic's register name, the PTX register)
REGISTERS = {"rank": ("ctarank", "%cluster_ctarank"), "num_blocks": ("nctarank", "%cluster_nctarank")}


def _type_register(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], I32, tr.loc(node))


def _lower_register(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    name, register = REGISTERS[info.op]
    if fl.libnvvm:
        return fl.b.asm(ll.FunctionType(ll.IntType(32), []), f"mov.u32 $0, {register};", "=r", [], False)
    fn = fl.intrinsic(f"llvm.nvvm.read.ptx.sreg.cluster.{name}", ll.IntType(32), [])
    return fl.b.call(fn, [])


def _type_sync(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    relaxed = False
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value if k.arg else node, f"oxide.{info.name}() has no keyword {k.arg!r}",
                           "keywords: relaxed" if info.keywords else "it takes no keywords")
        if not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool)):
            raise tr.error(k.value, "relaxed= is True or False, a constant")
        relaxed = k.value.value
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node), options=("relaxed",) if relaxed else ())


def _lower_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    steps = {"sync": ("arrive", "wait"), "arrive": ("arrive.relaxed" if "relaxed" in e.options else "arrive",),
             "wait": ("wait",)}[info.op]
    if fl.libnvvm:
        text = " ".join(f"barrier.cluster.{step};" for step in steps)
        return asm_call(fl, text, "~{memory}", ll.VoidType(), [])
    for step in steps:
        fn = fl.intrinsic(f"llvm.nvvm.barrier.cluster.{step}", ll.VoidType(), [])
        fn.attributes.add("convergent")
        fl.b.call(fn, [])
    return ll.Constant(ll.IntType(32), 0)


def cluster_rank_argument(tr: TypingContext, node: ast.expr, name: str, what: str) -> ir.Expr:
    """A block's rank in the cluster, as an i32: an integer, a constant one from 0 to 15
    (checked here), any one below ``num_blocks()`` (checked at run time unless checks are off:
    another rank addresses no block, and the GPU faults). A failed check is reported like an
    out-of-bounds index and ends the thread."""
    value = tr.materialize(tr.expr(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(node, f"oxide.{name}: the block's rank in the cluster must be an integer, got "
                       f"{type_name(value.ty)}", "ox.cluster.rank() is this block's; (rank + 1) % ox.cluster.num_blocks() "
                       "its neighbour's")
    constant = tr.const_int(node)
    if constant is not None and not 0 <= constant < MAX_CLUSTER_BLOCKS:
        raise tr.error(node, f"oxide.{name}: rank {constant} is outside a cluster, whose ranks are 0 to "
                       f"{MAX_CLUSTER_BLOCKS - 1} (0 to ox.cluster.num_blocks() - 1)")
    rank = tr.convert(value, I64, node)
    if tr.bounds_check:
        loc = tr.loc(node)
        blocks = ir.Cast(ir.Intrinsic("cluster.num_blocks", [], I32, loc), I64, loc)
        site = tr.bounds_site(node, f"the cluster rank {ast.unparse(node)} of {what} (below ox.cluster.num_blocks())")
        rank = ir.Intrinsic("checked_index", [rank, blocks], I64, loc, site)
    return ir.Cast(rank, I32, tr.loc(node))


def _type_map_shared(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    arr = tr.expr(node.args[0])
    ty = arr.ty
    if isinstance(ty, ArrayType) and ty.barrier:
        raise tr.error(node.args[0], f"oxide.{info.name} maps data, and {ast.unparse(node.args[0])!r} holds mbarriers",
                       "arrive on another block's barrier with ox.cluster.mbarrier_arrive(bars[k], rank)")
    if not isinstance(ty, ArrayType) or ty.space != "shared" or ty.fragment is not None:
        raise tr.error(node.args[0], f"oxide.{info.name} maps a shared array of this block (ox.shared.array, "
                       f"ox.shared.dynamic, or a slice of one) to that of another block of the cluster; got "
                       f"{type_name(ty)}",
                       "declare the array with ox.shared.array: every block of the cluster has its own copy")
    rank = cluster_rank_argument(tr, node.args[1], info.name, f"oxide.{info.name}({ast.unparse(node.args[0])}, ...)")
    mapped = ArrayType("cluster", ty.elem, ty.shape, ty.runtime_length, read_only=ty.read_only)
    return ir.Intrinsic(info.name, [arr, rank], mapped, tr.loc(node))


def _lower_map_shared(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The generic address of the mapped array's first element in the other block (its length
    is the source's: ``LoweringContext.view``)."""
    arr, rank = e.args
    assert isinstance(arr.ty, ArrayType)
    b = fl.b
    local = fl.view(arr).ptr
    generic = b.addrspacecast(b.bitcast(local, ll.PointerType(ll.IntType(8), 3)), ll.PointerType(ll.IntType(8)))
    if fl.libnvvm:
        address = b.asm(ll.FunctionType(ll.IntType(64), [ll.IntType(64), ll.IntType(32)]), "mapa.u64 $0, $1, $2;", "=l,l,r",
                        [b.ptrtoint(generic, ll.IntType(64)), fl.expr(rank)], False)
        remote = b.inttoptr(address, ll.PointerType(ll.IntType(8)))
    else:
        fn = fl.intrinsic("llvm.nvvm.mapa", ll.PointerType(ll.IntType(8)), [ll.PointerType(ll.IntType(8)), ll.IntType(32)])
        remote = b.call(fn, [generic, fl.expr(rank)])
    return b.bitcast(remote, ll.PointerType(fl.elem_type(arr.ty.elem)))


def _type_mbarrier_arrive(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    bar = barrier_arguments(tr, node.args[0], info.name)
    rank = cluster_rank_argument(tr, node.args[1], info.name, f"oxide.{info.name}({ast.unparse(node.args[0])}, ...)")
    return ir.Intrinsic(info.name, [*bar, rank], VoidType(), tr.loc(node))


def _lower_mbarrier_arrive(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    bars, index, rank = e.args
    bar = barrier_address(fl, bars, index)
    # the braces keep the register local to this copy of the text
    text = ("{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; "
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; }")
    return asm_call(fl, text, "r,r,~{memory}", ll.VoidType(), [shared_address32(fl, bar), fl.expr(rank)])


ORDERS = frozenset({Role.ORDERS_THREADS})
ENTRIES = [
    IntrinsicInfo("cluster.rank", _type_register, _lower_register, value_range=(0, MAX_CLUSTER_BLOCKS - 1),
                  min_arch=MIN_ARCH),
    IntrinsicInfo("cluster.num_blocks", _type_register, _lower_register, value_range=(1, MAX_CLUSTER_BLOCKS),
                  min_arch=MIN_ARCH),
    IntrinsicInfo("cluster.sync", _type_sync, _lower_sync, convergent=True, min_arch=MIN_ARCH, roles=ORDERS),
    IntrinsicInfo("cluster.arrive", _type_sync, _lower_sync, convergent=True, keywords=("relaxed",), min_arch=MIN_ARCH,
                  roles=ORDERS),
    IntrinsicInfo("cluster.wait", _type_sync, _lower_sync, convergent=True, min_arch=MIN_ARCH, roles=ORDERS),
    IntrinsicInfo("cluster.map_shared", _type_map_shared, _lower_map_shared, min_arch=MIN_ARCH),
    IntrinsicInfo("cluster.mbarrier_arrive", _type_mbarrier_arrive, _lower_mbarrier_arrive, min_arch=MIN_ARCH),
]
