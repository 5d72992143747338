"""Warp intrinsics: the lane and warp ids, warp sync, votes, match, shuffles and reductions
(``warp.*``), and ``warp.active_mask()`` (``__activemask()``). Everything but the ids is
convergent: the LLVM functions they call are marked so from the entry's ``convergent``.

Votes, match, shuffles and reductions take ``mask=`` (a ``u32`` of the lanes taking part, CUDA's
first argument of ``__shfl_sync``/``__ballot_sync``/...; all 32 lanes without it). A masked
reduction is PTX's ``redux.sync`` (``__reduce_add_sync`` ...), which takes 32-bit integers; the
full-warp reduction is a butterfly of shuffles, for every type.

On the CPU device (``fl.cpu``) every one of them is one exchange through the scheduler
(``oxide_cpu_warp_exchange``: each lane of the mask hands over its value as 64 bits and gets the
32 lanes' values once all of the mask's lanes have), and the result is computed from those as
PTX defines it; the full-warp reduction stays the same butterfly of shuffles, so float sums
round as on the GPU. ``warp.active_mask()`` there is the warp's lanes that have not returned
(no exchange: it may be asked under a branch that the other lanes skip).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

from oxide.lang.types import SCALAR_TYPES, ScalarType

from ..ir import nodes as ir
from ..ir.types import BOOL, I32, VoidType, as_scalar
from .arguments import check_arg_count, keyword_args, scalar_arg
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "combine"]

U32 = SCALAR_TYPES["u32"]
FULL_MASK = 0xFFFFFFFF
SHUFFLE_KINDS = {"shfl_idx": "idx", "shfl_up": "up", "shfl_down": "down", "shfl_xor": "bfly"}
REDUCTIONS = ("reduce_sum", "reduce_min", "reduce_max")


def _scalar(e: ir.Expr) -> ScalarType:
    s = as_scalar(e.ty)
    assert s is not None
    return s


def _mask(tr: TypingContext, node: ast.Call, info: IntrinsicInfo, extra: tuple[str, ...] = ()) -> tuple[list[ir.Expr], dict[str, ast.expr]]:
    """``mask=`` as a list of zero or one ``u32`` argument, and the other keywords. An ``i32``
    mask is taken bit for bit (CUDA's ``unsigned`` parameter converts an ``int`` mask so, and
    ``(1 << n) - 1`` is an ``i32``)."""
    keywords = keyword_args(tr, node, info.name, ("mask", *extra))
    if "mask" not in keywords:
        return [], keywords
    value = tr.expr(keywords["mask"])
    if value.ty == I32:
        return [tr.convert(value, U32, keywords["mask"])], keywords
    mask = tr.convert_implicit(value, U32, keywords["mask"], "the mask")
    return [mask], keywords


def _mask_value(fl: LoweringContext, args: list[ir.Expr], position: int) -> ll.Value:
    """The mask argument at ``position``, or the full warp where the call has none."""
    return fl.expr(args[position]) if len(args) > position else ll.Constant(ll.IntType(32), FULL_MASK)


def _declare(fl: LoweringContext, info: IntrinsicInfo, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
    fn = fl.intrinsic(name, ret, args)
    if info.convergent:
        fn.attributes.add("convergent")
    return fn


# the ids -----------------------------------------------------------------------------------

def _type_id(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], I32, tr.loc(node))


def _lower_lane(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return fl.sreg("laneid")


def _lower_warp_id(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    tid_x, tid_y, tid_z = fl.sreg("tid.x"), fl.sreg("tid.y"), fl.sreg("tid.z")
    ntid_x, ntid_y = fl.sreg("ntid.x"), fl.sreg("ntid.y")
    linear = b.add(tid_x, b.mul(ntid_x, b.add(tid_y, b.mul(ntid_y, tid_z))))
    return b.lshr(linear, ll.Constant(ll.IntType(32), 5))


# sync, votes, match ------------------------------------------------------------------------

def _type_sync(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    mask, keywords = _mask(tr, node, info)
    if mask and node.args:
        raise tr.error(keywords["mask"], "oxide.warp.sync() got the mask twice (by position and as mask=)")
    check_arg_count(tr, node, (0, 1), info.name)
    if node.args:
        mask = [tr.convert_implicit(tr.expr(node.args[0]), U32, node, "the mask")]
    return ir.Intrinsic(info.name, mask, VoidType(), tr.loc(node))


# the CPU device's forms ---------------------------------------------------------------------

def _cpu_lane(fl: LoweringContext) -> ll.Value:
    return fl.sreg("laneid")


def _cpu_warp_lanes(fl: LoweringContext) -> ll.Value:
    """The mask of the lanes the thread's warp has (a block's last warp may be partial)."""
    b = fl.b
    linear = b.add(fl.sreg("tid.x"), b.mul(fl.sreg("ntid.x"), b.add(fl.sreg("tid.y"), b.mul(fl.sreg("ntid.y"), fl.sreg("tid.z")))))
    threads = b.mul(b.mul(fl.sreg("ntid.x"), fl.sreg("ntid.y")), fl.sreg("ntid.z"))
    left = b.sub(threads, b.and_(linear, ll.Constant(ll.IntType(32), ~31 & 0xFFFFFFFF)))
    partial = b.sub(b.shl(ll.Constant(ll.IntType(32), 1), left), ll.Constant(ll.IntType(32), 1))
    return b.select(b.icmp_unsigned(">=", left, ll.Constant(ll.IntType(32), 32)), ll.Constant(ll.IntType(32), FULL_MASK), partial)


def _cpu_exchange(fl: LoweringContext, mask: ll.Value, value: ll.Value) -> ll.Value:
    """Hands ``value`` (an i64) to the lanes of ``mask``; the 32 lanes' values (an i64*)."""
    return fl.b.call(fl.cpu_runtime("oxide_cpu_warp_exchange"), [mask, value])


