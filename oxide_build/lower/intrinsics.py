"""Lowering of ``ir.Intrinsic``: the language's intrinsics through their registry entries
(``oxide_build/intrinsics/``), and the IR's own (checked and flat indices).

Host code for the CPU device takes an entry's ``cpu_lowering`` where it has one; otherwise its
``lowering``, and anything GPU-only that emits (inline PTX, an NVVM intrinsic, libdevice) is a
located ``CompileError`` naming the intrinsic."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from oxide.errors import CompileError, SourceLocation

from ..cpu_abi import NoCpuForm, NoCpuFormError
from ..intrinsics import INTRINSICS
from ..ir import nodes as ir

if TYPE_CHECKING:
    from .llvm import FunctionLowering

__all__ = ["lower_intrinsic"]


def lower_intrinsic(fl: FunctionLowering, e: ir.Intrinsic) -> ll.Value:
    info = INTRINSICS.get(e.name)
    if info is not None:
        if not fl.cpu:
            return info.lowering(fl, info, e)
        return _lower_for_cpu(fl, e)
    if e.name == "checked_index":
        value = fl.expr(e.args[0])
        if e.check_site is not None:
            fl.bounds_check(value, fl.expr(e.args[1]), e.check_site)
        return value
    if e.name == "flat_index":
        return fl.expr(e.args[0])
    raise TypeError(f"cannot lower intrinsic {e.name}")


def _refusal(fl: FunctionLowering, e: ir.Intrinsic, what: str) -> CompileError:
    name = e.name.removeprefix("builtin.")
    return NoCpuFormError(
        f"{name}() has no CPU form ({what}): the CPU device cannot run {fl.fn.python_name}()",
        SourceLocation(fl.fn.file, e.loc.line, e.loc.col),
        "run this kernel on a GPU (tensor cores, TMA, mbarriers, clusters and inline PTX have no CPU form "
        "on the CPU device), or keep the call out of the kernels you run there")


def _lower_for_cpu(fl: FunctionLowering, e: ir.Intrinsic) -> ll.Value:
    info = INTRINSICS[e.name]
    lowering = info.cpu_lowering or info.lowering
    known = {id(block): len(block.instructions) for block in fl.llfn.blocks}
    try:
        value = lowering(fl, info, e)
    except NoCpuForm as exc:
        raise _refusal(fl, e, exc.what) from None
    for block in fl.llfn.blocks:  # what the lowering added: no inline PTX on the host
        for instr in block.instructions[known.get(id(block), 0):]:
            if isinstance(instr, ll.CallInstr) and isinstance(instr.callee, ll.InlineAsm):
                raise _refusal(fl, e, f"inline PTX `{instr.callee.asm.strip()}`")
    return value
