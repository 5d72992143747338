"""Shared-memory barriers with transaction counts (sm_90, ``mbarrier.*``): what a TMA load
signals when its bytes have landed, and what a pipeline's stages wait on.

``bars = mbarrier.array(n)`` declares ``n`` barriers in shared memory (64 bits each). A barrier
is opaque: it is never read, written or compared as a number; the intrinsics take one as
``bars[k]`` (bounds-checked like an array element), or ``bars`` itself when ``n`` is 1.

- ``init(bar, count)``: ``count`` arrivals complete a phase (one thread initializes; then
  ``fence_init()`` and ``block.sync()`` before any other thread or a TMA load uses it);
- ``arrive(bar)``: one arrival;
- ``arrive_expect_tx(bar, nbytes)``: one arrival, and ``nbytes`` more bytes of asynchronous
  copies (``tma.load``) that must land before the phase completes;
- ``expect_tx(bar, nbytes)``: the bytes alone, no arrival;
- ``try_wait(bar, phase) -> bool``: whether the phase of parity ``phase`` (0 or 1) has
  completed (waits a little in the hardware before it answers false);
- ``wait(bar, phase)``: until it has (a ``try_wait.parity`` loop);
- ``fence_init()``: makes this thread's ``init``s visible to the other threads' and the
  asynchronous proxy's barrier operations (``fence.mbarrier_init.release.cluster``);
- ``inval(bar)``: before the memory is used for anything else.

Lowering: ``llvm.nvvm.mbarrier.init/arrive/inval.shared`` for LLVM's NVPTX; inline PTX where
libNVVM compiles the module, and for what LLVM 22 has no intrinsic of (``expect_tx``,
``try_wait.parity``, the fence).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import u64

from ..ir import nodes as ir
from ..ir.types import BOOL, I32, I64, ArrayType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "barrier_arguments", "barrier_address", "shared_address32"]

MIN_ARCH = "sm_90"  # transaction counts, try_wait.parity, the init fence (init, arrive, inval: sm_80)


def barrier_arguments(tr: TypingContext, node: ast.expr, name: str) -> list[ir.Expr]:
    """``bars[k]`` (or ``bars`` of one barrier) as the IR arguments ``[bars, k]``, ``k``
    bounds-checked unless checks are off or it is a constant in range."""
    loc = tr.loc(node)
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, (ast.Slice, ast.Tuple)):
        bars = tr.expr(node.value)
        if not (isinstance(bars.ty, ArrayType) and bars.ty.barrier):
            raise tr.error(node.value, f"oxide.{name} takes a barrier of ox.mbarrier.array(n), "
                           f"got an element of {type_name(bars.ty)}")
        index = tr.materialize(tr.expr(node.slice))
        st = as_scalar(index.ty)
        if st is None or st.kind not in ("int", "uint"):
            raise tr.error(node.slice, f"a barrier index must be an integer, got {type_name(index.ty)}")
        index = tr.convert(index, I64, node.slice)
        size = bars.ty.size
        assert size is not None
        if isinstance(index, ir.Const):
            if not 0 <= int(index.value) < size:
                raise tr.error(node.slice, f"barrier {index.value} is out of bounds of {size} barriers")
        elif tr.bounds_check:
            site = tr.bounds_site(node, ast.unparse(node))
            index = ir.Intrinsic("checked_index", [index, ir.Const(size, I64, loc)], I64, loc, site)
        return [bars, index]
    bars = tr.expr(node)
    if not (isinstance(bars.ty, ArrayType) and bars.ty.barrier):
        raise tr.error(node, f"oxide.{name} takes a barrier (bars[k] of bars = ox.mbarrier.array(n)), "
                       f"got {type_name(bars.ty)}")
    if bars.ty.size != 1:
        raise tr.error(node, f"{ast.unparse(node)} holds {bars.ty.size} barriers: say which one", f"write {ast.unparse(node)}[k]")
    return [bars, ir.Const(0, I64, loc)]


def barrier_address(fl: LoweringContext, bars: ir.Expr, index: ir.Expr) -> ll.Value:
    """The shared-memory address (``i64 addrspace(3)*``) of barrier ``index`` of ``bars``."""
    view = fl.view(bars)
    return fl.b.gep(view.ptr, [fl.expr(index)], source_etype=ll.IntType(64))


def shared_address32(fl: LoweringContext, ptr: ll.Value) -> ll.Value:
    """A shared-memory pointer as the 32-bit address PTX's ``.shared`` operands take."""
    return fl.b.ptrtoint(ptr, ll.IntType(32))


