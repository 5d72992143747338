"""The checked boundary between a module's Python code and its CUDA C++: the C prototypes the
Python side expects, compiled in front of every ``.cu`` file of the module.

C linkage checks nothing at link time: an ``@extern`` stub declared ``f32`` against a C++
function taking ``double`` links and computes garbage. So every ``.cu`` file a module compiles
starts with a generated header (``oxide_boundary.h``, force-included) that declares, with the
ABI of docs/interop.md:

- each ``@extern`` the module's code calls (``extern "C" __device__ ...``),
- each ``@extern_kernel`` (``extern "C" __global__ void ...``),
- each Python device function the module exports (``@device(export=...)``).

A C++ definition or declaration with other types is then a C++ error ("more than one instance
of overloaded function ... has "C" linkage"); :func:`explain_nvrtc_log` adds both sides to it:
the stub's file:line and its prototype, the C++ file:line and its line. The declarations carry
``#line`` directives, so NVRTC's own notes name the Python file too.

The exports are also offered as ``#include "oxide_exports.h"`` (the header ``oxide compile
--header`` writes for separate C++ projects).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oxide.abi.views import ViewKind
from oxide.lang.types import ScalarType

from oxide.errors import LinkError

from ..ir import nodes as ir
from ..ir.types import ThreadIndexType, Type, ViewType, VoidType, is_half_float

__all__ = [
    "BOUNDARY_HEADER", "EXPORTS_HEADER", "BoundaryDecl", "c_type", "c_params", "c_argument_names",
    "boundary_decls", "boundary_header", "explain_nvrtc_log", "half_shim",
    "template_instances", "template_wrapper",
]

BOUNDARY_HEADER = "oxide_boundary.h"  # force-included into each .cu a module compiles
EXPORTS_HEADER = "oxide_exports.h"  # #include-able by those .cu files

_C_TYPES = {
    "bool": "bool", "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
    "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
    "f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
}


@dataclass(frozen=True)
class BoundaryDecl:
    """One C symbol on the boundary, as the Python side declares it."""

    symbol: str
    role: str  # "@extern", "@extern_kernel" or "export"
    python_name: str
    file: str  # where the Python declares it
    line: int
    declaration: str  # extern "C" __device__ float ox_axpb(float a, float x, float b);
    # for a C++ template instance: the extern "C" wrapper oxide appends to ``defined_in`` (a .cu)
    definition: str = ""
    defined_in: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def c_type(ty: Type) -> str:
    """The C++ spelling of a scalar (or return) type under oxide's ABI."""
    if isinstance(ty, VoidType):
        return "void"
    if isinstance(ty, ThreadIndexType):
        return "long long"
    assert isinstance(ty, ScalarType), ty
    return _C_TYPES[ty.name]


def _c_ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


def c_params(params: list[ir.Param]) -> str:
    """A parameter list: a scalar is its C type; ``Ptr[T]`` a ``T*``; a slice a pointer
    (``const`` for a read-only ``Slice``) and its length; a tensor a pointer, then its extents,
    then its strides, all ``long long``."""
    out: list[str] = []
    for p in params:
        name = _c_ident(p.name)
        ty = p.ty
        if isinstance(ty, ViewType):
            const = "" if ty.writable else "const "
            pointer = f"{const}{c_type(ty.elem)}* {name}"
            if ty.kind == ViewKind.PTR:
                out.append(pointer)
            elif ty.is_tensor:
                out.append(pointer)
                out += [f"long long {name}_extent{d}" for d in range(ty.ndim)]
                out += [f"long long {name}_stride{d}" for d in range(ty.ndim)]
            else:
                out += [pointer, f"long long {name}_len"]
        else:
            out.append(f"{c_type(ty)} {name}")
    return ", ".join(out) or "void"


