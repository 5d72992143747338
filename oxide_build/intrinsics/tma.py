"""The Tensor Memory Accelerator (sm_90, ``tma.*``): copies of whole boxes of a tensor between
global and shared memory, described by a tensor map the host built
(``oxide.tma.descriptor(tensor, box=...)``) and passed as an ``ox.tma.Descriptor[T, N]``
parameter.

- ``load(desc, bar, dst, c0, ..., cN-1)``: one box of ``desc`` whose first element is at the
  coordinates ``c0`` ... ``cN-1``, outermost first as the box and the array's shape are (the
  last is the column), into the shared array (or shared slice) ``dst``;
  the barrier ``bar`` (``bars[k]``) counts its bytes as they land (give them to it with
  ``mbarrier.arrive_expect_tx``). Elements of the box outside the tensor read as zero.
  ``multicast=mask``: the box goes to ``dst`` of every block of the cluster whose bit is set
  (``.multicast::cluster``), each block's barrier at ``bar``'s offset counting its bytes; a
  mask naming a block outside the cluster is refused like a box that does not fit.
- ``store(desc, src, c0, ...)``: one box from shared memory into the tensor (elements outside
  it are not written); ``store_commit()`` closes the stores issued so far into a group and
  ``store_wait(n)`` waits until at most ``n`` groups are unfinished. Writes memory other
  threads may read: inside ``with ox.unsafe():``.
- ``prefetch(desc, c0, ...)``: brings the box into L2.
- ``box_bytes(desc)`` / ``box_elements(desc)``: the size of one box (what a load's barrier
  must expect); ``swizzle(desc)``: the map's swizzle in bytes (0, 32, 64, 128).

The innermost coordinate must be a multiple of 16 bytes (the GPU faults otherwise, and the
context is lost): checked when compiling if constant, else at run time like the box's fit.
The box must fit in ``dst``/``src`` (checked at run time against the array's or slice's length
unless bounds checks are off: the box's size is the host's, passed with the map), and a shared
array declared with a swizzle (``ox.shared.array(..., swizzle=128)``) must get a map of that
swizzle (also checked at run time: the swizzle travels with the box size). A box that
does not fit is not copied and is reported as ``oxide.KernelError``; the thread goes on, and a
load's bytes count as arrived on its barrier, so no thread waits forever for them. Shared
memory a TMA copy touches is aligned to 128 bytes: the lowering raises the alignment of the
array it names; an offset into it (a slice ``smem[k:]``) must keep that alignment (checked when
compiling if constant, else at run time on the address).

Lowering: ``llvm.nvvm.cp.async.bulk.tensor.*`` for LLVM's NVPTX; inline PTX where libNVVM
compiles the module.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Sequence

from oxide.abi.params import TENSOR_MAP_SWIZZLE_SHIFT

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import I32, I64, ArrayType, TensorMapType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call, instruction_call
from .entry import IntrinsicInfo, Role
from .cluster import MAX_CLUSTER_BLOCKS
from .mbarrier import barrier_address, barrier_arguments, shared_address32

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "TMA_SHARED_ALIGNMENT"]

TMA_SHARED_ALIGNMENT = 128  # cp.async.bulk.tensor's shared-memory operand
MIN_ARCH = "sm_90"  # IntrinsicInfo.min_arch of every entry here


def _descriptor(tr: TypingContext, node: ast.expr, name: str) -> ir.Expr:
    desc = tr.expr(node)
    if not isinstance(desc.ty, TensorMapType):
        raise tr.error(node, f"oxide.{name} takes a TMA descriptor (a parameter of type ox.tma.Descriptor[T, N]), "
                       f"got {type_name(desc.ty)}",
                       "build it on the host with oxide.tma.descriptor(tensor, box=(rows, cols)) and pass it")
    if not isinstance(desc, ir.Var):
        raise tr.error(node, f"oxide.{name} takes the descriptor parameter itself")
    return desc


def _coordinates(tr: TypingContext, nodes: list[ast.expr], desc: ir.Expr, node: ast.Call, name: str) -> list[ir.Expr]:
    assert isinstance(desc.ty, TensorMapType)
    if len(nodes) != desc.ty.ndim:
        raise tr.error(node, f"oxide.{name} of a {desc.ty.ndim}-d descriptor takes {desc.ty.ndim} coordinate(s), "
                       f"got {len(nodes)}", "the coordinates of the box's first element, outermost first")
    out = []
    for c in nodes:
        value = tr.materialize(tr.expr(c))
        st = as_scalar(value.ty)
        if st is None or st.kind not in ("int", "uint"):
            raise tr.error(c, f"a TMA coordinate must be an integer, got {type_name(value.ty)}")
        out.append(tr.convert(value, I32, c))  # signed: a box may start before the tensor (zero-filled)
    return [_alignment_check(tr, nodes[-1], out[-1], desc, name), *out]


def _alignment_check(tr: TypingContext, node: ast.expr, inner: ir.Expr, desc: ir.Expr, name: str) -> ir.Expr:
    """TMA starts a box only at a multiple of 16 bytes along the innermost dimension (the GPU
    raises an illegal-instruction fault otherwise, which ends the context): a constant
    coordinate is checked here, another at run time (``_if_copy_allowed``) unless checks are
    off. The check's operands are only its shape: the lowering tests the coordinate's value it
    already has, so the coordinate is evaluated once."""
    assert isinstance(desc.ty, TensorMapType)
    size = desc.ty.elem.itemsize
    loc = tr.loc(node)
    constant = tr.const_int(node)
    if constant is not None:
        if constant * size % 16:
            raise tr.error(node, f"oxide.{name}: the innermost coordinate {constant} is {constant * size} bytes "
                           f"into a row; a TMA box starts at a multiple of 16 bytes ({16 // size} {desc.ty.elem.name} "
                           "elements) along the innermost dimension")
        return ir.Const(0, I64, loc)
    if not tr.bounds_check:
        return ir.Const(0, I64, loc)
    offset = ir.BinOp(BinaryOp.MUL, ir.Cast(inner, I64, loc), ir.Const(size, I64, loc), I64, loc)
    remainder = ir.BinOp(BinaryOp.BIT_AND, offset, ir.Const(15, I64, loc), I64, loc)
    site = tr.bounds_site(node, f"the innermost coordinate {ast.unparse(node)} of oxide.{name}: its byte offset "
                                     "modulo 16 (a box starts at a multiple of 16 bytes)")
    return ir.Intrinsic("checked_index", [remainder, ir.Const(1, I64, loc)], I64, loc, site)


def _shared_tile(tr: TypingContext, node: ast.expr, desc: ir.Expr, name: str, role: str) -> list[ir.Expr]:
    """The shared array (or slice) a box goes to or comes from, the check that one box of
    ``desc`` fits in it, and, for an array declared with a swizzle, the check that the map has
    that swizzle (a box landing in another layout than the one its readers assume is wrong data
    without a fault)."""
    assert isinstance(desc.ty, TensorMapType)
    tile = tr.expr(node)
    if not isinstance(tile.ty, ArrayType) or tile.ty.space != "shared" or tile.ty.barrier or tile.ty.fragment:
        raise tr.error(node, f"oxide.{name} {role} a shared array (ox.shared.array / ox.shared.dynamic, or a slice "
                       f"of one), got {type_name(tile.ty)}")
    if tile.ty.elem != desc.ty.elem:
        raise tr.error(node, f"oxide.{name}: the descriptor has {desc.ty.elem.name} elements, the shared array "
                       f"{tile.ty.elem.name}", "declare the shared array with the descriptor's element type")
    loc = tr.loc(node)
    assert isinstance(desc, ir.Var)
    aligned = _address_check(tr, node, tile, desc, name)
    if not tr.bounds_check:
        return [tile, ir.Const(0, I64, loc), ir.Const(0, I64, loc), aligned]
    fits: ir.Expr = ir.Const(0, I64, loc)
    if not tile.ty.dynamic:
        length: ir.Expr = (ir.ViewLen(tile, I64, loc) if tile.ty.runtime_length
                           else ir.Const(tile.ty.size if tile.ty.size is not None else 1 << 62, I64, loc))
        box = ir.Intrinsic("tma.box_elements", [desc], I64, loc)
        last = ir.BinOp(BinaryOp.SUB, box, ir.Const(1, I64, loc), I64, loc)
        site = tr.bounds_site(node, f"one box of {desc.name} in {ast.unparse(node)}")
        fits = ir.Intrinsic("checked_index", [last, length], I64, loc, site)
    same_layout: ir.Expr = ir.Const(0, I64, loc)
    swizzle = getattr(tile.ty, "swizzle", 0)
    if swizzle:
        differs = ir.BinOp(BinaryOp.BIT_XOR, ir.Intrinsic("tma.swizzle", [desc], I64, loc), ir.Const(swizzle, I64, loc),
                           I64, loc)
        site = tr.bounds_site(node, f"the swizzle of {desc.name} (oxide.tma.descriptor(..., swizzle=)) XOR the "
                                         f"{swizzle} bytes {ast.unparse(node)} is declared with (they must be equal)")
        same_layout = ir.Intrinsic("checked_index", [differs, ir.Const(1, I64, loc)], I64, loc, site)
    return [tile, fits, same_layout, aligned]


def _address_check(tr: TypingContext, node: ast.expr, tile: ir.Expr, desc: ir.Expr, name: str) -> ir.Expr:
    """TMA's shared operand is 128-byte aligned (the GPU faults otherwise, ending the context).
    A whole static array is (the lowering aligns it); a slice at constant offsets is checked
    here; any other (a slice at a run-time offset, a view in a local, dynamic shared memory) at
    run time on the address itself (``_if_copy_allowed``), unless checks are off. The check's
    operands are only a carrier of its error site: the lowering tests the address it has."""
    loc = tr.loc(node)
    offset, base = 0, tile
    while isinstance(base, ir.ViewSlice) and isinstance(base.start, ir.Const):
        offset += int(base.start.value)
        base = base.view
    whole = isinstance(base, ir.Var) and isinstance(base.ty, ArrayType) and base.ty.size is not None \
        and not base.ty.runtime_length and base.name in tr.declared_arrays
    assert isinstance(tile.ty, ArrayType)
    if whole:
        size = tile.ty.elem.itemsize
        if offset * size % TMA_SHARED_ALIGNMENT:
            raise tr.error(node, f"oxide.{name}: {ast.unparse(node)} starts {offset * size} bytes into its array; TMA's "
                           f"shared memory starts at a multiple of {TMA_SHARED_ALIGNMENT} bytes "
                           f"({TMA_SHARED_ALIGNMENT // size} {tile.ty.elem.name} elements)")
        return ir.Const(0, I64, loc)
    if not tr.bounds_check:
        return ir.Const(0, I64, loc)
    carrier = ir.BinOp(BinaryOp.BIT_AND, ir.Intrinsic("tma.box_elements", [desc], I64, loc),
                       ir.Const(TMA_SHARED_ALIGNMENT - 1, I64, loc), I64, loc)
    site = tr.bounds_site(node, f"the shared address of {ast.unparse(node)} for oxide.{name}, modulo "
                                     f"{TMA_SHARED_ALIGNMENT} (a multiple of {TMA_SHARED_ALIGNMENT} bytes)")
    return ir.Intrinsic("checked_index", [carrier, ir.Const(1, I64, loc)], I64, loc, site)


def _raise_alignment(ptr: ll.Value) -> None:
    """Raises the alignment of the shared array ``ptr`` points into to what TMA needs."""
    value = ptr
    for _ in range(16):
        if isinstance(value, ll.GlobalVariable):
            value.align = max(value.align or 0, TMA_SHARED_ALIGNMENT)
            return
        operands = getattr(value, "operands", None)
        if not operands:
            return
        value = operands[0]


def _tile_address(fl: LoweringContext, tile: ir.Expr) -> ll.Value:
    view = fl.view(tile)
    _raise_alignment(view.ptr)
    return view.ptr


def _remains(check: ir.Expr) -> bool:
    return isinstance(check, ir.Intrinsic) and check.name == "checked_index" and check.check_site is not None


def _if_copy_allowed(fl: LoweringContext, tile_checks: list[ir.Expr], aligned: list[tuple[ir.Expr, ll.Value, int]],
                     evaluated: Sequence[tuple[ir.Expr, ll.Value, ll.Value]] = ()) -> tuple[ll.Block, ll.Block] | None:
    """Lowers the checks the bounds pass kept (``checked_index``): those of the shared tile
    evaluated as written (``_shared_tile``: one box fits, the layout is the map's), and those
    ``aligned`` lists as (check, value, modulus): the value (the innermost coordinate's byte
    offset, the shared address) a multiple of the modulus, the check only giving the site, and
    those ``evaluated`` lists as (check, index, bound) lowered already (a multicast mask). The copy goes
    on in the first block returned; the second is the failure path, reached once the failed
    check is recorded for the host (``KernelError``), where the thread goes on: it may be the
    one that arrives on or fills a barrier other threads wait for, so ending it would hang them.
    None when no check remains (proven, or checks off)."""
    remaining = [c for c in tile_checks if _remains(c)]
    alignments = [(c, value, modulus) for c, value, modulus in aligned if _remains(c)]
    if not remaining and not alignments and not evaluated:
        return None
    b = fl.b
    report = fl.fail_function(ends_thread=False)
    failed = fl.llfn.append_basic_block("tma.refused")
    conditions: list[tuple[int, ll.Value, ll.Value, ll.Value]] = []  # site, ok, index, length
    for check in remaining:
        assert isinstance(check, ir.Intrinsic) and check.check_site is not None
        index, length = (fl.expr(a) for a in check.args)
        conditions.append((check.check_site, b.icmp_unsigned("<", index, length), index, length))
    for check, index, length in evaluated:
        assert isinstance(check, ir.Intrinsic) and check.check_site is not None
        conditions.append((check.check_site, b.icmp_unsigned("<", index, length), index, length))
    for check, value, modulus in alignments:
        assert isinstance(check, ir.Intrinsic) and check.check_site is not None
        remainder = b.and_(value, ll.Constant(ll.IntType(64), modulus - 1))
        conditions.append((check.check_site, b.icmp_unsigned("==", remainder, ll.Constant(ll.IntType(64), 0)),
                           remainder, ll.Constant(ll.IntType(64), 1)))
    for site, ok, index, length in conditions:
        passed = fl.llfn.append_basic_block("tma.checked")
        refused = fl.llfn.append_basic_block("tma.report")
        fl.branch_weights(b.cbranch(ok, passed, refused), [1 << 20, 1])
        b.position_at_end(refused)
        b.call(report, [ll.Constant(ll.IntType(64), site), index, length])
        b.branch(failed)
        b.position_at_end(passed)
    return b.block, failed


def _coordinate_offset(fl: LoweringContext, check: ir.Expr, inner: ll.Value, desc: ir.Expr
                       ) -> tuple[ir.Expr, ll.Value, int]:
    """The alignment check of the innermost coordinate ``inner``: its byte offset, on 16 bytes."""
    assert isinstance(desc.ty, TensorMapType)
    if not _remains(check):
        return check, inner, 16
    return check, fl.b.mul(fl.b.sext(inner, ll.IntType(64)), ll.Constant(ll.IntType(64), desc.ty.elem.itemsize)), 16


def _join(fl: LoweringContext, blocks: tuple[ll.Block, ll.Block] | None) -> None:
    """Ends the copy and the failure path of ``_if_copy_allowed`` in one block."""
    if blocks is None:
        return
    b = fl.b
    end = fl.llfn.append_basic_block("tma.end")
    b.branch(end)
    b.position_at_end(blocks[1])
    b.branch(end)
    b.position_at_end(end)


def _type_load(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if len(node.args) < 4:
        raise tr.error(node, "oxide.tma.load takes (desc, bar, dst, c0, ...): the descriptor, the barrier, the shared "
                       f"array and one coordinate per dimension; got {len(node.args)} argument(s)")
    mask_node = None
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value if k.arg else node, f"oxide.{info.name}() has no keyword {k.arg!r}",
                           "keywords: multicast")
        mask_node = k.value
    desc = _descriptor(tr, node.args[0], info.name)
    bar = barrier_arguments(tr, node.args[1], info.name)
    tile = _shared_tile(tr, node.args[2], desc, info.name, "writes")
    coords = _coordinates(tr, node.args[3:], desc, node, info.name)
    if mask_node is None:
        return ir.Intrinsic(info.name, [desc, *bar, *tile, *coords], VoidType(), tr.loc(node))
    # the mask last and an option naming it: the arguments of a load without one stay as they were
    mask = _multicast_mask(tr, mask_node, info.name)
    return ir.Intrinsic(info.name, [desc, *bar, *tile, *coords, mask], VoidType(), tr.loc(node), options=("multicast",))


def _multicast_mask(tr: TypingContext, node: ast.expr, name: str) -> ir.Expr:
    """``multicast=mask``: bit r sends the box to block r of the cluster (the same shared
    offset, the same barrier offset there). An integer; a constant one from 1 to 0xFFFF
    (checked here); any one naming only blocks of the cluster, ``1 <= mask < 1 << num_blocks()``
    (checked at run time unless checks are off, in ``_if_copy_allowed``: refused and reported,
    the bytes counted on the barriers of the blocks it names and of the issuing block)."""
    value = tr.materialize(tr.expr(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(node, f"oxide.{name}: multicast= is a mask of the cluster's blocks, an integer, got "
                       f"{type_name(value.ty)}", "bit r sends the box to block r: (1 << ox.cluster.num_blocks()) - 1 "
                       "for all of them")
    constant = tr.const_int(node)
    if constant is not None and not 1 <= constant < (1 << MAX_CLUSTER_BLOCKS):
        raise tr.error(node, f"oxide.{name}: multicast={constant} names no block of a cluster; the mask is from 1 to "
                       f"0x{(1 << MAX_CLUSTER_BLOCKS) - 1:X} (bit r: block r)")
    mask = tr.convert(value, I64, node)
    loc = tr.loc(node)
    if not tr.bounds_check:
        return mask
    blocks = ir.Cast(ir.Intrinsic("cluster.num_blocks", [], I32, loc), I64, loc)
    limit = ir.BinOp(BinaryOp.SUB, ir.BinOp(BinaryOp.SHL, ir.Const(1, I64, loc), blocks, I64, loc),
                     ir.Const(1, I64, loc), I64, loc)
    site = tr.bounds_site(node, f"the multicast mask {ast.unparse(node)} of oxide.{name}, minus 1 (from 1 to "
                                     "(1 << ox.cluster.num_blocks()) - 1)")
    return ir.Intrinsic("checked_index", [ir.BinOp(BinaryOp.SUB, mask, ir.Const(1, I64, loc), I64, loc), limit],
                        I64, loc, site)


def _multicast_mask_value(fl: LoweringContext, mask: ir.Expr) -> tuple[ll.Value, list[tuple[ir.Expr, ll.Value, ll.Value]]]:
    """The mask's value, evaluated once, and its check for ``_if_copy_allowed`` as (check,
    index, bound): ``_multicast_mask``'s check carries mask - 1 (its bound is never a constant,
    so the bounds pass keeps it as written)."""
    if _remains(mask):
        assert isinstance(mask, ir.Intrinsic)
        below, limit = (fl.expr(a) for a in mask.args)
        return fl.b.add(below, ll.Constant(ll.IntType(64), 1)), [(mask, below, limit)]
    return fl.expr(mask), []


def _complete_multicast_bytes(fl: LoweringContext, bar: ll.Value, nbytes: ll.Value, mask: ll.Value) -> None:
    """A refused multicast load: its bytes counted as arrived on the barrier of each block of
    ``mask`` that exists, and on this block's (a mask naming no block of the cluster still
    frees the issuing block), so none of them waits forever for the box."""
    b = fl.b
    blocks = b.asm(ll.FunctionType(ll.IntType(32), []), "mov.u32 $0, %cluster_nctarank;", "=r", [], False)
    own = b.asm(ll.FunctionType(ll.IntType(32), []), "mov.u32 $0, %cluster_ctarank;", "=r", [], False)
    existing = b.sub(b.shl(ll.Constant(ll.IntType(32), 1), blocks), ll.Constant(ll.IntType(32), 1))
    ranks = b.or_(b.and_(b.trunc(mask, ll.IntType(32)), existing), b.shl(ll.Constant(ll.IntType(32), 1), own))
    steps = " ".join(f"and.b32 bit, $2, {1 << r}; setp.ne.u32 p, bit, 0; @p mapa.shared::cluster.u32 remote, $0, {r}; "
                     "@p mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [remote], $1;"
                     for r in range(MAX_CLUSTER_BLOCKS))
    asm_call(fl, "{ .reg .pred p; .reg .b32 bit, remote; " + steps + " }", "r,r,r,~{memory}", ll.VoidType(),
             [shared_address32(fl, bar), nbytes, ranks])


def _lower_load(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    multicast = "multicast" in e.options
    desc, bars, index, tile, fits, same_layout, aligned, align, *coords = e.args[:-1] if multicast else e.args
    mask, mask_checks = _multicast_mask_value(fl, e.args[-1]) if multicast else (None, [])
    b = fl.b
    dst = _tile_address(fl, tile)
    bar = barrier_address(fl, bars, index)
    tmap, packed = fl.tensor_map(desc)
    assert isinstance(desc.ty, TensorMapType)
    cs = [fl.expr(c) for c in coords][::-1]  # PTX lists them innermost first
    n = len(cs)
    blocks = _if_copy_allowed(fl, [fits, same_layout], [_coordinate_offset(fl, align, cs[0], desc),
                                                         (aligned, b.ptrtoint(dst, ll.IntType(64)), TMA_SHARED_ALIGNMENT)],
                              mask_checks)
    if blocks is not None:
        # refused (the box does not fit, another layout, a misaligned start, a mask naming no
        # block or one outside the cluster): no copy, but its bytes are counted as arrived, so
        # the threads waiting for this phase go on (and the host raises the recorded error)
        with b.goto_block(blocks[1]):
            nbytes = b.trunc(b.mul(_box_elements(fl, packed), ll.Constant(ll.IntType(64), desc.ty.elem.itemsize)), ll.IntType(32))
            if mask is not None:
                _complete_multicast_bytes(fl, bar, nbytes, mask)
            else:
                asm_call(fl, "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "r,r,~{memory}",
                         ll.VoidType(), [shared_address32(fl, bar), nbytes])
        b.position_at_end(blocks[0])
    if fl.libnvvm:
        places = ", ".join(f"${k + 3}" for k in range(n))
        text = (f"cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                f"{'.multicast::cluster' if mask is not None else ''} [$0], [$1, {{{places}}}], [$2]"
                f"{f', ${n + 3}' if mask is not None else ''};")
        args = [shared_address32(fl, dst), b.ptrtoint(tmap, ll.IntType(64)), shared_address32(fl, bar), *cs]
        if mask is not None:
            args.append(b.trunc(mask, ll.IntType(16)))
        asm_call(fl, text, "r,l,r" + ",r" * n + (",h" if mask is not None else "") + ",~{memory}", ll.VoidType(), args)
    else:
        cluster_dst = b.addrspacecast(b.bitcast(dst, ll.PointerType(ll.IntType(8), 3)), ll.PointerType(ll.IntType(8), 7))
        bar8 = b.bitcast(bar, ll.PointerType(ll.IntType(8), 3))
        fn = fl.intrinsic(f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{n}d", ll.VoidType(),
                                 [cluster_dst.type, bar8.type, tmap.type, *([ll.IntType(32)] * n), ll.IntType(16), ll.IntType(64), ll.IntType(1), ll.IntType(1),
                                  ll.IntType(32)])
        ctas = b.trunc(mask, ll.IntType(16)) if mask is not None else ll.Constant(ll.IntType(16), 0)
        b.call(fn, [cluster_dst, bar8, tmap, *cs, ctas, ll.Constant(ll.IntType(64), 0),
                    ll.Constant(ll.IntType(1), int(mask is not None)), ll.Constant(ll.IntType(1), 0), ll.Constant(ll.IntType(32), 0)])
    _join(fl, blocks)
    return ll.Constant(ll.IntType(32), 0)


def _type_store(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if len(node.args) < 3:
        raise tr.error(node, "oxide.tma.store takes (desc, src, c0, ...): the descriptor, the shared array and one "
                       f"coordinate per dimension; got {len(node.args)} argument(s)")
    if tr.unsafe_depth == 0:
        raise tr.error(node, "oxide.tma.store writes a box anywhere in the tensor: it needs `with oxide.unsafe():`",
                       "the kernel must make sure no two blocks write the same box, and no thread reads it meanwhile")
    desc = _descriptor(tr, node.args[0], info.name)
    tile = _shared_tile(tr, node.args[1], desc, info.name, "reads")
    coords = _coordinates(tr, node.args[2:], desc, node, info.name)
    return ir.Intrinsic(info.name, [desc, *tile, *coords], VoidType(), tr.loc(node))


def _lower_store(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    desc, tile, fits, same_layout, aligned, align, *coords = e.args
    assert isinstance(desc.ty, TensorMapType)
    b = fl.b
    src = _tile_address(fl, tile)
    tmap, _ = fl.tensor_map(desc)
    cs = [fl.expr(c) for c in coords][::-1]  # PTX lists them innermost first
    n = len(cs)
    # refused: not stored, reported
    blocks = _if_copy_allowed(fl, [fits, same_layout], [_coordinate_offset(fl, align, cs[0], desc),
                                                         (aligned, b.ptrtoint(src, ll.IntType(64)), TMA_SHARED_ALIGNMENT)])
    if blocks is not None:
        b.position_at_end(blocks[0])
    if fl.libnvvm:
        places = ", ".join(f"${k + 2}" for k in range(n))
        text = f"cp.async.bulk.tensor.{n}d.global.shared::cta.tile.bulk_group [$0, {{{places}}}], [$1];"
        asm_call(fl, text, "l,r" + ",r" * n + ",~{memory}", ll.VoidType(),
                 [b.ptrtoint(tmap, ll.IntType(64)), shared_address32(fl, src), *cs])
    else:
        src8 = b.bitcast(src, ll.PointerType(ll.IntType(8), 3))
        fn = fl.intrinsic(f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{n}d", ll.VoidType(),
                                 [src8.type, tmap.type, *([ll.IntType(32)] * n), ll.IntType(64), ll.IntType(1)])
        b.call(fn, [src8, tmap, *cs, ll.Constant(ll.IntType(64), 0), ll.Constant(ll.IntType(1), 0)])
    _join(fl, blocks)
    return ll.Constant(ll.IntType(32), 0)


def _type_prefetch(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if len(node.args) < 2:
        raise tr.error(node, "oxide.tma.prefetch takes (desc, c0, ...): the descriptor and one coordinate per "
                       f"dimension; got {len(node.args)} argument(s)")
    desc = _descriptor(tr, node.args[0], info.name)
    coords = _coordinates(tr, node.args[1:], desc, node, info.name)
    return ir.Intrinsic(info.name, [desc, *coords], VoidType(), tr.loc(node))


def _lower_prefetch(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    desc, align, *coords = e.args
    assert isinstance(desc.ty, TensorMapType)
    b = fl.b
    tmap, _ = fl.tensor_map(desc)
    cs = [fl.expr(c) for c in coords][::-1]  # PTX lists them innermost first
    n = len(cs)
    blocks = _if_copy_allowed(fl, [], [_coordinate_offset(fl, align, cs[0], desc)])
    if blocks is not None:
        b.position_at_end(blocks[0])
    if fl.libnvvm:
        places = ", ".join(f"${k + 1}" for k in range(n))
        asm_call(fl, f"cp.async.bulk.prefetch.tensor.{n}d.L2.global.tile [$0, {{{places}}}];",
                 "l" + ",r" * n + ",~{memory}", ll.VoidType(), [b.ptrtoint(tmap, ll.IntType(64)), *cs])
    else:
        fn = fl.intrinsic(f"llvm.nvvm.cp.async.bulk.tensor.prefetch.tile.{n}d", ll.VoidType(),
                                 [tmap.type, *([ll.IntType(32)] * n), ll.IntType(64), ll.IntType(1)])
        b.call(fn, [tmap, *cs, ll.Constant(ll.IntType(64), 0), ll.Constant(ll.IntType(1), 0)])
    _join(fl, blocks)
    return ll.Constant(ll.IntType(32), 0)


def _type_commit(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_commit(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return instruction_call(fl, "cp.async.bulk.commit_group;", "llvm.nvvm.cp.async.bulk.commit.group")


def _type_store_wait(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    n = tr.const_int(node.args[0])
    if n is None or not 0 <= n <= 63:
        raise tr.error(node.args[0], f"oxide.{info.name} takes a compile-time number of groups from 0 to 63, got "
                       f"{ast.unparse(node.args[0])}", "the store groups that may stay unfinished; 0 waits for all")
    keywords = {k.arg: k.value for k in node.keywords}
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value if k.arg else node, f"oxide.{info.name}() has no keyword {k.arg!r}", "keywords: read")
    read = False
    if "read" in keywords:
        value = keywords["read"]
        if not (isinstance(value, ast.Constant) and isinstance(value.value, bool)):
            raise tr.error(value, "read= is True or False, a constant")
        read = value.value
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node), options=(str(n), "read" if read else ""))


def _lower_store_wait(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    n, read = int(e.options[0]), e.options[1] == "read"
    if fl.libnvvm:
        return asm_call(fl, f"cp.async.bulk.wait_group{'.read' if read else ''} {n};", "~{memory}", ll.VoidType(), [])
    fn = fl.intrinsic(f"llvm.nvvm.cp.async.bulk.wait.group{'.read' if read else ''}", ll.VoidType(), [ll.IntType(32)])
    return fl.b.call(fn, [ll.Constant(ll.IntType(32), n)])


def _box_elements(fl: LoweringContext, packed: ll.Value) -> ll.Value:
    """The elements of one box, from the map's last slot (oxide.abi.params: its bits below
    TENSOR_MAP_SWIZZLE_SHIFT)."""
    return fl.b.and_(packed, ll.Constant(ll.IntType(64), (1 << TENSOR_MAP_SWIZZLE_SHIFT) - 1))


def _type_box(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    desc = _descriptor(tr, node.args[0], info.name)
    return ir.Intrinsic(info.name, [desc], I64 if info.op == "box_elements" else I32, tr.loc(node))


def _lower_box(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    (desc,) = e.args
    assert isinstance(desc.ty, TensorMapType)
    _, packed = fl.tensor_map(desc)
    if info.op == "swizzle":  # the bits from TENSOR_MAP_SWIZZLE_SHIFT up: the swizzle in bytes
        value = fl.b.lshr(packed, ll.Constant(ll.IntType(64), TENSOR_MAP_SWIZZLE_SHIFT))
        return value if e.ty == I64 else fl.b.trunc(value, ll.IntType(32))
    box = _box_elements(fl, packed)
    if info.op == "box_elements":
        return box
    return fl.b.trunc(fl.b.mul(box, ll.Constant(ll.IntType(64), desc.ty.elem.itemsize)), ll.IntType(32))


BYTES = frozenset({Role.ASYNC_BYTES})  # a barrier it names counts the bytes it moves
ENTRIES = [
    IntrinsicInfo("tma.load", _type_load, _lower_load, keywords=("multicast",), min_arch=MIN_ARCH, roles=BYTES),
    IntrinsicInfo("tma.store", _type_store, _lower_store, min_arch=MIN_ARCH),
    IntrinsicInfo("tma.prefetch", _type_prefetch, _lower_prefetch, min_arch=MIN_ARCH),
    IntrinsicInfo("tma.store_commit", _type_commit, _lower_commit, min_arch=MIN_ARCH),
    IntrinsicInfo("tma.store_wait", _type_store_wait, _lower_store_wait, keywords=("read",), min_arch=MIN_ARCH),
    IntrinsicInfo("tma.box_bytes", _type_box, _lower_box, min_arch=MIN_ARCH),
    IntrinsicInfo("tma.box_elements", _type_box, _lower_box, min_arch=MIN_ARCH),
    IntrinsicInfo("tma.swizzle", _type_box, _lower_box, min_arch=MIN_ARCH),
]
