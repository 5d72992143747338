"""``print()`` in kernels: device ``printf`` (CUDA's ``vprintf(format, args)``, which the driver
provides: the output reaches the host's stdout when the host next synchronises with the GPU).

The typing turns the call into one printf format, fixed at compile time, and the values it
prints: ``print(a, "text", b, sep=..., end=...)`` with numbers, bools, string literals and
f-strings whose replacement fields are numbers or bools with a format spec printf can say
(``{x:.3f}``, ``{n:>8d}``, ``{m:08x}``, ``{v:+.2e}``). Anything else is a located error.

The lowering packs the values into a local buffer laid out as C's varargs promote them (ints
narrower than 32 bits widened to 32, ``i64``/``u64`` as 64, floats widened to ``double``, a bool
as a pointer to "True"/"False"), and passes the format (a constant string) and the buffer.
On the CPU device the same values are the host ``printf``'s arguments (the scheduler flushes
stdout at the end of each launch).
"""
from __future__ import annotations

import ast
import hashlib
import re
from typing import TYPE_CHECKING

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import F64, VOID, ArrayType, TupleType, ViewType, as_scalar, type_name
from .entry import IntrinsicInfo

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from .context import LoweringContext, TypingContext
else:
    from .lazy_llvm import LLVM_IR as ll

__all__ = ["ENTRIES"]

# Python's format spec: [[fill]align][sign][#][0][width][grouping][.precision][type]
_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
                   r"(?P<grouping>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[a-zA-Z%])?")
INT_TYPES = "dxXoc"
FLOAT_TYPES = "eEfFgG"
ACCEPTED = ("print() in a kernel takes numbers, bools, string literals and f-strings "
            "(docs/language.md, \"print() in kernels\")")


def _default_conversion(st: ScalarType) -> str:
    """The printf conversion of a value printed without a spec."""
    if st.kind == "bool":
        return "%s"
    if st.kind == "float":
        return "%g"
    if st.bits == 64:
        return "%lld" if st.kind == "int" else "%llu"
    return "%d" if st.kind == "int" else "%u"


def _literal(text: str) -> str:
    return text.replace("%", "%%")


class _Format:
    """The format being built and the values it prints."""

    def __init__(self, tr: TypingContext) -> None:
        self.tr = tr
        self.text = ""
        self.values: list[ir.Expr] = []

    def value(self, node: ast.expr) -> ScalarType:
        tr = self.tr
        value = tr.materialize(tr.expr(node))
        st = as_scalar(value.ty)
        if st is None or isinstance(value.ty, (ViewType, ArrayType, TupleType)):
            hint = "print an element, e.g. x[i], or len(x)" if isinstance(value.ty, (ViewType, ArrayType)) else \
                "print the values one by one"
            raise tr.error(node, f"print() cannot print {type_name(value.ty)}: {ACCEPTED}", hint)
        self.values.append(tr.convert(value, st, node))
        return st

    def argument(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.text += _literal(node.value)
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    self.text += _literal(part.value)
                else:
                    assert isinstance(part, ast.FormattedValue)
                    self.field(part)
        else:
            self.text += _default_conversion(self.value(node))

    def field(self, part: ast.FormattedValue) -> None:
        tr = self.tr
        if part.conversion != -1:
            raise tr.error(part, f"print(): the conversion !{chr(part.conversion)} is not available on the GPU",
                           "leave it out: numbers print the same without it")
        spec = ""
        if part.format_spec is not None:
            pieces = part.format_spec.values if isinstance(part.format_spec, ast.JoinedStr) else [part.format_spec]
            if not all(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in pieces):
                raise tr.error(part.format_spec, "print(): a format spec must be written out, not computed "
                               "({...} inside the spec)", "write the width and precision as numbers, e.g. {x:8.3f}")
            spec = "".join(str(p.value) for p in pieces if isinstance(p, ast.Constant))
        st = self.value(part.value)
        if not spec:
            self.text += _default_conversion(st)
            return
        self.text += self.conversion(spec, st, part)

    def conversion(self, spec: str, st: ScalarType, part: ast.FormattedValue) -> str:
        """The printf conversion of ``{value:spec}``; a located error for what printf cannot say
        as Python would."""
        tr = self.tr
        where = part.format_spec if part.format_spec is not None else part
        m = _SPEC.fullmatch(spec)
        shown = f"{{...:{spec}}}"
        if m is None:
            raise tr.error(where, f"print(): {shown} is not a format spec Python accepts")
        if m["fill"] or m["align"] in ("^", "="):
            raise tr.error(where, f"print(): {shown}: fill characters and '^'/'=' alignment are not available "
                           "on the GPU", "use '<' or '>' with a width, and '0' to pad numbers with zeros")
        if m["grouping"]:
            raise tr.error(where, f"print(): {shown}: digit grouping ('{m['grouping']}') is not available on the GPU")
        kind = m["type"] or ""
        if st.kind == "bool":
            raise tr.error(where, f"print(): {shown} on a bool is not available on the GPU",
                           "print the bool without a spec (True/False), or i32(flag) with one")
        if kind and kind not in INT_TYPES + FLOAT_TYPES:
            raise tr.error(where, f"print(): the format type {kind!r} is not available on the GPU",
                           f"use one of {', '.join(INT_TYPES + FLOAT_TYPES)}")
        is_float = st.kind == "float"
        if is_float and kind in INT_TYPES:
            raise tr.error(where, f"print(): the format type {kind!r} is for integers, and this value is "
                           f"{st.name}", f"convert it, e.g. {{i32(x):{spec}}}, or use f, e or g")
        if not is_float and m["precision"] is not None and kind not in FLOAT_TYPES:
            raise tr.error(where, f"print(): {shown}: integers take no precision",
                           "drop the .precision, or format as a float with f, e or g")
        if m["zero"] and m["align"] == "<":
            raise tr.error(where, f"print(): {shown}: '0' with '<' pads with zeros on the right in Python, "
                           "which printf cannot", "drop the '0', or the '<'")
        if m["alt"] and kind in ("o", ""):
            raise tr.error(where, f"print(): {shown}: '#' works with x, X and the float types on the GPU")
        if kind == "c" and st.bits > 32:
            raise tr.error(where, f"print(): {shown}: 'c' takes a 32-bit integer")
        flags = ("-" if m["align"] == "<" else "") + (m["sign"] if m["sign"] in ("+", " ") else "") + \
            (m["alt"] or "") + (m["zero"] or "")
        width = m["width"] or ""
        precision = f".{m['precision']}" if m["precision"] is not None else ""
        if kind in FLOAT_TYPES and not is_float:
            # Python formats an integer with a float type as that float: the value becomes f64
            value = self.values[-1]
            self.values[-1] = ir.Cast(value, F64, value.loc)
            return f"%{flags}{width}{precision}{kind}"
        if is_float:
            return f"%{flags}{width}{precision}{kind or 'g'}"
        length = "ll" if st.bits == 64 else ""
        conv = kind or ("d" if st.kind == "int" else "u")
        if conv == "d" and st.kind == "uint":
            conv = "u"
        return f"%{flags}{width}{length}{conv}"


def _type_print(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ir.Expr:
    fmt = _Format(tr)
    sep, end = " ", "\n"
    for kw in node.keywords:
        if kw.arg not in ("sep", "end"):
            what = "**kwargs" if kw.arg is None else f"{kw.arg}="
            raise tr.error(kw, f"print() in a kernel does not take {what}",
                           "the output goes to the host's stdout; sep= and end= take string literals")
        if not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)):
            raise tr.error(kw.value, f"print(): {kw.arg}= must be a string literal, got {ast.unparse(kw.value)}")
        if kw.arg == "sep":
            sep = kw.value.value
        else:
            end = kw.value.value
    for k, a in enumerate(node.args):
        if isinstance(a, ast.Starred):
            raise tr.error(a, "print(*values) is not available on the GPU", "list the values")
        if k:
            fmt.text += _literal(sep)
        fmt.argument(a)
    fmt.text += _literal(end)
    return ir.Intrinsic(info.name, fmt.values, VOID, tr.loc(node), text=fmt.text)