def _byte_count(tr: TypingContext, node: ast.expr, what: str) -> ir.Expr:
    value = tr.materialize(tr.expr(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(node, f"{what} must be an integer, got {type_name(value.ty)}")
    if isinstance(value, ir.Const) and not 0 <= int(value.value) < (1 << 20):
        raise tr.error(node, f"{what} is from 0 to 2**20 - 1 per phase, got {value.value}")
    return tr.convert(value, I32, node)


def _type_array(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    n = tr.const_int(node.args[0])
    if n is None or n <= 0:
        raise tr.error(node.args[0], f"mbarrier.array takes a positive compile-time number of barriers, got "
                       f"{ast.unparse(node.args[0])}")
    return ir.Intrinsic(info.name, [], ArrayType("shared", u64, (n,), barrier=True), tr.loc(node))


def _lower_allocation(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is allocated by its assignment, not lowered as a value")


def _type_init(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    args = barrier_arguments(tr, node.args[0], info.name)
    count = tr.materialize(tr.expr(node.args[1]))
    if not (as_scalar(count.ty) is not None and as_scalar(count.ty).kind in ("int", "uint")):  # type: ignore[union-attr]
        raise tr.error(node.args[1], f"the arrival count must be an integer, got {type_name(count.ty)}")
    if isinstance(count, ir.Const) and not 1 <= int(count.value) < (1 << 20):
        raise tr.error(node.args[1], f"the arrival count is from 1 to 2**20 - 1, got {count.value}")
    return ir.Intrinsic(info.name, [*args, tr.convert(count, I32, node.args[1])], VoidType(), tr.loc(node))


def _lower_init(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    bars, index, count = e.args
    ptr = barrier_address(fl, bars, index)
    if fl.libnvvm:
        return asm_call(fl, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", ll.VoidType(),
                        [shared_address32(fl, ptr), fl.expr(count)])
    fn = fl.intrinsic("llvm.nvvm.mbarrier.init.shared", ll.VoidType(), [ptr.type, ll.IntType(32)])
    return fl.b.call(fn, [ptr, fl.expr(count)])


def _type_barrier_only(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    return ir.Intrinsic(info.name, barrier_arguments(tr, node.args[0], info.name), VoidType(), tr.loc(node))


def _lower_arrive(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ptr = barrier_address(fl, *e.args)
    if fl.libnvvm:
        return asm_call(fl, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", ll.VoidType(),
                        [shared_address32(fl, ptr)])
    fn = fl.intrinsic("llvm.nvvm.mbarrier.arrive.shared", ll.IntType(64), [ptr.type])
    fl.b.call(fn, [ptr])
    return ll.Constant(ll.IntType(32), 0)


def _lower_inval(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    ptr = barrier_address(fl, *e.args)
    if fl.libnvvm:
        return asm_call(fl, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", ll.VoidType(),
                        [shared_address32(fl, ptr)])
    fn = fl.intrinsic("llvm.nvvm.mbarrier.inval.shared", ll.VoidType(), [ptr.type])
    return fl.b.call(fn, [ptr])


def _type_tx(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    args = barrier_arguments(tr, node.args[0], info.name)
    nbytes = _byte_count(tr, node.args[1], "the transaction byte count")
    return ir.Intrinsic(info.name, [*args, nbytes], VoidType(), tr.loc(node))


def _lower_tx(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    bars, index, nbytes = e.args
    ptr = barrier_address(fl, bars, index)
    text = ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;" if info.op == "arrive_expect_tx"
            else "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;")
    return asm_call(fl, text, "r,r,~{memory}", ll.VoidType(), [shared_address32(fl, ptr), fl.expr(nbytes)])


def _type_wait(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 2, info.name)
    args = barrier_arguments(tr, node.args[0], info.name)
    phase = tr.materialize(tr.expr(node.args[1]))
    st = as_scalar(phase.ty)
    if st is None or (st.kind not in ("int", "uint") and st != BOOL):
        raise tr.error(node.args[1], f"the phase parity must be an integer (0 or 1), got {type_name(phase.ty)}",
                       "in a ring of stages: (k // STAGES) % 2")
    if isinstance(phase, ir.Const) and int(phase.value) not in (0, 1):
        raise tr.error(node.args[1], f"the phase parity is 0 or 1, got {phase.value}",
                       "in a ring of stages: (k // STAGES) % 2")
    if st == BOOL:
        phase = ir.Cast(phase, I32, tr.loc(node.args[1]))
    else:
        phase = tr.convert(phase, I32, node.args[1])
    ty = BOOL if info.op == "try_wait" else VoidType()
    return ir.Intrinsic(info.name, [*args, phase], ty, tr.loc(node))  # type: ignore[arg-type]


def _parity(fl: LoweringContext, phase: ir.Expr) -> ll.Value:
    return fl.b.and_(fl.expr(phase), ll.Constant(ll.IntType(32), 1))


def _lower_try_wait(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    bars, index, phase = e.args
    ptr = barrier_address(fl, bars, index)
    text = ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }")
    done = asm_call(fl, text, "=r,r,r,~{memory}", ll.IntType(32), [shared_address32(fl, ptr), _parity(fl, phase)])
    return fl.b.icmp_unsigned("!=", done, ll.Constant(ll.IntType(32), 0))


def _lower_wait(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    bars, index, phase = e.args
    ptr = barrier_address(fl, bars, index)
    # the labels are local to the braces, so every copy of this text may use the same names
    text = ("{ .reg .pred p; OXIDE_MBAR_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; "
            "@!p bra OXIDE_MBAR_WAIT; }")
    return asm_call(fl, text, "r,r,~{memory}", ll.VoidType(), [shared_address32(fl, ptr), _parity(fl, phase)])


def _type_fence_init(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_fence_init(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return asm_call(fl, "fence.mbarrier_init.release.cluster;", "~{memory}", ll.VoidType(), [])



ENTRIES = [
    IntrinsicInfo("mbarrier.array", _type_array, _lower_allocation, roles=frozenset({Role.MBARRIER_ARRAY})),
    IntrinsicInfo("mbarrier.init", _type_init, _lower_init, roles=frozenset({Role.MBARRIER_INIT})),
    IntrinsicInfo("mbarrier.arrive", _type_barrier_only, _lower_arrive),
    IntrinsicInfo("mbarrier.arrive_expect_tx", _type_tx, _lower_tx, min_arch=MIN_ARCH,
                  roles=frozenset({Role.MBARRIER_EXPECT_TX})),
    IntrinsicInfo("mbarrier.expect_tx", _type_tx, _lower_tx, min_arch=MIN_ARCH, roles=frozenset({Role.MBARRIER_EXPECT_TX})),
    IntrinsicInfo("mbarrier.try_wait", _type_wait, _lower_try_wait, thread_dependent=True, min_arch=MIN_ARCH,
                  roles=frozenset({Role.MBARRIER_WAIT})),
    IntrinsicInfo("mbarrier.wait", _type_wait, _lower_wait, min_arch=MIN_ARCH, roles=frozenset({Role.MBARRIER_WAIT})),
    IntrinsicInfo("mbarrier.fence_init", _type_fence_init, _lower_fence_init, min_arch=MIN_ARCH,
                  roles=frozenset({Role.MBARRIER_INIT_FENCE})),
    IntrinsicInfo("mbarrier.inval", _type_barrier_only, _lower_inval, roles=frozenset({Role.MBARRIER_INVALIDATE})),
]
