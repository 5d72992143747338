"""Disjoint launch shape: ``thread.index_1d()`` is ``block.idx.x * block.dim.x + thread.idx.x``,
so two threads that differ only in y or z share it, and ``thread.index_2d()`` leaves out z. A
``DisjointSlice`` written at ``index_1d()`` (or a ``DisjointTensor`` at ``index_2d()``) is one
thread's element only in a launch without those dimensions: this pass makes that a launch
precondition of each kernel whose code (its own, or a device function's it calls) writes so —
``grid.dim.y == 1 and grid.dim.z == 1 and block.dim.y == 1 and block.dim.z == 1`` — checked by
the runtime before the launch, so a 2-D launch of a 1-D kernel is refused with a
``KernelError`` instead of threads racing on one element.

The frontend records, per function, the extents its disjoint writes leave out
(``Function.unit_extents``); this pass follows the calls. A kernel's fast instance
(passes/launch_instances.py) shares its kernel's condition and error site: the runtime checks the
kernel's preconditions for either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oxide.abi.manifest import ErrorSite

from ..ir import nodes as ir
from .divergence import calls_and_barriers, reached_from

__all__ = ["DisjointLaunchShape"]

_ENCODED = {"grid.dim": "grid", "block.dim": "block"}


@dataclass(frozen=True)
class DisjointLaunchShape:
    name: str = "disjoint-launch-shape"

    def apply(self, program: ir.Program) -> ir.Program:
        if not any(fn.unit_extents for fn in program.functions):
            return program
        calls, _ = calls_and_barriers(program, None)
        by_symbol = {fn.symbol: fn for fn in program.functions}
        added: dict[str, ir.LaunchCondition] = {}
        for kernel in program.functions:
            if not kernel.is_kernel or kernel.fast_of:
                continue
            needed: dict[str, tuple[str, int, int, str]] = {}
            for fn in reached_from(kernel, program, calls, by_symbol):
                for extent, write in fn.unit_extents.items():
                    needed.setdefault(extent, (*write, fn.file))
            if needed:
                added[kernel.symbol] = _precondition(program, kernel, needed)
                kernel.preconditions.append(added[kernel.symbol])
        for kernel in program.functions:  # a fast instance: the same launch, the same condition and site
            if kernel.fast_of in added:
                kernel.preconditions.append(added[kernel.fast_of])
        return program


def _precondition(program: ir.Program, kernel: ir.Function,
                  needed: dict[str, tuple[str, int, int, str]]) -> ir.LaunchCondition:
    extents = sorted(needed)
    write, line, col, file = needed[extents[0]]
    what = (f"{' and '.join(f'{e} == 1' for e in extents)}: {write} is written at the thread's ThreadIndex, "
            f"which leaves out {', '.join(extents)} (launch a 1-D grid of 1-D blocks, "
            "or index with thread.index_2d()/index_3d())")
    site = ErrorSite(id=len(program.error_sites) + 1, kind="assert", kernel=kernel.python_name, file=file,
                     line=line, col=col, what=what)
    program.error_sites.append(site)
    conds: list[Any] = []
    for e in extents:
        where, axis = e.rsplit(".", 1)
        conds.append(["eq", [_ENCODED[where], "xyz".index(axis)], ["const", 1]])
    return ir.LaunchCondition(site.id, conds[0] if len(conds) == 1 else ["and", conds])
