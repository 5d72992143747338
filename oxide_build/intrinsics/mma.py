"""Tensor cores, the sm_80 path (``mma.*``): warp-wide ``mma.sync`` on register fragments,
``ldmatrix`` from shared memory into fragments, ``stmatrix`` (sm_90) from fragments into shared
memory, and the swizzle of shared-memory offsets.

A fragment is a per-thread array whose type knows its role and shape
(``ox.mma.fragment_a("m16n8k16", bf16)``: the 8 bf16 values of A that this lane holds), so a
call with the wrong fragment is a compile error, not wrong results. Shapes:

| shape | A, B element | a | b | c (f32 accumulator) |
| --- | --- | --- | --- | --- |
| ``m16n8k16`` | ``f16``, ``bf16`` | 8 | 4 | 4 |
| ``m16n8k8`` | ``f32`` (read as tf32) | 4 | 2 | 4 |
| ``m16n8k32`` | ``f8e4m3``, ``f8e5m2`` (sm_89+; A and B may differ) | 16 | 8 | 4 |

The element layout per lane is PTX's (``mma.m16n8k16`` "Matrix fragments": lane ``l`` holds
``a[0:2]`` at row ``l // 4``, columns ``2 * (l % 4) + 0/1``, and so on).

``ldmatrix(dst..., smem, index)`` and ``stmatrix(src..., smem, index)`` take the same arguments:
1, 2 or 4 registers of fragments (``.x1/.x2/.x4``), each register one 8x8 matrix of 16-bit
elements whose 16-byte rows lanes 8i..8i+7 address (``index``: where this lane's row starts);
lane ``l`` holds the two elements at row ``l // 4``, columns ``2 * (l % 4)`` and ``+1`` of each
(``trans=True``: of its transpose), the layout of an ``mma`` accumulator and of a ``wgmma`` one.

Lowering: LLVM's NVPTX intrinsics (``llvm.nvvm.mma.*``, ``llvm.nvvm.ldmatrix.*``,
``llvm.nvvm.stmatrix.*``) where llvmlite compiles the module; where libNVVM does (``--backend
nvvm``, LTO-IR), which has none of them, the same instructions as inline PTX.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple

from oxide.lang.types import SCALAR_TYPES

from ..ir import nodes as ir
from ..ir.ops import BinaryOp
from ..ir.types import I64, ArrayType, VoidType, as_scalar, type_name
from .arguments import check_arg_count
from .asm import asm_call
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "SHAPES", "Shape", "fragment_operand", "load_registers"]

F32 = SCALAR_TYPES["f32"]


class Shape(NamedTuple):
    inputs: tuple[str, ...]  # the element types A and B may have
    a: int  # elements per lane
    b: int
    c: int


SHAPES: dict[str, Shape] = {
    "m16n8k16": Shape(("f16", "bf16"), 8, 4, 4),
    "m16n8k8": Shape(("f32",), 4, 2, 4),
    "m16n8k32": Shape(("f8e4m3", "f8e5m2"), 16, 8, 4),
}
PTX_ELEMENT = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "f8e4m3": "e4m3", "f8e5m2": "e5m2"}
ROLES = ("a", "b", "c")


def _shape(tr: TypingContext, node: ast.expr) -> str:
    shape = tr.const_str(node)
    if shape not in SHAPES:
        raise tr.error(node, f"unknown mma shape {ast.unparse(node)}", "shapes: " + ", ".join(repr(s) for s in SHAPES))
    return shape


def _type_fragment(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    role = info.op[-1]
    fixed = 1 if role == "c" else 2
    check_arg_count(tr, node, (fixed, fixed + 1), info.name)
    shape = _shape(tr, node.args[0])
    spec = SHAPES[shape]
    if role == "c":
        elem = F32
    else:
        elem = tr.element_type(node.args[1])
        if elem.name not in spec.inputs:
            raise tr.error(node.args[1], f"an {shape} fragment holds {' or '.join(spec.inputs)}, not {elem.name}",
                           "m16n8k16 multiplies f16 or bf16; m16n8k8 multiplies f32 values as tf32; "
                           "m16n8k32 multiplies f8e4m3 or f8e5m2")
    size = {"a": spec.a, "b": spec.b, "c": spec.c}[role]
    dims: tuple[int, ...] = (size,)
    if len(node.args) > fixed:  # several fragments: frag[i] is one, frag[i, j] its element j
        count = tr.const_int(node.args[fixed])
        if count is None or count <= 0:
            raise tr.error(node.args[fixed], "the number of fragments must be a positive compile-time integer")
        dims = (count, size)
    return ir.Intrinsic(info.name, [], ArrayType("local", elem, dims, fragment=f"{role}:{shape}"), tr.loc(node))


def _lower_allocation(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is allocated by its assignment, not lowered as a value")


def fragment_operand(tr: TypingContext, node: ast.expr) -> tuple[ir.Expr, ArrayType, int]:
    """A fragment operand: a fragment (or a 16-bit local array), or ``frags[i]``, fragment ``i``
    (a compile-time index) of an array of them; gives the array, its type and the first element."""
    if isinstance(node, ast.Subscript):
        array = tr.expr(node.value)
        ty = array.ty
        if isinstance(ty, ArrayType) and ty.fragment is not None and ty.shape is not None and len(ty.shape) == 2:
            index = tr.const_int(node.slice)
            if index is None or not 0 <= index < ty.shape[0]:
                raise tr.error(node.slice, f"{ast.unparse(node.value)} holds {ty.shape[0]} fragments: the index must be "
                               f"a compile-time integer from 0 to {ty.shape[0] - 1}, got {ast.unparse(node.slice)}",
                               "index fragments with constants (a static_range loop variable), so they stay in registers")
            return array, ty, index * ty.shape[1]
    value = tr.expr(node)
    if isinstance(value.ty, ArrayType) and value.ty.shape is not None and len(value.ty.shape) == 2 \
            and value.ty.fragment is not None:
        raise tr.error(node, f"{ast.unparse(node)} holds {value.ty.shape[0]} fragments: pick one, "
                       f"{ast.unparse(node)}[i]")
    if not isinstance(value.ty, ArrayType):
        raise tr.error(node, f"expected a fragment, got {type_name(value.ty)}")
    return value, value.ty, 0


def _fragment_size(ty: ArrayType) -> int:
    assert ty.shape is not None
    return ty.shape[-1]


def _fragment(tr: TypingContext, node: ast.expr, what: str) -> tuple[ir.Expr, ArrayType, int]:
    value, ty, first = fragment_operand(tr, node)
    if ty.fragment is None:
        raise tr.error(node, f"{what} must be an mma fragment (ox.mma.fragment_{what[0]}), got {type_name(ty)}")
    return value, ty, first


def _type_sync(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    check_arg_count(tr, node, 4, info.name)
    args: list[ir.Expr] = []
    types: list[ArrayType] = []
    firsts: list[str] = []
    for arg, role in zip(node.args, ("c", "a", "b", "c")):
        value, ty, first = _fragment(tr, arg, role)
        args.append(value)
        types.append(ty)
        firsts.append(str(first))
    shape = types[1].fragment.partition(":")[2]  # type: ignore[union-attr]
    for arg, role, ty in zip(node.args, ("d", "a", "b", "c"), types):
        want = f"{'c' if role == 'd' else role}:{shape}"
        if ty.fragment != want:
            of_a = " (the shape of a)" if role != "a" and ty.fragment.partition(":")[2] != shape else ""  # type: ignore[union-attr]
            raise tr.error(arg, f"mma.sync(d, a, b, c) takes {role} as {want.replace(':', ' fragment ')}{of_a}, got {ty}",
                           "d and c are fragment_c, a fragment_a, b fragment_b, all of one shape")
    if types[1].elem != types[2].elem and types[1].elem.kind != "fp8":  # fp8 mixes e4m3 and e5m2
        raise tr.error(node.args[2], f"a holds {types[1].elem.name} but b holds {types[2].elem.name}",
                       "A and B of one mma have one element type")
    return ir.Intrinsic(info.name, args, VoidType(), tr.loc(node),
                        options=(shape, types[1].elem.name, types[2].elem.name, *firsts))


def _register_ptr(fl: LoweringContext, array: ir.Expr) -> ll.Value:
    ptr = fl.view(array).ptr
    return fl.b.bitcast(ptr, ll.PointerType(ll.IntType(32), ptr.type.addrspace))


def load_registers(fl: LoweringContext, array: ir.Expr, first: int, count: int,
                    float_regs: bool = False) -> list[ll.Value]:
    """``count`` 32-bit registers of ``array`` from register ``first`` (f32 values when
    ``float_regs``, else raw 32-bit words: two 16-bit elements, or a tf32)."""
    b = fl.b
    view = fl.view(array)
    if float_regs:
        return [b.load(b.gep(view.ptr, [ll.Constant(ll.IntType(32), first + i)]), typ=ll.FloatType()) for i in range(count)]
    ptr = _register_ptr(fl, array)
    return [b.load(b.gep(ptr, [ll.Constant(ll.IntType(32), first + i)]), typ=ll.IntType(32)) for i in range(count)]


def _store_registers(fl: LoweringContext, array: ir.Expr, values: list[ll.Value], first: int = 0) -> None:
    b = fl.b
    ptr = fl.view(array).ptr if isinstance(values[0].type, ll.FloatType) else _register_ptr(fl, array)
    for i, v in enumerate(values):
        b.store(v, b.gep(ptr, [ll.Constant(ll.IntType(32), first + i)]))


def _declare(fl: LoweringContext, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
    fn = fl.intrinsic(name, ret, args)
    fn.attributes.add("convergent")
    return fn


def _lower_sync(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    shape, elem, elem_b, *firsts = e.options
    first_d, first_a, first_b, first_c = map(int, firsts)
    spec = SHAPES[shape]
    d, a, bb, c = e.args
    words = 32 // SCALAR_TYPES[elem].bits  # elements per 32-bit register
    regs_a, regs_b = spec.a // words, spec.b // words
    ra = load_registers(fl, a, first_a // words, regs_a)
    rb = load_registers(fl, bb, first_b // words, regs_b)
    rc = load_registers(fl, c, first_c, spec.c, float_regs=True)
    f32 = ll.FloatType()
    ptx_a, ptx_b = PTX_ELEMENT[elem], PTX_ELEMENT[elem_b]
    if fl.libnvvm:
        regs = list(range(spec.c + regs_a + regs_b + spec.c))
        groups, at = [], 0
        for n in (spec.c, regs_a, regs_b, spec.c):
            groups.append("{" + ", ".join(f"${i}" for i in regs[at:at + n]) + "}")
            at += n
        text = f"mma.sync.aligned.{shape}.row.col.f32.{ptx_a}.{ptx_b}.f32 " + ", ".join(groups) + ";"
        constraint = ",".join(["=f"] * spec.c + ["r"] * (regs_a + regs_b) + ["f"] * spec.c)
        result = asm_call(fl, text, constraint, ll.LiteralStructType([f32] * spec.c), [*ra, *rb, *rc])
    else:
        if elem == "f16":
            h2 = ll.VectorType(ll.HalfType(), 2)
            ra = [b.bitcast(r, h2) for r in ra]
            rb = [b.bitcast(r, h2) for r in rb]
            name = f"llvm.nvvm.mma.{shape}.row.col.f32.f32"
        elif elem in ("f8e4m3", "f8e5m2"):  # needs PTX ISA 8.4 (backends/nvptx.py asks for it)
            name = f"llvm.nvvm.mma.{shape}.row.col.f32.{ptx_a}.{ptx_b}.f32"
        else:
            name = f"llvm.nvvm.mma.{shape}.row.col.{'bf16' if elem == 'bf16' else 'tf32'}"
        args = [*ra, *rb, *rc]
        fn = _declare(fl, name, ll.LiteralStructType([f32] * spec.c), [v.type for v in args])
        result = b.call(fn, args)
    _store_registers(fl, d, [b.extract_value(result, i) for i in range(spec.c)], first_d)
    return ll.Constant(ll.IntType(32), 0)


# ldmatrix, stmatrix -------------------------------------------------------------------------

class MatrixRows(NamedTuple):
    """What ``ldmatrix`` and ``stmatrix`` share once typed: the fragments (their first 32-bit
    register and number of registers, as option strings), the .x count, .trans, the shared array
    and this lane's row start, checked when bounds checks are on."""
    fragments: list[ir.Expr]
    places: list[str]
    registers: int
    trans: bool
    smem: ir.Expr
    row_start: ir.Expr
    checked: ir.Expr


