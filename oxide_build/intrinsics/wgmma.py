"""Tensor cores, the sm_90a path (``wgmma.*``, ``warpgroup.*``; ``fence.proxy_async`` is with the
other fences in ``memory.py``).

A warpgroup (4 consecutive warps, 128 threads, starting at a warp index divisible by 4)
multiplies together: ``ox.wgmma.mma(acc, a, a_index, b, b_index)`` starts
``D = A·B + D`` (or ``D = A·B`` with ``scale_d=False``) on the tensor cores, A (64×16) and B
(16×N) read from shared memory, D an accumulator in the registers of the 128 threads.

- ``ox.wgmma.accumulator("m64n256k16")``: the accumulator, a per-thread array of ``N / 2``
  f32 values whose type carries the shape (``ArrayType.fragment = "wgmma.c:m64n256k16"``).
  Thread ``t`` of the warpgroup holds ``acc[4 * j + i]`` at row ``16 * (t // 32) + (t % 32) // 4
  + 8 * (i // 2)`` and column ``8 * j + 2 * (t % 4) + i % 2`` (PTX's "Matrix fragments for
  wgmma .m64nNk16", accumulator D).
- A and B are shared arrays declared with a swizzle (``ox.shared.array(..., swizzle=128)`` or
  ``ox.shared.dynamic(bf16, swizzle=128)``): rows of ``swizzle`` bytes (64 f16/bf16 for 128),
  the 16-byte chunks of row ``r`` stored at chunk ``c ^ (r % 8)`` (``ox.mma.swizzle(i, 3, 3, 3)``
  for 128 bytes of 16-bit elements), the array aligned to 1024 bytes. ``a_index`` / ``b_index``
  are the element offsets of the operand's first element. The 64-bit shared-memory matrix
  descriptors (start address, leading and stride byte offsets, swizzle mode) are built here, in
  the lowering, from the array's element type and swizzle; user code never packs their bits.
- Layouts: A is K-major (row ``m`` of A is a row of the array, K along it: a row-major A).
  B is K-major by default (row ``n`` of the array holds B's column ``n``: a row-major Bᵀ);
  ``b_major="mn"`` reads B N-major (a row-major B, ``K×N``): the array then holds B in chunks
  of ``swizzle`` bytes of N, each chunk ``b_rows`` rows of K one after the other
  (``[N / 64][b_rows][64]`` for 128-byte swizzle and 16-bit elements).
- 8-bit floats: A and B of ``f8e4m3``/``f8e5m2`` (the two may mix) multiply with an
  ``"m64nNk32"`` accumulator (f32, same fragment layout), K = 32 elements = 32 bytes per
  instruction; a 128-byte swizzled row holds 128 of them. PTX has no transpose for 8-bit
  operands: both are K-major and ``b_major="mn"`` is a located error.
- TF32: A and B ``f32`` arrays, read as tf32 (the low 13 bits of each fraction ignored), multiply
  with an ``"m64nNk8"`` accumulator, K = 8 elements = 32 bytes per instruction; a 128-byte
  swizzled row holds 32 of them. PTX has no transpose for tf32 either: both are K-major
  (``wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, a-desc, b-desc, scale-d, imm-scale-a,
  imm-scale-b``), ``b_major="mn"`` and a register A are located errors.
- ``fence_operand(x, ...)``: the compiler finishes every write of the accumulators or register
  fragments named before this point and starts no read of them above it (CUTLASS's
  ``warpgroup_fence_operand``; no instruction). Fencing a register A right after it is written
  keeps its packing from sinking between the ``mma`` calls that read it, where ptxas would
  serialize them.
- ``fence()`` before the first ``mma`` that reads registers written since (the accumulator),
  ``commit_group()`` closes the ``mma``s issued since the last one into a group,
  ``wait_group(n, acc, ...)`` waits until at most ``n`` groups are pending; the accumulators
  named there are fenced, so that nothing reads them before the wait.
- ``ox.fence.proxy_async()``: shared memory written by ordinary stores (``cp.async`` too) that
  ``wgmma`` (the async proxy) reads next needs it in each writing thread before the barrier.
- ``ox.warpgroup.id()``: ``thread.idx.x // 128``, warp-uniform (read from lane 0 by a shuffle, as
  CUTLASS's ``canonical_warp_group_idx``); ``setmaxnreg_inc(n)`` / ``setmaxnreg_dec(n)``: the
  warpgroup's register budget (``n`` a constant multiple of 8 from 24 to 256), which takes
  effect only in a kernel with a register cap at entry (``launch_bounds=`` or ``max_registers=``).

Every entry records the arch it needs (``IntrinsicInfo.min_arch``): ``wgmma`` and ``setmaxnreg``
exist on ``sm_90a`` only (``fence.proxy.async`` on ``sm_90`` and later); a kernel using one built
for another arch is a located compile error (``passes/arch_requirements.py``).

Lowering: ``llvm.nvvm.wgmma.fence/commit_group/wait_group`` and ``llvm.nvvm.setmaxnreg.*`` for
LLVM's NVPTX; inline PTX where libNVVM compiles the
module. ``wgmma.mma_async`` has no LLVM intrinsic: it is inline PTX on both backends, its
``{$0, ..., $127}`` accumulator list built from the accumulator's type, tied to the inputs.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.lang.types import SCALAR_TYPES

from ..ir import nodes as ir
from ..ir.types import I32, ArrayType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call, instruction_call
from .entry import IntrinsicInfo, Role
from .mma import fragment_operand, load_registers

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "SWIZZLES", "accumulator_shape", "matrix_descriptor_bits"]

F32 = SCALAR_TYPES["f32"]
SM90A = "sm_90a"
# the swizzle a shared array may be declared with (bytes per row) -> the descriptor's layout type
SWIZZLES: dict[int, int] = {128: 1, 64: 2, 32: 3}
INPUTS = ("f16", "bf16")
# 8-bit floats (PTX .e4m3/.e5m2): K of 32 per instruction, both operands K-major
INPUTS_8BIT: dict[str, str] = {"f8e4m3": "e4m3", "f8e5m2": "e5m2"}
# f32 arrays read as tf32 (PTX .tf32): K of 8 per instruction, both operands K-major
INPUTS_TF32 = ("f32",)
FRAGMENT = "wgmma.c:"
# the K of one instruction (the accumulator's kN) for each input element type
K_STEP: dict[str, int] = {"f16": 16, "bf16": 16, "f8e4m3": 32, "f8e5m2": 32, "f32": 8}
# what PTX calls each input type in the instruction's name
PTX_TYPE: dict[str, str] = {"f16": "f16", "bf16": "bf16", "f8e4m3": "e4m3", "f8e5m2": "e5m2", "f32": "tf32"}


def accumulator_shape(fragment: str | None) -> tuple[int, int, int] | None:
    """``"wgmma.c:m64n256k16"`` -> ``(64, 256, 16)``; None for anything else."""
    if fragment is None or not fragment.startswith(FRAGMENT):
        return None
    shape = fragment[len(FRAGMENT):]
    m, _, rest = shape[1:].partition("n")
    n, _, k = rest.partition("k")
    return int(m), int(n), int(k)


def _shape(tr: TypingContext, node: ast.expr) -> tuple[str, int]:
    text = tr.const_str(node)
    hint = ("shapes: 'm64nNk16' (f16/bf16 inputs), 'm64nNk32' (f8e4m3/f8e5m2 inputs) or 'm64nNk8' (f32 inputs "
            "read as tf32) with N a multiple of 8 from 8 to 256, e.g. 'm64n256k16'")
    if text is None or not text.startswith("m64n") or not text.endswith(("k16", "k32", "k8")):
        raise tr.error(node, f"unknown wgmma shape {ast.unparse(node)}", hint)
    digits = text[len("m64n"):text.rindex("k")]
    if not digits.isdigit() or not 8 <= int(digits) <= 256 or int(digits) % 8:
        raise tr.error(node, f"unknown wgmma shape {ast.unparse(node)}", hint)
    return text, int(digits)


def _type_accumulator(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, (1, 2), info.name)
    shape, n = _shape(tr, node.args[0])
    if len(node.args) == 2 and tr.element_type(node.args[1]) != F32:
        raise tr.error(node.args[1], f"a wgmma accumulator holds f32, not {ast.unparse(node.args[1])}",
                       "every input type accumulates in f32; convert when storing the result")
    return ir.Intrinsic(info.name, [], ArrayType("local", F32, (n // 2,), fragment=FRAGMENT + shape), tr.loc(node))


def _lower_allocation(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is allocated by its assignment, not lowered as a value")


def _accumulator(tr: TypingContext, node: ast.expr, what: str) -> tuple[ir.Expr, ArrayType]:
    value = tr.expr(node)
    ty = value.ty
    if not isinstance(ty, ArrayType) or accumulator_shape(ty.fragment) is None:
        raise tr.error(node, f"{what} must be a wgmma accumulator (ox.wgmma.accumulator(\"m64n256k16\")), "
                       f"got {type_name(ty)}")
    return value, ty


def _operand(tr: TypingContext, node: ast.expr, index_node: ast.expr, what: str) -> tuple[ir.Expr, ir.Expr, ArrayType]:
    array = tr.expr(node)
    ty = array.ty
    if not isinstance(ty, ArrayType) or ty.space != "shared":
        raise tr.error(node, f"wgmma.mma reads {what} from a shared array, got {type_name(ty)}",
                       "declare it ox.shared.array(shape, T, swizzle=128) (or ox.shared.dynamic(T, swizzle=128))")
    if ty.elem.name not in K_STEP:
        raise tr.error(node, f"wgmma.mma multiplies f16, bf16, f8e4m3, f8e5m2 or f32 (as tf32), {what} holds "
                       f"{ty.elem.name}")
    if ty.swizzle not in SWIZZLES:
        raise tr.error(node, f"{what} ({ast.unparse(node)}) is a shared array without a swizzle; wgmma reads "
                       "swizzled tiles", "declare it with swizzle=128 (or 64, 32): rows of that many bytes, "
                       "16-byte chunks XORed with the row (ox.mma.swizzle(i, 3, 3, 3) for 128 bytes of f16/bf16)")
    index = tr.materialize(tr.expr(index_node))
    st = as_scalar(index.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(index_node, f"the element offset of {what} must be an integer, got {type_name(index.ty)}")
    return array, tr.convert(index, I32, index_node), ty


def _register_a(tr: TypingContext, node: ast.expr) -> tuple[ir.Expr, int, ArrayType]:
    """A register A operand: an ``ox.mma.fragment_a("m16n8k16", T)`` (or ``frags[i]`` of an
    array of them), whose 8 elements per thread are wgmma's A fragment of ``m64nNk16`` (warp
    ``w`` of the warpgroup holding rows ``16 w`` to ``16 w + 15`` as mma.sync's m16n8k16 A)."""
    array, ty, first = fragment_operand(tr, node)
    if ty.space == "shared":
        raise tr.error(node, "wgmma.mma(acc, a, a_index, b, b_index) takes 5 arguments, got 4: A is a shared array",
                       "the element offset of A follows it; a register A is an ox.mma.fragment_a(\"m16n8k16\", T)")
    if ty.fragment != "a:m16n8k16" or ty.elem.name not in INPUTS:
        raise tr.error(node, f"a register A of wgmma.mma is an ox.mma.fragment_a(\"m16n8k16\", T) of f16 or bf16, "
                       f"got {type_name(ty)}", "or pass a swizzled shared array and its element offset: "
                       "wgmma.mma(acc, a, a_index, b, b_index)")
    return array, first, ty