def _cpu_slot(fl: LoweringContext, slots: ll.Value, lane: ll.Value) -> ll.Value:
    return fl.b.load(fl.b.gep(slots, [fl.b.zext(lane, ll.IntType(64))]), typ=ll.IntType(64))


def _cpu_ballot(fl: LoweringContext, mask: ll.Value, pred: ll.Value) -> ll.Value:
    """The lanes of ``mask`` whose ``pred`` holds, as bits: one exchange, then a loop over lanes."""
    b = fl.b
    mask = b.and_(mask, _cpu_warp_lanes(fl))
    slots = _cpu_exchange(fl, mask, b.zext(pred, ll.IntType(64)))
    return _cpu_fold_lanes(fl, mask, lambda lane: b.shl(b.trunc(b.and_(_cpu_slot(fl, slots, lane), ll.Constant(ll.IntType(64), 1)), ll.IntType(32)), lane))


def _cpu_fold_lanes(fl: LoweringContext, mask: ll.Value, term: Callable[[ll.Value], ll.Value],
                    op: Callable[[ll.Value, ll.Value], ll.Value] | None = None, start: ll.Value | None = None) -> ll.Value:
    """``op`` over ``term(lane)`` for each lane of ``mask`` in order (default: bitwise or of i32 terms from 0)."""
    b = fl.b
    acc_slot = fl.temp(start.type if start is not None else ll.IntType(32))
    b.store(start if start is not None else ll.Constant(ll.IntType(32), 0), acc_slot)
    lane_slot = fl.temp(ll.IntType(32))
    b.store(ll.Constant(ll.IntType(32), 0), lane_slot)
    head = fl.llfn.append_basic_block("lanes.head")
    body = fl.llfn.append_basic_block("lanes.body")
    take = fl.llfn.append_basic_block("lanes.take")
    step = fl.llfn.append_basic_block("lanes.step")
    done = fl.llfn.append_basic_block("lanes.done")
    b.branch(head)
    b.position_at_end(head)
    lane = b.load(lane_slot, typ=ll.IntType(32))
    b.cbranch(b.icmp_unsigned("<", lane, ll.Constant(ll.IntType(32), 32)), body, done)
    b.position_at_end(body)
    member = b.and_(b.lshr(mask, lane), ll.Constant(ll.IntType(32), 1))
    b.cbranch(b.icmp_unsigned("!=", member, ll.Constant(ll.IntType(32), 0)), take, step)
    b.position_at_end(take)
    value = term(lane)
    acc = b.load(acc_slot, typ=acc_slot.type.pointee)
    b.store(op(acc, value) if op is not None else b.or_(acc, value), acc_slot)
    b.branch(step)
    b.position_at_end(step)
    b.store(b.add(lane, ll.Constant(ll.IntType(32), 1)), lane_slot)
    b.branch(head)
    b.position_at_end(done)
    return b.load(acc_slot, typ=acc_slot.type.pointee)