def _type_matrix_rows(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> MatrixRows:
    """The arguments of ``ldmatrix(dst..., smem, index, trans=False)`` and of
    ``stmatrix(src..., smem, index, trans=False)``: fragments or local arrays of 16-bit (or, not
    transposed, 8-bit) elements making 1, 2 or 4 registers, a shared array and this lane's row."""
    op = info.op
    role, fill = ("dst", "fills") if op == "ldmatrix" else ("src", "stores")
    if len(node.args) < 3:
        raise tr.error(node, f"mma.{op}({role}, ..., smem, index) takes the fragments to "
                       f"{'fill' if op == 'ldmatrix' else 'store'}, a shared array and this lane's row start in it")
    trans = False
    for k in node.keywords:
        if k.arg != "trans" or not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool)):
            raise tr.error(k.value, f"mma.{op}() takes one keyword, trans=True or trans=False")
        trans = k.value.value
    fragments: list[ir.Expr] = []
    places: list[str] = []  # per fragment: its first register and its number of registers
    registers = 0
    for arg in node.args[:-2]:
        value, ty, first = fragment_operand(tr, arg)
        per_register = 32 // ty.elem.bits if ty.elem.bits in (8, 16) else 0
        if ty.space != "local" or not per_register or ty.shape is None or _fragment_size(ty) % per_register:
            hint = ("convert the f32 values to f16 or bf16 into a local array first "
                    "(frag = ox.local.array(8, T); frag[e] = T(acc[...]))"
                    if op == "stmatrix" and ty.elem.bits == 32 else "")
            raise tr.error(arg, f"{op} {fill} fragments of 16-bit elements (f16, bf16) or 8-bit ones "
                           f"(f8e4m3, f8e5m2), got {type_name(ty)}", hint)
        if trans and ty.elem.bits == 8:
            raise tr.error(node, f"{op} trans=True transposes 16-bit elements, so it cannot transpose "
                           f"{ty.elem.name} values",
                           "keep the fp8 B operand K-contiguous in shared memory (B transposed, N x K: "
                           "torch._scaled_mm's column-major B) and load it without trans"
                           if op == "ldmatrix" else "store 8-bit fragments without trans")
        fragments.append(value)
        places += [str(first // per_register), str(_fragment_size(ty) // per_register)]
        registers += _fragment_size(ty) // per_register
    if registers not in (1, 2, 4):
        moves = "loads" if op == "ldmatrix" else "stores"
        raise tr.error(node, f"{op} {moves} 1, 2 or 4 8x8 matrices (one 32-bit register each per lane); "
                       f"these fragments take {registers}",
                       "an m16n8k16 A fragment takes 4 (.x4), a B fragment 2 (.x2), two B fragments 4; "
                       "8 f16/bf16 values take 4")
    smem_node, index_node = node.args[-2], node.args[-1]
    smem = tr.expr(smem_node)
    if not isinstance(smem.ty, ArrayType) or smem.ty.space != "shared" or smem.ty.elem.bits not in (8, 16):
        reads = "reads" if op == "ldmatrix" else "writes"
        raise tr.error(smem_node, f"{op} {reads} a shared array of 16-bit or 8-bit elements, got {type_name(smem.ty)}")
    index = tr.materialize(tr.expr(index_node))
    index_type = as_scalar(index.ty)
    if index_type is None or index_type.kind not in ("int", "uint"):  # checked before the conversion hides it
        raise tr.error(index_node, f"the {op} index must be an integer, got {type_name(index.ty)}")
    index = tr.convert(index, I64, index_node)
    loc = tr.loc(node)
    checked: ir.Expr = index
    if tr.bounds_check:  # this lane's row: 16 bytes from index
        row = 128 // smem.ty.elem.bits
        site = tr.bounds_site(node, f"{op} row {ast.unparse(smem_node)}[{ast.unparse(index_node)} : +{row}]")
        last = ir.BinOp(BinaryOp.ADD, index, ir.Const(row - 1, I64, loc), I64, loc)
        length = smem.ty.size if smem.ty.size is not None else 1 << 62
        checked = ir.Intrinsic("checked_index", [last, ir.Const(length, I64, loc)], I64, loc, site)
    return MatrixRows(fragments, places, registers, trans, smem, index, checked)


def _type_matrix_copy(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    rows = _type_matrix_rows(tr, info, node)
    return ir.Intrinsic(info.name, [*rows.fragments, rows.smem, rows.row_start, rows.checked], VoidType(), tr.loc(node),
                        options=(f"x{rows.registers}", "trans" if rows.trans else "", *rows.places))


def _row_address(fl: LoweringContext, smem: ir.Expr, index: ir.Expr, checked: ir.Expr) -> ll.Value:
    """This lane's row in ``smem`` (a shared pointer), after its bounds check when there is one."""
    fl.expr(checked)
    view = fl.view(smem)
    return fl.b.gep(view.ptr, [fl.expr(index)], source_etype=fl.elem_type(view.elem))


def _lower_ldmatrix(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    count, trans, *places = e.options
    n = int(count[1:])
    *dsts, smem, index, checked = e.args
    ptr = _row_address(fl, smem, index, checked)
    ret: ll.Type = ll.IntType(32) if n == 1 else ll.LiteralStructType([ll.IntType(32)] * n)
    if fl.libnvvm:
        outs = ", ".join(f"${i}" for i in range(n))
        text = f"ldmatrix.sync.aligned.m8n8.{count}{'.trans' if trans else ''}.shared.b16 {{{outs}}}, [${n}];"
        address = b.ptrtoint(ptr, ll.IntType(64))
        result = asm_call(fl, text, ",".join(["=r"] * n + ["l"]), ret, [address])
    else:
        p8 = b.bitcast(ptr, ll.PointerType(ll.IntType(8), 3))
        name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.{count}{'.trans' if trans else ''}.b16"
        fn = fl.intrinsic(name, ret, [p8.type])
        fn.attributes.add("convergent")
        result = b.call(fn, [p8])
    regs = [result] if n == 1 else [b.extract_value(result, i) for i in range(n)]
    at = 0
    for i, dst in enumerate(dsts):
        first, size = int(places[2 * i]), int(places[2 * i + 1])
        _store_registers(fl, dst, regs[at:at + size], first)
        at += size
    return ll.Constant(ll.IntType(32), 0)


def _lower_stmatrix(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    count, trans, *places = e.options
    n = int(count[1:])
    *srcs, smem, index, checked = e.args
    ptr = _row_address(fl, smem, index, checked)
    regs: list[ll.Value] = []
    for i, src in enumerate(srcs):
        regs += load_registers(fl, src, int(places[2 * i]), int(places[2 * i + 1]))
    if fl.libnvvm:
        ins = ", ".join(f"${i + 1}" for i in range(n))
        text = f"stmatrix.sync.aligned.m8n8.{count}{'.trans' if trans else ''}.shared.b16 [$0], {{{ins}}};"
        asm_call(fl, text, ",".join(["l"] + ["r"] * n) + ",~{memory}", ll.VoidType(),
                 [b.ptrtoint(ptr, ll.IntType(64)), *regs])
    else:
        p8 = b.bitcast(ptr, ll.PointerType(ll.IntType(8), 3))
        name = f"llvm.nvvm.stmatrix.sync.aligned.m8n8.{count}{'.trans' if trans else ''}.b16"
        fn = _declare(fl, name, ll.VoidType(), [p8.type, *([ll.IntType(32)] * n)])
        b.call(fn, [p8, *regs])
    return ll.Constant(ll.IntType(32), 0)


# swizzle ------------------------------------------------------------------------------------

def _type_swizzle(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    """``swizzle(offset, bits, base, shift)`` = ``offset ^ ((offset >> shift) & (((1 << bits) - 1) << base))``:
    CUTLASS's ``Swizzle<bits, base, shift>`` on an element offset, pure integer arithmetic."""
    check_arg_count(tr, node, 4, info.name)
    offset = tr.materialize(tr.expr(node.args[0]))
    st = as_scalar(offset.ty)
    if st is None or st.kind not in ("int", "uint"):
        raise tr.error(node.args[0], f"mma.swizzle needs an integer offset, got {type_name(offset.ty)}")
    offset = tr.convert(offset, st, node.args[0])
    consts: list[int] = []
    for arg, what in zip(node.args[1:], ("bits", "base", "shift")):
        value = tr.const_int(arg)
        if value is None or not 0 <= value < st.bits:
            raise tr.error(arg, f"mma.swizzle's {what} must be a compile-time integer from 0 to {st.bits - 1}")
        consts.append(value)
    bits, base, shift = consts
    if shift < bits:
        raise tr.error(node.args[3], f"mma.swizzle's shift ({shift}) must be at least bits ({bits}), "
                       "or the swizzle is not a permutation")
    loc = tr.loc(node)
    mask = ((1 << bits) - 1) << base
    shifted = ir.BinOp(BinaryOp.SHR, offset, ir.Const(shift, st, loc), st, loc)
    return ir.BinOp(BinaryOp.BIT_XOR, offset, ir.BinOp(BinaryOp.BIT_AND, shifted, ir.Const(mask, st, loc), st, loc),
                    st, loc)


def _lowered_as_ir(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    raise AssertionError(f"{info.name} is typed into plain integer IR")


ENTRIES = [
    *(IntrinsicInfo(f"mma.fragment_{role}", _type_fragment, _lower_allocation) for role in ROLES),
    IntrinsicInfo("mma.sync", _type_sync, _lower_sync, convergent=True),
    IntrinsicInfo("mma.ldmatrix", _type_matrix_copy, _lower_ldmatrix, thread_dependent=True, convergent=True,
                  roles=frozenset({Role.LANE_VARYING}),
                  keywords=("trans",)),
    IntrinsicInfo("mma.stmatrix", _type_matrix_copy, _lower_stmatrix, convergent=True, keywords=("trans",),
                  min_arch="sm_90"),
    IntrinsicInfo("mma.swizzle", _type_swizzle, _lowered_as_ir),
]