def _type_mma(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if len(node.args) not in (4, 5):
        raise tr.error(node, f"wgmma.mma takes (acc, a, a_index, b, b_index) with A in shared memory, or "
                       f"(acc, a_fragment, b, b_index) with A in registers; got {len(node.args)} arguments",
                       "acc: ox.wgmma.accumulator; a, b: swizzled shared arrays; the indices: element offsets; "
                       "a_fragment: an ox.mma.fragment_a(\"m16n8k16\", T)")
    acc, acc_ty = _accumulator(tr, node.args[0], "acc")
    registers = len(node.args) == 4
    if registers:
        a, first, a_ty = _register_a(tr, node.args[1])
        a_index: ir.Expr = ir.Const(first, I32, tr.loc(node.args[1]))
        b, b_index, b_ty = _operand(tr, node.args[2], node.args[3], "B")
        b_node = node.args[2]
    else:
        a, a_index, a_ty = _operand(tr, node.args[1], node.args[2], "A")
        b, b_index, b_ty = _operand(tr, node.args[3], node.args[4], "B")
        b_node = node.args[3]
    eight_bit = a_ty.elem.name in INPUTS_8BIT
    tf32 = a_ty.elem.name in INPUTS_TF32
    if a_ty.elem != b_ty.elem and not (eight_bit and b_ty.elem.name in INPUTS_8BIT):
        raise tr.error(b_node, f"A holds {a_ty.elem.name} but B holds {b_ty.elem.name}",
                       "A and B of one wgmma have one 16-bit element type (f16 or bf16), are both f32 (read as "
                       "tf32), or are both 8-bit floats (f8e4m3/f8e5m2, which may mix)")
    _, n, k_step = accumulator_shape(acc_ty.fragment)  # type: ignore[misc]
    want = K_STEP[a_ty.elem.name]
    if k_step != want:
        raise tr.error(node.args[0], f"the accumulator's shape m64n{n}k{k_step} does not fit {a_ty.elem.name} inputs: "
                       f"wgmma multiplies K = {want} of them per instruction",
                       f"declare it ox.wgmma.accumulator(\"m64n{n}k{want}\")")
    keywords = {k.arg: k for k in node.keywords}
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value, f"wgmma.mma() has no keyword {k.arg!r}", "keywords: " + ", ".join(info.keywords))
    b_major = "k"
    if "b_major" in keywords:
        given = tr.const_str(keywords["b_major"].value)
        if given not in ("k", "mn"):
            raise tr.error(keywords["b_major"].value, f"b_major= is 'k' (B stored as rows of K: a row-major Bᵀ) or "
                           f"'mn' (rows of N: a row-major B), got {ast.unparse(keywords['b_major'].value)}")
        b_major = given
    if eight_bit and b_major == "mn":
        raise tr.error(keywords["b_major"].value, f"wgmma with 8-bit operands ({a_ty.elem.name}) reads both A and B "
                       "K-major: PTX has no transpose for them", "store B as rows of K (a row-major Bᵀ, N×K: "
                       "K-contiguous as torch._scaled_mm takes it) and leave b_major out")
    if tf32 and b_major == "mn":
        raise tr.error(keywords["b_major"].value, "wgmma with f32 operands (read as tf32) reads both A and B "
                       "K-major: PTX has no transpose for tf32", "store B as rows of K (a row-major Bᵀ, N×K: "
                       "bt = b.t().contiguous()) and leave b_major out")
    b_rows = 0
    if b_major == "mn":
        if "b_rows" not in keywords:
            raise tr.error(node, "an N-major B (b_major='mn') needs b_rows=: the rows of K each chunk of "
                           f"{b_ty.swizzle} bytes of N holds, one chunk after the other",
                           "for B tiles of BK rows of K stored as [BN // 64][BK][64], b_rows=BK")
        rows = tr.const_int(keywords["b_rows"].value)
        if rows is None or rows <= 0 or rows % 8:
            raise tr.error(keywords["b_rows"].value, "b_rows= must be a positive compile-time multiple of 8, got "
                           f"{ast.unparse(keywords['b_rows'].value)}")
        b_rows = rows
    elif "b_rows" in keywords:
        raise tr.error(keywords["b_rows"].value, "b_rows= describes an N-major B; this B is K-major",
                       "add b_major='mn', or leave b_rows out")
    scale_d: ir.Expr = ir.Const(1, I32, tr.loc(node))
    if "scale_d" in keywords:
        value_node = keywords["scale_d"].value
        value = tr.materialize(tr.expr(value_node))
        st = as_scalar(value.ty)
        if st is None or st.kind not in ("bool", "int", "uint"):
            raise tr.error(value_node, f"scale_d= is a bool (False: D = A·B, True: D = A·B + D), got {type_name(value.ty)}")
        scale_d = tr.convert(value, I32, value_node)
    # a_swizzle "0": A is a register fragment (wgmma_order reads that too)
    return ir.Intrinsic(info.name, [acc, a, a_index, b, b_index, scale_d], VoidType(), tr.loc(node),
                        options=(str(n), a_ty.elem.name, "0" if registers else str(a_ty.swizzle), str(b_ty.swizzle),
                                 b_major, str(b_rows), str(k_step), b_ty.elem.name))