def c_argument_names(params: list[ir.Param]) -> list[str]:
    """The names ``c_params`` gives the C parameters, in order (a wrapper passes them on)."""
    out: list[str] = []
    for p in params:
        name = _c_ident(p.name)
        ty = p.ty
        if isinstance(ty, ViewType) and ty.kind != ViewKind.PTR:
            if ty.is_tensor:
                out += [name, *(f"{name}_extent{d}" for d in range(ty.ndim)),
                        *(f"{name}_stride{d}" for d in range(ty.ndim))]
            else:
                out += [name, f"{name}_len"]
        else:
            out.append(name)
    return out


def template_wrapper(ext: ir.ExternFunction) -> str:
    """``extern "C" __device__ float __ox_tpl_f_float(float x) { return f<float>(x); }``: the
    C-linkage instance of a C++ template an ``@extern("f<{T}>")`` stub calls."""
    call = f"{ext.cpp_template}({', '.join(c_argument_names(ext.params))})"
    body = f"{call};" if isinstance(ext.ret, VoidType) else f"return {call};"
    return f'extern "C" __device__ {c_type(ext.ret)} {ext.symbol}({c_params(ext.params)}) {{ {body} }}'


_HALF_BITS = {"f16": ("__half_as_ushort", "__ushort_as_half"), "bf16": ("__bfloat16_as_ushort", "__ushort_as_bfloat16")}


def half_shim(ext: ir.ExternFunction) -> tuple[str, str]:
    """The shim ``ext.call_symbol`` (when ``ext.passes_halves``), its prototype and definition:
    ``unsigned short`` in place of each 16-bit float, converted bit for bit around a call of
    ``ext.symbol``."""
    names = c_argument_names(ext.params)
    params = c_params(ext.params).split(", ") if ext.params else []
    shim_params: list[str] = []
    args: list[str] = []
    position = 0
    for p in ext.params:
        width = len(c_argument_names([p]))
        if is_half_float(p.ty):
            assert isinstance(p.ty, ScalarType)
            shim_params.append(f"unsigned short {names[position]}")
            args.append(f"{_HALF_BITS[p.ty.name][1]}({names[position]})")
        else:
            shim_params += params[position:position + width]
            args += names[position:position + width]
        position += width
    ret = "unsigned short" if is_half_float(ext.ret) else c_type(ext.ret)
    call = f"{ext.symbol}({', '.join(args)})"
    if isinstance(ext.ret, ScalarType) and is_half_float(ext.ret):
        body = f"return {_HALF_BITS[ext.ret.name][0]}({call});"
    else:
        body = f"{call};" if isinstance(ext.ret, VoidType) else f"return {call};"
    head = f'extern "C" __device__ {ret} {ext.call_symbol}({", ".join(shim_params) or "void"})'
    return head + ";", f"{head} {{ {body} }}"


def boundary_decls(program: ir.Program) -> tuple[BoundaryDecl, ...]:
    """Every C symbol the module's Python code shares with C++, with its prototype."""
    out: list[BoundaryDecl] = []
    for ext in program.externs:
        decl = f'extern "C" __device__ {c_type(ext.ret)} {ext.symbol}({c_params(ext.params)});'
        if ext.cpp_template:
            out.append(BoundaryDecl(ext.symbol, "@extern", ext.symbol, ext.file, ext.line, decl,
                                    template_wrapper(ext), ext.sources[0]))
        else:
            out.append(BoundaryDecl(ext.symbol, "@extern", ext.symbol, ext.file, ext.line, decl))
        if ext.passes_halves:
            shim_decl, shim_def = half_shim(ext)
            out.append(BoundaryDecl(ext.call_symbol, "@extern", ext.symbol, ext.file, ext.line,
                                    shim_decl, shim_def, ext.sources[0] if ext.sources else ""))
    for ext in program.extern_kernels:
        decl = f'extern "C" __global__ void {ext.symbol}({c_params(ext.params)});'
        out.append(BoundaryDecl(ext.symbol, "@extern_kernel", ext.symbol, ext.file, ext.line, decl))
    for fn in program.functions:
        if fn.export:
            if any(is_half_float(t) for t in (fn.ret, *(q.ty for q in fn.params))):
                # C++ would pass a __half as a 2-byte struct where this function takes a scalar
                raise LinkError(f"{fn.file}:{fn.line}: the exported device function {fn.python_name!r} takes or "
                                "returns an f16/bf16 value, which C++ passes as a struct (__half) that oxide "
                                "cannot receive yet; pass f32 (convert on each side) or a pointer (Ptr[f16])")
            decl = f'extern "C" __device__ {c_type(fn.ret)} {fn.symbol}({c_params(fn.params)});'
            out.append(BoundaryDecl(fn.symbol, "export", fn.python_name, fn.file, fn.line, decl))
    return tuple(out)


