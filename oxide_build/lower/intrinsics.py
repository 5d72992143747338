"""Lowering of ``ir.Intrinsic``: the language's intrinsics through their registry entries
(``oxide_build/intrinsics/``), and the IR's own (checked and flat indices)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ..intrinsics import INTRINSICS
from ..ir import nodes as ir

if TYPE_CHECKING:
    from .llvm import FunctionLowering

__all__ = ["lower_intrinsic"]


def lower_intrinsic(fl: FunctionLowering, e: ir.Intrinsic) -> ll.Value:
    info = INTRINSICS.get(e.name)
    if info is not None:
        return info.lowering(fl, info, e)
    if e.name == "checked_index":
        value = fl.expr(e.args[0])
        if e.check_site is not None:
            fl.bounds_check(value, fl.expr(e.args[1]), e.check_site)
        return value
    if e.name == "flat_index":
        return fl.expr(e.args[0])
    raise TypeError(f"cannot lower intrinsic {e.name}")
