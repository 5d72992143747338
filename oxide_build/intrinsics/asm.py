"""Inline PTX, ``ox.asm(template, outputs=(...), inputs=(...), memory=False)``: the escape
hatch for instructions the language has no intrinsic for yet. Allowed only inside
``with ox.unsafe():`` (the compiler cannot check what the text does).

Operands are typed: an output is ``("=r", u32)`` (a constraint and the type it produces), an
input ``("r", value)``; the constraint letter must fit the type (``r`` a 32-bit integer, ``l`` a
64-bit integer, ``h`` a 16-bit value, ``f`` an ``f32``, ``d`` an ``f64``, ``n`` a compile-time
integer). The template names operands ``$0``, ``$1``, … (outputs first, then inputs; LLVM's
spelling: write ``$$`` for a literal ``$``). The call gives nothing, the one output, or a tuple
of the outputs. It lowers to an LLVM inline-asm call (``asm sideeffect``, convergent; with
``memory=True`` it also clobbers memory), which both backends compile.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import I32, TupleType, Type, VoidType, as_scalar, type_name
from .entry import IntrinsicInfo, Role

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES", "CONSTRAINT_TYPES", "asm_call", "instruction_call"]

# constraint letter -> the scalar types it takes, and what to say when a value does not fit
CONSTRAINT_TYPES: dict[str, tuple[tuple[str, ...], str]] = {
    "h": (("i16", "u16", "f16", "bf16"), "a 16-bit value (i16, u16, f16, bf16)"),
    "r": (("i32", "u32"), "a 32-bit integer (i32, u32)"),
    "l": (("i64", "u64"), "a 64-bit integer (i64, u64)"),
    "f": (("f32",), "an f32"),
    "d": (("f64",), "an f64"),
}
_OPERAND = re.compile(r"\$(\$|\d+|\{)")
_HINT = "constraints: 'r' (i32/u32), 'l' (i64/u64), 'h' (16-bit), 'f' (f32), 'd' (f64), 'n' (constant input)"


def _pairs(tr: TypingContext, node: ast.expr, what: str) -> list[tuple[ast.expr, ast.expr]]:
    if not isinstance(node, (ast.Tuple, ast.List)):
        raise tr.error(node, f"ox.asm {what}= takes a tuple of (constraint, {'type' if what == 'outputs' else 'value'}) "
                       f"pairs, got {ast.unparse(node)}", f'e.g. {what}=(("{"=r" if what == "outputs" else "r"}", '
                       f'{"u32" if what == "outputs" else "x"}),)')
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for item in node.elts:
        if not (isinstance(item, ast.Tuple) and len(item.elts) == 2):
            raise tr.error(item, f"each of ox.asm's {what} is a (constraint, {'type' if what == 'outputs' else 'value'}) pair")
        pairs.append((item.elts[0], item.elts[1]))
    return pairs


def _constraint(tr: TypingContext, node: ast.expr, output: bool) -> str:
    text = tr.const_str(node)
    if text is None:
        raise tr.error(node, "an asm constraint must be a string constant", _HINT)
    letter = text[1:] if output and text.startswith("=") else text
    if output and not text.startswith("="):
        raise tr.error(node, f"an output constraint starts with '=': {'=' + text!r}, not {text!r}", _HINT)
    if letter not in CONSTRAINT_TYPES and not (letter == "n" and not output):
        raise tr.error(node, f"unknown asm constraint {text!r}", _HINT)
    return letter


def _check_fits(tr: TypingContext, node: ast.AST, letter: str, st: ScalarType, what: str) -> None:
    allowed, says = CONSTRAINT_TYPES[letter]
    if st.name not in allowed:
        raise tr.error(node, f"asm constraint {letter!r} takes {says}; {what} is {st.name}",
                       "convert the value, or use the constraint of its type: " + _HINT)


def _type_asm(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    if not tr.unsafe_depth:
        raise tr.error(node, "ox.asm is allowed only inside `with ox.unsafe():`",
                       "the compiler cannot check inline PTX: mark the block unsafe")
    if len(node.args) != 1:
        raise tr.error(node, f"ox.asm() takes the PTX template as its one positional argument, got {len(node.args)}")
    template = tr.const_str(node.args[0])
    if template is None:
        raise tr.error(node.args[0], "the asm template must be a string constant")
    keywords = {k.arg: k.value for k in node.keywords}
    for k in node.keywords:
        if k.arg not in info.keywords:
            raise tr.error(k.value, f"ox.asm() has no keyword {k.arg!r}", "keywords: outputs, inputs, memory")
    out_types: list[ScalarType] = []
    constraints: list[str] = []
    for c_node, t_node in _pairs(tr, keywords["outputs"], "outputs") if "outputs" in keywords else []:
        letter = _constraint(tr, c_node, output=True)
        st = tr.element_type(t_node)
        _check_fits(tr, t_node, letter, st, "the output")
        out_types.append(st)
        constraints.append("=" + letter)
    args: list[ir.Expr] = []
    for c_node, v_node in _pairs(tr, keywords["inputs"], "inputs") if "inputs" in keywords else []:
        letter = _constraint(tr, c_node, output=False)
        if letter == "n":
            value = tr.const_int(v_node)
            if value is None:
                raise tr.error(v_node, "an 'n' operand must be a compile-time integer", "use 'r' for a run-time value")
            args.append(ir.Const(value, I32, tr.loc(v_node)))
        else:
            expr = tr.materialize(tr.expr(v_node))
            scalar = as_scalar(expr.ty)
            if scalar is None:
                raise tr.error(v_node, f"an asm input must be a number, got {type_name(expr.ty)}")
            _check_fits(tr, v_node, letter, scalar, f"{ast.unparse(v_node)}")
            args.append(tr.convert(expr, scalar, v_node))
        constraints.append(letter)
    memory = False
    if "memory" in keywords:
        flag = keywords["memory"]
        if not (isinstance(flag, ast.Constant) and isinstance(flag.value, bool)):
            raise tr.error(flag, "memory= takes True or False")
        memory = flag.value
    count = len(constraints)
    for m in _OPERAND.finditer(template):
        if m.group(1) == "{":
            raise tr.error(node.args[0], "the asm template uses ${...}; name operands $0, $1, ...")
        if m.group(1) != "$" and int(m.group(1)) >= count:
            raise tr.error(node.args[0], f"the asm template names operand ${m.group(1)}, but there are {count} "
                           f"operand(s) ($0 to ${count - 1})" if count else
                           f"the asm template names operand ${m.group(1)}, but there are no operands",
                           "outputs are numbered first, then inputs; write $$ for a literal $")
    constraint = ",".join(constraints + (["~{memory}"] if memory else []))
    ty: Type = VoidType() if not out_types else out_types[0] if len(out_types) == 1 else TupleType(tuple(out_types))
    return ir.Intrinsic(info.name, args, ty, tr.loc(node), options=(template, constraint))


def asm_call(fl: LoweringContext, template: str, constraint: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
    """An inline-asm call, side-effecting and convergent (its text may be a warp-wide
    instruction: shfl, mma, ldmatrix). Shared with the tensor-core group's libNVVM forms."""
    fnty = ll.FunctionType(ret, [a.type for a in args])
    return fl.b.call(ll.InlineAsm(fnty, template, constraint, side_effect=True), args, attrs=("convergent",))