def matrix_descriptor_bits(swizzle: int, itemsize: int, mn_major: bool, rows: int) -> int:
    """The constant part of a shared-memory matrix descriptor (everything but the start
    address): leading byte offset (bits 16-29), stride byte offset (32-45), layout type (62-63),
    each offset in units of 16 bytes (PTX "Matrix Descriptor Format", CUTLASS's make_gmma_desc).

    K-major: 8 rows of ``swizzle`` bytes make one swizzle atom, the next 8 rows follow at
    ``8 * swizzle`` bytes (the stride offset); the leading offset is unused (16 elements of K fit
    in a row; 32 elements of an 8-bit K also take 32 bytes). N-major: the stride offset steps 8 rows of K (``8 * swizzle`` bytes), the leading
    offset one chunk of ``swizzle`` bytes of N (``rows * swizzle`` bytes)."""
    del itemsize  # the layouts are in bytes
    stride = 8 * swizzle
    leading = rows * swizzle if mn_major else 16
    return ((leading >> 4) << 16) | ((stride >> 4) << 32) | (SWIZZLES[swizzle] << 62)


def _descriptor(fl: LoweringContext, array: ir.Expr, index: ir.Expr, bits: int) -> ll.Value:
    b = fl.b
    view = fl.view(array)
    ptr = b.gep(view.ptr, [fl.expr(index)], source_etype=fl.elem_type(view.elem))
    address = b.zext(b.ptrtoint(ptr, ll.IntType(32)), ll.IntType(64))  # the shared window is 32-bit
    start = b.lshr(b.and_(address, ll.Constant(ll.IntType(64), 0x3FFFF)), ll.Constant(ll.IntType(64), 4))
    return b.or_(start, ll.Constant(ll.IntType(64), bits))