def _string_constant(fl: LoweringContext, text: str) -> ll.Value:
    """A generic ``i8*`` to a NUL-terminated constant string (one global per text)."""
    module = fl.module
    data = bytearray(text.encode("utf-8") + b"\0")
    name = f"__oxide_str.{hashlib.sha256(data).hexdigest()[:16]}"
    gv = module.globals.get(name)
    if gv is None:
        arr = ll.ArrayType(ll.IntType(8), len(data))
        gv = ll.GlobalVariable(module, arr, name, addrspace=4)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ll.Constant(arr, data)
    first = gv.gep([ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), 0)])
    return fl.b.addrspacecast(first, ll.PointerType(ll.IntType(8)))


def _lower_print(fl: LoweringContext, info: IntrinsicInfo, e: ir.Intrinsic) -> ll.Value:
    b = fl.b
    slots: list[ll.Value] = []
    for arg in e.args:
        value = fl.expr(arg)
        st = as_scalar(arg.ty)
        assert st is not None
        if st.kind == "bool":
            value = b.select(value, _string_constant(fl, "True"), _string_constant(fl, "False"))
        elif st.kind == "float":
            value = value if st.bits == 64 else b.fpext(value, ll.DoubleType())
        elif st.bits < 32:
            value = b.sext(value, ll.IntType(32)) if st.kind == "int" else b.zext(value, ll.IntType(32))
        slots.append(value)
    i8p = ll.PointerType(ll.IntType(8))
    if fl.cpu:  # the CPU device: the host's printf, the values as its varargs (promoted alike)
        printf = fl.module.globals.get("printf")
        if printf is None:
            printf = ll.Function(fl.module, ll.FunctionType(ll.IntType(32), [i8p], var_arg=True), "printf")
        b.call(printf, [_string_constant(fl, e.text), *slots])
        return ll.Constant(ll.IntType(32), 0)
    if slots:
        layout = ll.LiteralStructType([v.type for v in slots])
        buffer = fl.temp(layout)
        for k, v in enumerate(slots):
            b.store(v, b.gep(buffer, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), k)]))
        args: ll.Value = b.bitcast(buffer, i8p)
    else:
        args = ll.Constant(i8p, None)
    vprintf = fl.intrinsic("vprintf", ll.IntType(32), [i8p, i8p])
    b.call(vprintf, [_string_constant(fl, e.text), args])
    return ll.Constant(ll.IntType(32), 0)


ENTRIES = [IntrinsicInfo("builtin.print", _type_print, _lower_print, builtin=True)]