def _to_bits(fl: LoweringContext, value: ll.Value, st: ScalarType) -> ll.Value:
    b = fl.b
    if st.kind == "float":
        value = b.bitcast(value, ll.IntType(st.bits))
    if st.kind == "bool":
        return b.zext(value, ll.IntType(64))
    return b.zext(value, ll.IntType(64)) if st.bits < 64 else value


def _from_bits(fl: LoweringContext, bits: ll.Value, st: ScalarType, ty: ll.Type) -> ll.Value:
    b = fl.b
    if st.kind == "bool":
        return b.trunc(bits, ll.IntType(1))
    raw = b.trunc(bits, ll.IntType(st.bits)) if st.bits < 64 else bits
    return b.bitcast(raw, ty) if st.kind == "float" else raw


def _cpu_shuffle(fl: LoweringContext, kind: str, value: ll.Value, st: ScalarType, lane: ll.Value, width: ll.Value,
                 mask: ll.Value) -> ll.Value:
    """PTX's ``shfl.sync``: the source lane within the lane's segment of ``width`` lanes; a
    source outside the segment (up, down, bfly) gives the lane its own value."""
    b = fl.b
    me = _cpu_lane(fl)
    start = b.and_(me, b.sub(ll.Constant(ll.IntType(32), 0), width))  # the segment's first lane
    end = b.add(start, width)
    if kind == "idx":
        source = b.add(start, b.and_(lane, b.sub(width, ll.Constant(ll.IntType(32), 1))))
    else:
        source = b.sub(me, lane) if kind == "up" else b.add(me, lane) if kind == "down" else b.xor(me, lane)
        inside = b.and_(b.icmp_signed(">=", source, start), b.icmp_signed("<", source, end))
        source = b.select(inside, source, me)
    slots = _cpu_exchange(fl, b.and_(mask, _cpu_warp_lanes(fl)), _to_bits(fl, value, st))
    return _from_bits(fl, _cpu_slot(fl, slots, source), st, value.type)


def _lower_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    m = fl.expr(e.args[0]) if e.args else ll.Constant(ll.IntType(32), FULL_MASK)
    return fl.b.call(_declare(fl, info, "llvm.nvvm.bar.warp.sync", ll.VoidType(), [ll.IntType(32)]), [m])