def _lower_mma(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    n_text, a_elem, a_swizzle, b_swizzle, b_major, b_rows, k, b_elem = e.options
    n = int(n_text)
    acc, a, a_index, bb, b_index, scale_d = e.args
    count = n // 2
    itemsize = 1 if a_elem in INPUTS_8BIT else 4 if a_elem in INPUTS_TF32 else 2
    registers = a_swizzle == "0"
    # the start addresses are byte addresses of element a_index / b_index (a gep over the element
    # type): a K step of 32 8-bit elements advances 32 bytes, as 16 16-bit or 8 f32 elements do
    if registers:  # four 32-bit registers, two 16-bit elements each, from the fragment's first element
        assert isinstance(a_index, ir.Const)
        a_operands = load_registers(fl, a, int(a_index.value) // 2, 4)
    else:
        a_operands = [_descriptor(fl, a, a_index, matrix_descriptor_bits(int(a_swizzle), itemsize, False, 0))]
    desc_b = _descriptor(fl, bb, b_index, matrix_descriptor_bits(int(b_swizzle), itemsize, b_major == "mn", int(b_rows)))
    view = fl.view(acc)
    f32 = ll.FloatType()
    slots = [b.gep(view.ptr, [ll.Constant(ll.IntType(32), i)]) for i in range(count)]
    values = [b.load(p, typ=f32) for p in slots]
    regs = ", ".join(f"${i}" for i in range(count))
    at = 2 * count  # the outputs, then as many inputs tied to them, then A, B's descriptor, scale-d
    a_text = f"${at}"
    if registers:
        a_text = "{" + ", ".join(f"${at + i}" for i in range(4)) + "}"
        at += 3  # B's descriptor and scale-d come 3 operands later
    types = f"{PTX_TYPE[a_elem]}.{PTX_TYPE[b_elem]}"
    if a_elem in INPUTS_8BIT or a_elem in INPUTS_TF32:
        # 8-bit and tf32 inputs: d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b (no transpose operands)
        tail = ""
    else:
        # imm-trans-a (not with a register A), imm-trans-b
        tail = f"{'' if registers else ', 0'}, {1 if b_major == 'mn' else 0}"
    text = ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${at + 2}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{types} {{{regs}}}, {a_text}, ${at + 1}, p, 1, 1{tail};\n"
            "}")
    a_constraints = ["r"] * 4 if registers else ["l"]
    constraint = ",".join(["=f"] * count + [str(i) for i in range(count)] + a_constraints + ["l", "r", "~{memory}"])
    result = asm_call(fl, text, constraint, ll.LiteralStructType([f32] * count),
                      [*values, *a_operands, desc_b, fl.expr(scale_d)])
    for i, p in enumerate(slots):
        b.store(b.extract_value(result, i), p)
    return ll.Constant(ll.IntType(32), 0)


def _type_no_args(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node))


