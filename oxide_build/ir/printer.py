"""The IR as readable text: for golden tests, ``oxide compile --emit ir`` and print-after-pass.

One function after another, one statement a line, blocks indented as in Python::

    kernel saxpy(a: f32, x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None  # saxpy.py:9
      i: ThreadIndex = index_1d()
      if (i < len(out)):
        out[i] = ((a * x[i]!1) + y[i]!2)

Binary operations are parenthesised, so precedence never has to be guessed. A literal shows
its type (``1:i32``; ``?`` marks a literal whose type still adapts); ``!N`` after an indexing
or a call is its bounds-check site (an ``ErrorSite`` id). The text is for people and diffs,
not for parsing back.
"""
from __future__ import annotations

from . import nodes as ir
from .types import Type, type_name

__all__ = ["print_program", "print_function", "print_expr"]


def print_program(program: ir.Program) -> str:
    parts = [f"extern {_signature(e.symbol, e.params, e.ret)}  # {e.file}:{e.line}\n"
             for e in [*program.externs, *program.extern_kernels]]
    parts += [print_function(fn) for fn in program.functions]
    return "\n".join(parts)


def print_function(fn: ir.Function) -> str:
    kind = "kernel" if fn.is_kernel else "export" if fn.export else "device"
    header = f"{kind} {_signature(fn.symbol, fn.params, fn.ret)}  # {fn.file}:{fn.line}"
    extras = []
    if fn.specialization:
        extras.append("specialization " + ", ".join(f"{k}={v}" for k, v in fn.specialization.items()))
    if fn.launch_bounds:
        extras.append(f"launch_bounds {fn.launch_bounds}")
    if fn.max_registers:
        extras.append(f"max_registers {fn.max_registers}")
    extras += [f"precondition !{p.site} {p.expr}" for p in fn.preconditions]
    if fn.fast_symbol:
        extras.append(f"checked copy: the runtime launches {fn.fast_symbol} when {fn.fast_condition}")
    if fn.fast_of:
        extras.append(f"fast instance of {fn.fast_of}")
    lines = [header] + [f"  ; {e}" for e in extras]
    _block(fn.body, 1, lines, fn.locals)
    return "\n".join(lines) + "\n"


def _signature(symbol: str, params: list[ir.Param], ret: Type) -> str:
    return f"{symbol}(" + ", ".join(f"{p.name}: {type_name(p.ty)}" for p in params) + f") -> {type_name(ret)}"


def _block(stmts: list[ir.Stmt], depth: int, out: list[str], local_types: dict[str, Type]) -> None:
    pad = "  " * depth
    if not stmts:
        out.append(pad + "pass")
    for s in stmts:
        if isinstance(s, ir.Assign):
            ty = local_types.get(s.name)
            out.append(f"{pad}{s.name}{': ' + type_name(ty) if ty is not None else ''} = {print_expr(s.value)}")
        elif isinstance(s, ir.Store):
            out.append(f"{pad}{print_expr(s.view)}[{print_expr(s.index)}]{_site(s.check_site)} = {print_expr(s.value)}")
        elif isinstance(s, ir.If):
            out.append(f"{pad}if {print_expr(s.cond)}:" + ("  ; launch-versioned" if s.launch_versioned else "")
                       + ("  ; check-versioned" if s.check_versioned else ""))
            _block(s.then, depth + 1, out, local_types)
            if s.orelse:
                out.append(f"{pad}else:")
                _block(s.orelse, depth + 1, out, local_types)
        elif isinstance(s, ir.While):
            hint = "" if s.unroll is None else f"  ; unroll {s.unroll or 'enable'}"
            out.append(f"{pad}while {print_expr(s.cond)}:{hint}")
            _block(s.body, depth + 1, out, local_types)
            if s.step:
                out.append(f"{pad}step:")
                _block(s.step, depth + 1, out, local_types)
        elif isinstance(s, ir.Block):
            out.append(f"{pad}scope" + (f" (static_range {s.unrolled})" if s.unrolled else "") + ":")
            _block(s.body, depth + 1, out, local_types)
        elif isinstance(s, ir.Return):
            out.append(f"{pad}return" + (f" {print_expr(s.value)}" if s.value is not None else ""))
        elif isinstance(s, ir.ExprStmt):
            out.append(pad + print_expr(s.value))
        elif isinstance(s, ir.ArrayDecl):
            out.append(f"{pad}{s.name}: {type_name(s.ty)} = array")
        elif isinstance(s, ir.Check):
            out.append(f"{pad}check {print_expr(s.cond)}!{s.site}" + ("  ; hoistable" if s.hoistable else ""))
        elif isinstance(s, ir.Break):
            out.append(pad + "break")
        elif isinstance(s, ir.Continue):
            out.append(pad + "continue")
        else:  # a new statement kind: show it rather than fail
            out.append(f"{pad}<{type(s).__name__}>")


