"""Asynchronous copies from global to shared memory (sm_80, ``cp_async.*``):
``copy(dst, dst_index, src, src_index, nbytes, cache="ca", src_bytes=n)`` starts a copy of
4, 8 or 16 bytes that the thread does not wait for; ``commit_group()`` closes the copies
started since the last one into a group; ``wait_group(n)`` waits until at most ``n`` groups
are still in flight (then ``block.sync()`` makes the data visible to the other threads).

``cache="cg"`` (16 bytes only) skips L1; ``src_bytes`` (run time, 0 to ``nbytes``) reads only
that many bytes and fills the rest with zeros: a tile's edge past the end of the matrix.
Both indices are in elements; the copied span of each is bounds-checked unless checks are off.

Lowering: ``llvm.nvvm.cp.async.*`` for LLVM's NVPTX; inline PTX where libNVVM compiles the
module (it has no such intrinsics). On the CPU device the copy is done when it is started
(ordinary loads and stores, which the sanitizers see), one of the orders the GPU may take, and
committing and waiting do nothing: the thread reads its copies afterwards as on the GPU, and
other threads after the barrier the GPU needs as well.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import I32, I64, ArrayType, ViewType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call, instruction_call
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]

SIZES = (4, 8, 16)


def _index(tr: TypingContext, node: ast.expr, what: str) -> ir.Expr:
    value = tr.materialize(tr.expr(node))
    st = as_scalar(value.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(node, f"{what} must be an integer, got {type_name(value.ty)}")
    return tr.convert(value, I64, node)


def _checked(tr: TypingContext, node: ast.Call, index: ir.Expr, count: int, length: ir.Expr, what: str) -> ir.Expr:
    if not tr.bounds_check:
        return ir.Const(0, I64, index.loc)
    loc = index.loc
    site = tr.bounds_site(node, what)
    last = ir.BinOp(BinaryOp.ADD, index, ir.Const(count - 1, I64, loc), I64, loc)
    return ir.Intrinsic("checked_index", [last, length], I64, loc, site)


def _type_copy(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 5, info.name)
    dst_node, dst_index_node, src_node, src_index_node, size_node = node.args
    dst = tr.expr(dst_node)
    if not isinstance(dst.ty, ArrayType) or dst.ty.space != "shared":
        raise tr.error(dst_node, f"cp_async.copy writes a shared array, got {type_name(dst.ty)}")
    src = tr.expr(src_node)
    if not isinstance(src.ty, ViewType) or src.ty.is_tensor:
        raise tr.error(src_node, f"cp_async.copy reads a 1-D view in global memory (Slice, MutSlice, ...), "
                       f"got {type_name(src.ty)}")
    if src.ty.elem != dst.ty.elem:
        raise tr.error(src_node, f"cp_async.copy copies {src.ty.elem.name} into a shared array of {dst.ty.elem.name}",
                       "the source and the shared array have one element type")
    nbytes = tr.const_int(size_node)
    if nbytes not in SIZES:
        raise tr.error(size_node, f"cp_async.copy copies 4, 8 or 16 bytes, a compile-time constant; got "
                       f"{ast.unparse(size_node)}")
    item = src.ty.elem.itemsize
    if nbytes % item:
        raise tr.error(size_node, f"{nbytes} bytes is not a whole number of {src.ty.elem.name} elements")
    keywords = {k.arg: k.value for k in node.keywords}
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value, f"cp_async.copy() has no keyword {k.arg!r}", "keywords: cache, src_bytes")
    cache = "ca"
    if "cache" in keywords:
        given = tr.const_str(keywords["cache"])
        if given not in ("ca", "cg"):
            raise tr.error(keywords["cache"], f"cache= is 'ca' (L1 and L2) or 'cg' (L2 only), got "
                           f"{ast.unparse(keywords['cache'])}")
        cache = given
    if cache == "cg" and nbytes != 16:
        raise tr.error(keywords["cache"], f"cache='cg' copies 16 bytes only, not {nbytes}", "use cache='ca'")
    loc = tr.loc(node)
    count = nbytes // item
    dst_index = _index(tr, dst_index_node, "the shared index")
    src_index = _index(tr, src_index_node, "the source index")
    dst_len: ir.Expr = ir.Const(dst.ty.size if dst.ty.size is not None else 1 << 62, I64, loc)
    args: list[ir.Expr] = [
        dst, dst_index, src, src_index,
        _checked(tr, node, dst_index, count, dst_len, f"{ast.unparse(dst_node)}[{ast.unparse(dst_index_node)} : +{count}]"),
        _checked(tr, node, src_index, count, ir.ViewLen(src, I64, loc),
                 f"{ast.unparse(src_node)}[{ast.unparse(src_index_node)} : +{count}]"),
    ]
    if "src_bytes" in keywords:
        args.append(tr.convert_implicit(tr.expr(keywords["src_bytes"]), I32, keywords["src_bytes"], "src_bytes"))
    return ir.Intrinsic(info.name, args, VoidType(), loc, options=(cache, str(nbytes)))


def _copy_operands(fl: LoweringContext, e: ir.Intrinsic) -> tuple[ll.Value, ll.Value, ll.Type, int, ll.Value | None]:
    """A copy's bounds checks done, then (its shared destination's address, its source's, their
    element's LLVM type and size, ``src_bytes`` or None)."""
    b = fl.b
    dst, dst_index, src, src_index, dst_check, src_check, *src_bytes = e.args
    fl.expr(dst_check)
    fl.expr(src_check)
    shared = fl.view(dst)
    view = fl.view(src)
    dptr = b.gep(shared.ptr, [fl.expr(dst_index)], source_etype=fl.elem_type(shared.elem))
    sptr = b.gep(view.ptr, [fl.expr(src_index)], source_etype=fl.elem_type(view.elem))
    return (dptr, sptr, fl.elem_type(view.elem), view.elem.itemsize,
            fl.expr(src_bytes[0]) if src_bytes else None)