def _includes_for(decls: tuple[BoundaryDecl, ...]) -> list[str]:
    text = " ".join(d.declaration for d in decls)
    lines = []
    if "__half" in text:
        lines.append("#include <cuda_fp16.h>")
    if "__nv_bfloat16" in text:
        lines.append("#include <cuda_bf16.h>")
    return lines


def _c_string(path: str) -> str:
    return path.replace("\\", "\\\\").replace('"', '\\"')


def boundary_header(decls: tuple[BoundaryDecl, ...]) -> str:
    """The force-included header: each prototype under a ``#line`` naming its Python stub."""
    lines = ["// Generated by oxide: the C prototypes this module's Python code expects.",
             "#pragma once", *_includes_for(decls)]
    for d in decls:
        lines.append(f'#line {max(d.line, 1)} "{_c_string(d.file)}"')
        lines.append(d.declaration)
    lines.append("")
    return "\n".join(lines)


_C_LINKAGE_CLASH = re.compile(
    r'^(?P<file>.+?)\((?P<line>\d+)\): error: more than one instance of overloaded function '
    r'"(?P<symbol>[^"]+)" has "C" linkage', re.M)


def explain_nvrtc_log(log: str, decls: tuple[BoundaryDecl, ...]) -> str:
    """Notes for the boundary mismatches in an NVRTC log: for each C++ declaration that
    disagrees with a generated prototype, both sides with file:line. Empty when there are none."""
    by_symbol = {d.symbol: d for d in decls}
    notes: list[str] = []
    seen: set[tuple[str, str]] = set()
    for m in _C_LINKAGE_CLASH.finditer(log):
        decl = by_symbol.get(m.group("symbol"))
        if decl is None or (m.group("symbol"), m.group("line")) in seen:
            continue
        seen.add((m.group("symbol"), m.group("line")))
        cpp_file, cpp_line = m.group("file"), int(m.group("line"))
        cpp_text = _source_line(cpp_file, cpp_line)
        side = {"@extern": f"the @extern stub {decl.python_name!r}",
                "@extern_kernel": f"the @extern_kernel stub {decl.python_name!r}",
                "export": f"the exported Python device function {decl.python_name!r}"}[decl.role]
        notes.append(
            f"{cpp_file}:{cpp_line}: the C++ declaration of {decl.symbol!r} does not match {side} "
            f"declared at {decl.where}\n"
            f"  Python ({decl.where}) expects: {decl.declaration}\n"
            f"  C++ ({Path(cpp_file).name}:{cpp_line}) has:  {cpp_text or '(see the log below)'}\n"
            f"  make both agree: same types, a Slice is `const T*` AND a `long long` length, a "
            f"MutSlice/DisjointSlice `T*` and a length, a Ptr[T] a plain `T*` (docs/interop.md, 'The ABI')"
        )
    return "\n".join(notes)


def _source_line(path: str, line: int) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def template_instances(decls: tuple[BoundaryDecl, ...], source: str, first: bool = False) -> str:
    """The template wrappers and half-precision shims to append to the ``.cu`` file ``source``
    (after its own code, where the templates are defined), each under a ``#line`` naming the
    Python stub that asks for it. The ``first`` ``.cu`` of a module also takes the shims of
    externs declared without ``sources=``."""
    lines = []
    for d in decls:
        if d.definition and (d.defined_in == source or (first and not d.defined_in)):
            lines.append(f'#line {max(d.line, 1)} "{_c_string(d.file)}"')
            lines.append(d.definition)
    return "\n".join(lines)