def instruction_call(fl: LoweringContext, ptx: str, intrinsic: str, convergent: bool = False) -> ll.Value:
    """An instruction without operands: the NVPTX intrinsic ``intrinsic`` for LLVM's NVPTX, the
    text ``ptx`` as inline PTX (with a memory clobber) where libNVVM compiles the module, which
    lacks most of these intrinsics."""
    if fl.libnvvm:
        return asm_call(fl, ptx, "~{memory}", ll.VoidType(), [])
    fn = fl.intrinsic(intrinsic, ll.VoidType(), [])
    if convergent:
        fn.attributes.add("convergent")
    return fl.b.call(fn, [])


def _is_16bit_float(t: ll.Type) -> bool:
    return isinstance(t, ll.HalfType) or str(t) == "bfloat"


def _lower_asm(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    template, constraint = e.options
    b = fl.b
    # f16/bf16 travel in 16-bit integer registers ("h"), as CUDA C++ passes __half
    args: list[ll.Value] = []
    for a in e.args:
        value = fl.expr(a)
        args.append(b.bitcast(value, ll.IntType(16)) if _is_16bit_float(value.type) else value)
    out_types = list(e.ty.elems) if isinstance(e.ty, TupleType) else [] if isinstance(e.ty, VoidType) else [e.ty]
    final = [fl.elem_type(t) for t in out_types]  # type: ignore[arg-type]  # scalars (no bool): typed so
    raw = [ll.IntType(16) if _is_16bit_float(t) else t for t in final]
    ret: ll.Type = ll.VoidType() if not raw else raw[0] if len(raw) == 1 else ll.LiteralStructType(raw)
    result = asm_call(fl, template, constraint, ret, args)
    if not raw:
        return result
    if len(raw) == 1:
        return b.bitcast(result, final[0]) if raw[0] != final[0] else result
    if raw == final:
        return result
    out: ll.Value = ll.Constant(ll.LiteralStructType(final), None)
    for i, (r, f) in enumerate(zip(raw, final)):
        part = b.extract_value(result, i)
        out = b.insert_value(out, b.bitcast(part, f) if r != f else part, i)
    return out


ENTRIES = [IntrinsicInfo("asm", _type_asm, _lower_asm, thread_dependent=True, convergent=True,
                         keywords=("outputs", "inputs", "memory"),
                         # it may be bar.sync, or a fence.proxy.async
                         roles=frozenset({Role.ORDERS_THREADS, Role.MBARRIER_INIT_FENCE}))]