def _lower_copy(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    cache, nbytes = e.options
    dptr, sptr, ety, _, src_bytes = _copy_operands(fl, e)
    if sptr.type.addrspace != 1:
        sptr = b.addrspacecast(sptr, ll.PointerType(ety, 1))
    extra = [src_bytes] if src_bytes is not None else []
    if fl.libnvvm:
        text = f"cp.async.{cache}.shared.global [$0], [$1], {nbytes}" + (", $2;" if extra else ";")
        args = [b.ptrtoint(dptr, ll.IntType(64)), b.ptrtoint(sptr, ll.IntType(64)), *extra]
        asm_call(fl, text, "l,l" + (",r" if extra else "") + ",~{memory}", ll.VoidType(), args)
    else:
        d8 = b.bitcast(dptr, ll.PointerType(ll.IntType(8), 3))
        s8 = b.bitcast(sptr, ll.PointerType(ll.IntType(8), 1))
        name = f"llvm.nvvm.cp.async.{cache}.shared.global.{nbytes}" + (".s" if extra else "")
        fn = fl.intrinsic(name, ll.VoidType(), [d8.type, s8.type, *(v.type for v in extra)])
        b.call(fn, [d8, s8, *extra])
    return ll.Constant(ll.IntType(32), 0)


def _cpu_copy(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: the copy at once, element by element (byte by byte with ``src_bytes``,
    the bytes from ``src_bytes`` on zeros)."""
    b = fl.b
    _, nbytes = e.options
    dptr, sptr, ety, itemsize, limit = _copy_operands(fl, e)
    i8, i32, i64 = ll.IntType(8), ll.IntType(32), ll.IntType(64)
    if limit is None:
        for k in range(int(nbytes) // itemsize):
            at = ll.Constant(i64, k)
            b.store(b.load(b.gep(sptr, [at], source_etype=ety)), b.gep(dptr, [at], source_etype=ety))
        return ll.Constant(i32, 0)
    d8 = b.bitcast(dptr, ll.PointerType(i8, dptr.type.addrspace))
    s8 = b.bitcast(sptr, ll.PointerType(i8, sptr.type.addrspace))
    for k in range(int(nbytes)):
        at = ll.Constant(i64, k)
        slot = b.gep(d8, [at], source_etype=i8)
        with b.if_else(b.icmp_signed(">", limit, ll.Constant(i32, k))) as (inside, outside):
            with inside:
                b.store(b.load(b.gep(s8, [at], source_etype=i8)), slot)
            with outside:
                b.store(ll.Constant(i8, 0), slot)
    return ll.Constant(i32, 0)


def _cpu_nothing(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    """The CPU device: the copies are done when started, so there is nothing to commit or wait for."""
    return ll.Constant(ll.IntType(32), 0)


def _type_commit(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


def _lower_commit(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    return instruction_call(fl, "cp.async.commit_group;", "llvm.nvvm.cp.async.commit.group")


def _type_wait(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    n = tr.const_int(node.args[0])
    if n is None or not 0 <= n <= 7:
        raise tr.error(node.args[0], f"cp_async.wait_group takes a compile-time count of groups from 0 to 7, got "
                       f"{ast.unparse(node.args[0])}", "the groups that may stay in flight (stages - 2 in a pipeline)")
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node), options=(str(n),))


def _lower_wait(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    n = int(e.options[0])
    if fl.libnvvm:
        return asm_call(fl, f"cp.async.wait_group {n};", "~{memory}", ll.VoidType(), [])
    fn = fl.intrinsic("llvm.nvvm.cp.async.wait.group", ll.VoidType(), [ll.IntType(32)])
    return fl.b.call(fn, [ll.Constant(ll.IntType(32), n)])


ENTRIES = [
    IntrinsicInfo("cp_async.copy", _type_copy, _lower_copy, keywords=("cache", "src_bytes"), cpu_lowering=_cpu_copy),
    IntrinsicInfo("cp_async.commit_group", _type_commit, _lower_commit, cpu_lowering=_cpu_nothing),
    IntrinsicInfo("cp_async.wait_group", _type_wait, _lower_wait, cpu_lowering=_cpu_nothing),
]