def _site(site: int | None) -> str:
    return f"!{site}" if site is not None else ""


def print_expr(e: ir.Expr) -> str:
    if isinstance(e, ir.Const):
        return f"{e.value!r}:{e.ty.name}{'?' if e.weak else ''}"
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.BinOp) and e.operands_nonneg:  # `//u`: an unsigned divide; `//u+`: no zero guard
        return f"({print_expr(e.left)} {e.op}u{'+' if e.divisor_positive else ''} {print_expr(e.right)})"
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return f"({print_expr(e.left)} {e.op} {print_expr(e.right)})"
    if isinstance(e, ir.BoolOp):
        return "(" + f" {e.op} ".join(print_expr(v) for v in e.values) + ")"
    if isinstance(e, ir.Not):
        return f"(not {print_expr(e.operand)})"
    if isinstance(e, ir.Neg):
        return f"(-{print_expr(e.operand)})"
    if isinstance(e, ir.Cast):
        return f"{e.ty.name}{'.nonneg' if e.nonneg else ''}({print_expr(e.operand)})"
    if isinstance(e, ir.Call):
        return f"call {e.symbol}(" + ", ".join(print_expr(a) for a in e.args) + ")"
    if isinstance(e, ir.Intrinsic):
        scope = f"[{e.scope}]" if e.name.startswith("atomic.") else f"[{e.text!r}]" if e.text else ""
        scope += "".join(f"[{option!r}]" for option in e.options)
        return f"{e.name}{scope}(" + ", ".join(print_expr(a) for a in e.args) + f"){_site(e.check_site)}:{type_name(e.ty)}"
    if isinstance(e, ir.ViewLen):
        return f"len({print_expr(e.view)})"
    if isinstance(e, ir.ViewDim):
        return f"{print_expr(e.view)}.{e.which}[{e.axis}]"
    if isinstance(e, ir.ViewLoad):
        return f"{print_expr(e.view)}[{print_expr(e.index)}]{_site(e.check_site)}"
    if isinstance(e, ir.MakeVector):
        return f"{type_name(e.ty)}(" + ", ".join(print_expr(v) for v in e.values) + ")"
    if isinstance(e, ir.VectorGet):
        return f"{print_expr(e.value)}.{'xyzw'[e.lane]}" if e.lane < 4 else f"{print_expr(e.value)}[{e.lane}]"
    if isinstance(e, ir.VectorSet):
        return f"{print_expr(e.value)}.with_{'xyzw'[e.lane] if e.lane < 4 else e.lane}({print_expr(e.element)})"
    if isinstance(e, ir.TupleSet):
        return f"{print_expr(e.value)}.with_{e.index}({print_expr(e.element)})"
    if isinstance(e, ir.ModuleArray):
        return f"@{e.symbol}"
    if isinstance(e, ir.NullView):
        return "None"
    if isinstance(e, ir.ViewSlice):
        stop = print_expr(e.stop) if e.stop is not None else ""
        return f"{print_expr(e.view)}[{print_expr(e.start)}:{stop}]{_site(e.check_site)}"
    if isinstance(e, ir.ThreadIndex1D):
        return f"index_1d():{type_name(e.ty)}" if type_name(e.ty) != "ThreadIndex" else "index_1d()"
    if isinstance(e, ir.SpecialReg):
        return f"%{e.name}"
    if isinstance(e, ir.Select):
        return f"select({print_expr(e.cond)}, {print_expr(e.if_true)}, {print_expr(e.if_false)})"
    if isinstance(e, ir.MakeTuple):
        return "(" + ", ".join(print_expr(v) for v in e.values) + ",)"
    if isinstance(e, ir.TupleGet):
        return f"{print_expr(e.value)}.{e.index}"
    return f"<{type(e).__name__}>"