# instruction text (libNVVM) and NVPTX intrinsic of the entries without operands
_SIMPLE: dict[str, tuple[str, str]] = {
    "wgmma.fence": ("wgmma.fence.sync.aligned;", "llvm.nvvm.wgmma.fence.sync.aligned"),
    "wgmma.commit_group": ("wgmma.commit_group.sync.aligned;", "llvm.nvvm.wgmma.commit_group.sync.aligned"),
}


def _lower_simple(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    text, name = _SIMPLE[info.name]
    return instruction_call(fl, text, name, convergent=True)


def _type_wait(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if not node.args:
        raise tr.error(node, "wgmma.wait_group(n, acc, ...) takes the number of groups that may stay pending "
                       "and the accumulators read after the wait")
    n = tr.const_int(node.args[0])
    if n is None or not 0 <= n <= 7:
        raise tr.error(node.args[0], f"wgmma.wait_group takes a compile-time count of groups from 0 to 7, got "
                       f"{ast.unparse(node.args[0])}", "0 before reading the accumulator; 1 to keep one group in flight")
    accs = [_accumulator(tr, arg, "each argument after the count")[0] for arg in node.args[1:]]
    return ir.Intrinsic(info.name, accs, VoidType(), tr.loc(node), options=(str(n),))


def fence_accumulator(fl: LoweringContext, acc: ir.Expr) -> None:
    """An empty asm that reads and rewrites every register of ``acc``: code that reads it cannot
    move above the wait before it (CUTLASS's ``warpgroup_fence_operand``)."""
    b = fl.b
    view = fl.view(acc)
    ty = acc.ty
    assert isinstance(ty, ArrayType) and ty.size is not None
    f32 = ll.FloatType()
    slots = [b.gep(view.ptr, [ll.Constant(ll.IntType(32), i)]) for i in range(ty.size)]
    values = [b.load(p, typ=f32) for p in slots]
    constraint = ",".join(["=f"] * ty.size + [str(i) for i in range(ty.size)])
    result = asm_call(fl, "", constraint, ll.LiteralStructType([f32] * ty.size), values)
    for i, p in enumerate(slots):
        b.store(b.extract_value(result, i), p)


def _type_fence_operand(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if not node.args or node.keywords:
        raise tr.error(node, "wgmma.fence_operand(x, ...) takes the accumulators and register fragments to fence")
    arrays: list[ir.Expr] = []
    for arg in node.args:
        value = tr.expr(arg)
        ty = value.ty
        if not isinstance(ty, ArrayType) or ty.space != "local" or ty.fragment is None or ty.size is None \
                or ty.elem.bits not in (16, 32) or (ty.elem.bits == 16 and ty.size % 2):
            raise tr.error(arg, f"wgmma.fence_operand takes wgmma accumulators and mma fragments of 16- or 32-bit "
                           f"elements, got {type_name(ty)}")
        arrays.append(value)
    return ir.Intrinsic(info.name, arrays, VoidType(), tr.loc(node))


def fence_registers(fl: LoweringContext, array: ir.Expr) -> None:
    """An empty asm that reads and rewrites every 32-bit register of ``array`` (f32 values, or
    pairs of 16-bit ones): what writes them happens before it, what reads them after
    (CUTLASS's ``warpgroup_fence_operand``)."""
    ty = array.ty
    assert isinstance(ty, ArrayType) and ty.size is not None
    if ty.elem.bits == 32:
        fence_accumulator(fl, array)
        return
    b = fl.b
    count = ty.size // 2
    ptr = b.bitcast(fl.view(array).ptr, ll.PointerType(ll.IntType(32), fl.view(array).ptr.type.addrspace))
    slots = [b.gep(ptr, [ll.Constant(ll.IntType(32), i)]) for i in range(count)]
    values = [b.load(p, typ=ll.IntType(32)) for p in slots]
    constraint = ",".join(["=r"] * count + [str(i) for i in range(count)])
    result = asm_call(fl, "", constraint, ll.LiteralStructType([ll.IntType(32)] * count), values)
    for i, p in enumerate(slots):
        b.store(b.extract_value(result, i), p)


def _lower_fence_operand(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    for array in e.args:
        fence_registers(fl, array)
    return ll.Constant(ll.IntType(32), 0)


def _lower_wait(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    n = int(e.options[0])
    if fl.libnvvm:
        asm_call(fl, f"wgmma.wait_group.sync.aligned {n};", "~{memory}", ll.VoidType(), [])
    else:
        fn = fl.intrinsic("llvm.nvvm.wgmma.wait_group.sync.aligned", ll.VoidType(), [ll.IntType(64)])
        fn.attributes.add("convergent")
        fl.b.call(fn, [ll.Constant(ll.IntType(64), n)])
    for acc in e.args:
        fence_accumulator(fl, acc)
    return ll.Constant(ll.IntType(32), 0)


def _type_setmaxnreg(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 1, info.name)
    n = tr.const_int(node.args[0])
    if n is None or not 24 <= n <= 256 or n % 8:
        raise tr.error(node.args[0], f"{info.name} takes a compile-time register count, a multiple of 8 from 24 to "
                       f"256, got {ast.unparse(node.args[0])}")
    return ir.Intrinsic(info.name, [], VoidType(), tr.loc(node), options=(str(n),))


def _lower_setmaxnreg(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    n = int(e.options[0])
    direction = info.op.rpartition("_")[2]  # "inc" or "dec"
    if fl.libnvvm:
        return asm_call(fl, f"setmaxnreg.{direction}.sync.aligned.u32 {n};", "", ll.VoidType(), [])
    fn = fl.intrinsic(f"llvm.nvvm.setmaxnreg.{direction}.sync.aligned.u32", ll.VoidType(), [ll.IntType(32)])
    fn.attributes.add("convergent")
    return fl.b.call(fn, [ll.Constant(ll.IntType(32), n)])


def _type_warpgroup_id(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 0, info.name)
    return ir.Intrinsic(info.name, [], I32, tr.loc(node))


def _lower_warpgroup_id(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    tid = b.call(fl.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", ll.IntType(32), []), [])
    group = b.lshr(tid, ll.Constant(ll.IntType(32), 7))
    # the shuffle from lane 0 tells the compiler the value is warp-uniform
    shfl = fl.intrinsic("llvm.nvvm.shfl.sync.idx.i32", ll.IntType(32), [ll.IntType(32)] * 4)
    shfl.attributes.add("convergent")
    return b.call(shfl, [ll.Constant(ll.IntType(32), -1), group, ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), 31)])


def _wgmma(*roles: Role) -> frozenset[Role]:
    return frozenset({Role.WGMMA, Role.WARPGROUP_COLLECTIVE, *roles})


ENTRIES = [
    IntrinsicInfo("wgmma.accumulator", _type_accumulator, _lower_allocation, roles=frozenset({Role.WGMMA})),
    IntrinsicInfo("wgmma.mma", _type_mma, _lower_mma, convergent=True, keywords=("scale_d", "b_major", "b_rows"),
                  min_arch=SM90A, roles=_wgmma(Role.WGMMA_MMA)),
    IntrinsicInfo("wgmma.fence", _type_no_args, _lower_simple, convergent=True, min_arch=SM90A,
                  roles=_wgmma(Role.WGMMA_FENCE)),
    IntrinsicInfo("wgmma.fence_operand", _type_fence_operand, _lower_fence_operand, roles=frozenset({Role.WGMMA})),
    IntrinsicInfo("wgmma.commit_group", _type_no_args, _lower_simple, convergent=True, min_arch=SM90A,
                  roles=_wgmma(Role.WGMMA_COMMIT)),
    IntrinsicInfo("wgmma.wait_group", _type_wait, _lower_wait, convergent=True, min_arch=SM90A,
                  roles=_wgmma(Role.WGMMA_WAIT)),
    IntrinsicInfo("warpgroup.id", _type_warpgroup_id, _lower_warpgroup_id, thread_dependent=True, convergent=True,
                  value_range=(0, 7), roles=frozenset({Role.WARPGROUP_UNIFORM})),
    IntrinsicInfo("warpgroup.setmaxnreg_inc", _type_setmaxnreg, _lower_setmaxnreg, convergent=True, min_arch=SM90A,
                  roles=frozenset({Role.WARPGROUP_COLLECTIVE})),
    IntrinsicInfo("warpgroup.setmaxnreg_dec", _type_setmaxnreg, _lower_setmaxnreg, convergent=True, min_arch=SM90A,
                  roles=frozenset({Role.WARPGROUP_COLLECTIVE})),
]