def _type_vote(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    mask, _ = _mask(tr, node, info)
    check_arg_count(tr, node, 1, info.name)
    pred = tr.truth(tr.expr(node.args[0]), node.args[0])
    return ir.Intrinsic(info.name, [pred, *mask], BOOL if info.op != "ballot" else U32, tr.loc(node))


def _cpu_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    m = fl.expr(e.args[0]) if e.args else ll.Constant(ll.IntType(32), FULL_MASK)
    _cpu_exchange(fl, fl.b.and_(m, _cpu_warp_lanes(fl)), ll.Constant(ll.IntType(64), 0))
    return ll.Constant(ll.IntType(32), 0)


def _cpu_vote(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    mask = b.and_(_mask_value(fl, e.args, 1), _cpu_warp_lanes(fl))
    ballot = _cpu_ballot(fl, mask, fl.expr(e.args[0]))
    if info.op == "ballot":
        return ballot
    if info.op == "any":
        return b.icmp_unsigned("!=", ballot, ll.Constant(ll.IntType(32), 0))
    return b.icmp_unsigned("==", ballot, mask)


def _lower_vote(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ret = ll.IntType(1) if info.op != "ballot" else ll.IntType(32)
    fn = _declare(fl, info, f"llvm.nvvm.vote.{info.op}.sync", ret, [ll.IntType(32), ll.IntType(1)])
    return fl.b.call(fn, [_mask_value(fl, e.args, 1), fl.expr(e.args[0])])


def _type_active_mask(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], U32, tr.loc(node))


def _cpu_active_mask(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The lanes of the warp that reach this call together (the scheduler gathers them: a lane
    may ask where the others do not, so no exchange with a mask)."""
    return fl.b.call(fl.cpu_runtime("oxide_cpu_active_mask"), [fl.sync_site(e.loc)])


def _lower_active_mask(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    # inline PTX on both backends (libNVVM has no llvm.nvvm.activemask); convergent at the call
    asm = ll.InlineAsm(ll.FunctionType(ll.IntType(32), []), "activemask.b32 $0;", "=r", True)
    return fl.b.call(asm, [], attrs=("convergent",))


def _type_match(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    mask, _ = _mask(tr, node, info)
    check_arg_count(tr, node, 1, info.name)
    value = scalar_arg(tr, node.args[0], info.name)
    st = _scalar(value)
    if st.kind not in ("int", "uint") or st.bits not in (32, 64):
        raise tr.error(node.args[0], f"warp.match_any needs a 32- or 64-bit integer, got {st.name}")
    return ir.Intrinsic(info.name, [value, *mask], U32, tr.loc(node))


def _cpu_match(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    value = fl.expr(e.args[0])
    st = _scalar(e.args[0])
    mask = b.and_(_mask_value(fl, e.args, 1), _cpu_warp_lanes(fl))
    mine = _to_bits(fl, value, st)
    slots = _cpu_exchange(fl, mask, mine)

    def same(lane: ll.Value) -> ll.Value:
        equal = b.icmp_unsigned("==", _cpu_slot(fl, slots, lane), mine)
        return b.shl(b.zext(equal, ll.IntType(32)), lane)

    return _cpu_fold_lanes(fl, mask, same)


def _lower_match(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    suffix = "i64" if _scalar(e.args[0]).bits == 64 else "i32"
    fn = _declare(fl, info, f"llvm.nvvm.match.any.sync.{suffix}", ll.IntType(32), [ll.IntType(32), value.type])
    return fl.b.call(fn, [_mask_value(fl, e.args, 1), value])


# shuffles and reductions -------------------------------------------------------------------

def _type_shuffle(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    loc = tr.loc(node)
    mask, keywords = _mask(tr, node, info, ("width",))
    if "width" in keywords and len(node.args) == 3:
        raise tr.error(keywords["width"], f"oxide.{info.name}() got the width twice (by position and as width=)")
    check_arg_count(tr, node, (2, 3), info.name)
    value = scalar_arg(tr, node.args[0], info.name)
    lane = tr.convert_implicit(tr.expr(node.args[1]), I32, node.args[1],
                               "the lane" if info.op == "shfl_idx" else "the lane offset")
    width: ir.Expr = ir.Const(32, I32, loc)
    width_node = node.args[2] if len(node.args) == 3 else keywords.get("width")
    if width_node is not None:
        w = tr.const_int(width_node)
        if w is None:  # a run-time width, as CUDA's __shfl_*_sync(mask, v, d, width) takes: a power of two ≤ 32
            width = tr.convert_implicit(tr.expr(width_node), I32, width_node, "the shuffle width")
        elif w not in (1, 2, 4, 8, 16, 32):
            raise tr.error(width_node, "the shuffle width must be a power of two ≤ 32", "use 1, 2, 4, 8, 16 or 32")
        else:
            width = ir.Const(w, I32, loc)
    return ir.Intrinsic(info.name, [value, lane, width, *mask], value.ty, loc)


def _lower_shuffle(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    lane = fl.expr(e.args[1])
    width = e.args[2]
    kind = SHUFFLE_KINDS[info.op]
    low = 0 if kind == "up" else 0x1F
    clamp: int | ll.Value
    if isinstance(width, ir.Const):
        clamp = ((32 - int(width.value)) << 8) | low
    else:  # PTX's c operand from a run-time width, as CUDA's header computes it: ((32 - width) << 8) | clamp
        i32 = ll.IntType(32)
        segment = fl.b.shl(fl.b.sub(ll.Constant(i32, 32), fl.expr(width)), ll.Constant(i32, 8))
        clamp = fl.b.or_(segment, ll.Constant(i32, low))
    return _shuffle(fl, info, kind, value, _scalar(e.args[0]), lane, clamp, _mask_value(fl, e.args, 3))


def _shuffle(fl: LoweringContext, info: IntrinsicInfo, kind: str, value: ll.Value, st: ScalarType,
             lane: ll.Value, clamp: int | ll.Value, mask: ll.Value | None = None) -> ll.Value:
    b = fl.b
    mask = mask if mask is not None else ll.Constant(ll.IntType(32), FULL_MASK)
    c = ll.Constant(ll.IntType(32), clamp) if isinstance(clamp, int) else clamp
    if fl.cpu:  # the width from PTX's c operand: ((32 - width) << 8) | clamp
        width = b.sub(ll.Constant(ll.IntType(32), 32), b.lshr(c, ll.Constant(ll.IntType(32), 8)))
        return _cpu_shuffle(fl, kind, value, st, lane, width, mask)

    def shfl32(v: ll.Value, suffix: str) -> ll.Value:
        t = ll.FloatType() if suffix == "f32" else ll.IntType(32)
        fn = _declare(fl, info, f"llvm.nvvm.shfl.sync.{kind}.{suffix}", t, [ll.IntType(32), t, ll.IntType(32), ll.IntType(32)])
        return b.call(fn, [mask, v, lane, c])

    if st.kind == "float" and st.bits == 32:
        return shfl32(value, "f32")
    if st.bits == 64:
        raw = b.bitcast(value, ll.IntType(64)) if st.kind == "float" else value
        lo = shfl32(b.trunc(raw, ll.IntType(32)), "i32")
        hi = shfl32(b.trunc(b.lshr(raw, ll.Constant(ll.IntType(64), 32)), ll.IntType(32)), "i32")
        joined = b.or_(b.zext(lo, ll.IntType(64)), b.shl(b.zext(hi, ll.IntType(64)), ll.Constant(ll.IntType(64), 32)))
        return b.bitcast(joined, value.type) if st.kind == "float" else joined
    if st.kind == "float":  # f16: through i32
        bits = b.zext(b.bitcast(value, ll.IntType(16)), ll.IntType(32))
        return b.bitcast(b.trunc(shfl32(bits, "i32"), ll.IntType(16)), value.type)
    if st.bits == 32:
        return shfl32(value, "i32")
    wide = b.sext(value, ll.IntType(32)) if st.kind == "int" else b.zext(value, ll.IntType(32))
    return b.trunc(shfl32(wide, "i32"), value.type)


def _type_reduce(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    mask, keywords = _mask(tr, node, info)
    check_arg_count(tr, node, 1, info.name)
    value = scalar_arg(tr, node.args[0], info.name)
    st = _scalar(value)
    if st.kind == "bool":
        raise tr.error(node.args[0], f"{info.name} needs a number, got bool")
    if mask and (st.kind not in ("int", "uint") or st.bits != 32):
        raise tr.error(keywords["mask"], f"{info.name} with a mask takes an i32 or u32 (PTX redux.sync, CUDA's "
                       f"__reduce_{info.op[len('reduce_'):].replace('sum', 'add')}_sync), got {st.name}",
                       "reduce over the full warp without mask=, or combine the lanes with "
                       "warp.shfl_xor(v, k, mask=...)")
    return ir.Intrinsic(info.name, [value, *mask], st, tr.loc(node))


def _lower_reduce(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    value = fl.expr(e.args[0])
    st = _scalar(e.args[0])
    if len(e.args) == 2 and fl.cpu:  # a 32-bit integer reduction over the mask's lanes, in lane order
        b = fl.b
        mask = b.and_(fl.expr(e.args[1]), _cpu_warp_lanes(fl))
        slots = _cpu_exchange(fl, mask, _to_bits(fl, value, st))
        which = info.op[len("reduce_"):]
        others = b.and_(mask, b.xor(b.shl(ll.Constant(ll.IntType(32), 1), _cpu_lane(fl)), ll.Constant(ll.IntType(32), FULL_MASK)))
        return _cpu_fold_lanes(fl, others, lambda lane: b.trunc(_cpu_slot(fl, slots, lane), ll.IntType(32)),
                               lambda acc, v: combine(fl, which, acc, v, st), start=value)
    if len(e.args) == 2:  # masked: redux.sync, convergent at the call
        op = info.op[len("reduce_"):].replace("sum", "add")
        ptx_type = "s32" if op == "add" or st.kind == "int" else "u32"
        asm = ll.InlineAsm(ll.FunctionType(ll.IntType(32), [ll.IntType(32), ll.IntType(32)]), f"redux.sync.{op}.{ptx_type} $0, $1, $2;",
                           "=r,r,r", True)
        return fl.b.call(asm, [value, fl.expr(e.args[1])], attrs=("convergent",))
    for offset in (16, 8, 4, 2, 1):
        other = _shuffle(fl, info, "bfly", value, st, ll.Constant(ll.IntType(32), offset), 0x1F)
        value = combine(fl, info.op[len("reduce_"):], value, other, st)
    return value


def combine(fl: LoweringContext, op: str, a: ll.Value, c: ll.Value, st: ScalarType) -> ll.Value:
    """``a + c``, ``min(a, c)`` or ``max(a, c)`` (``op``: "sum", "min", "max") in ``st``."""
    b = fl.b
    if op == "sum":
        return b.fadd(a, c) if st.kind == "float" else b.add(a, c)
    if st.kind == "float" and fl.cpu:  # fminf/fmaxf: a NaN operand gives the other one
        suffix = "f32" if st.bits == 32 else "f64"
        return b.call(fl.intrinsic(f"llvm.{'minnum' if op == 'min' else 'maxnum'}.{suffix}", a.type, [a.type, a.type]), [a, c])
    if st.kind == "float":
        name = ("__nv_fminf" if op == "min" else "__nv_fmaxf") if st.bits == 32 else ("__nv_fmin" if op == "min" else "__nv_fmax")
        return b.call(fl.intrinsic(name, a.type, [a.type, a.type]), [a, c])
    cmp = b.icmp_signed if st.kind == "int" else b.icmp_unsigned
    return b.select(cmp("<" if op == "min" else ">", a, c), a, c)


# one answer per lane or per warp, four warps to a warpgroup
LANE = frozenset({Role.LANE_VARYING})
POSITION = frozenset({Role.LANE_VARYING, Role.POSITION})  # warp.lane(), warp.id()
ENTRIES = [
    IntrinsicInfo("warp.lane", _type_id, _lower_lane, thread_dependent=True, value_range=(0, 31), roles=POSITION),
    IntrinsicInfo("warp.id", _type_id, _lower_warp_id, thread_dependent=True, value_range=(0, 31), roles=POSITION,
                  thread_stride=32),
    IntrinsicInfo("warp.sync", _type_sync, _lower_sync, thread_dependent=True, convergent=True, keywords=("mask",),
                  roles=frozenset({Role.LANE_VARYING, Role.ORDERS_THREADS}), cpu_lowering=_cpu_sync),
    IntrinsicInfo("warp.active_mask", _type_active_mask, _lower_active_mask, thread_dependent=True, convergent=True,
                  roles=LANE, cpu_lowering=_cpu_active_mask),
    *(IntrinsicInfo(f"warp.{op}", _type_vote, _lower_vote, thread_dependent=True, convergent=True, keywords=("mask",),
                    roles=LANE, cpu_lowering=_cpu_vote) for op in ("all", "any", "ballot")),
    IntrinsicInfo("warp.match_any", _type_match, _lower_match, thread_dependent=True, convergent=True,
                  keywords=("mask",), roles=LANE, cpu_lowering=_cpu_match),
    *(IntrinsicInfo(f"warp.{op}", _type_shuffle, _lower_shuffle, thread_dependent=True, convergent=True,
                    keywords=("mask", "width"), roles=LANE) for op in SHUFFLE_KINDS),
    *(IntrinsicInfo(f"warp.{op}", _type_reduce, _lower_reduce, thread_dependent=True, convergent=True,
                    keywords=("mask",), roles=LANE) for op in REDUCTIONS),
]
