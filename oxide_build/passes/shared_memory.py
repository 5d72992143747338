"""Static shared memory per kernel: a kernel's own shared arrays and those of every device
function it reaches must fit the static limit (48 KiB on every arch oxide targets), or ptxas
refuses the PTX later, naming the ``.ptx`` file instead of the source. Checked here, before
any code is made, and reported at the array that goes past the limit.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir.types import ArrayType
from ..ir.verify import IRError
from .divergence import calls_and_barriers, reached_from

__all__ = ["SharedMemoryLimit", "STATIC_SHARED_LIMIT"]

STATIC_SHARED_LIMIT = 48 * 1024  # ptxas refuses more static shared memory per kernel, on every arch


@dataclass(frozen=True)
class SharedMemoryLimit:
    name: str = "shared-memory-limit"

    def apply(self, program: ir.Program) -> ir.Program:
        calls, _ = calls_and_barriers(program, None)
        by_symbol = {fn.symbol: fn for fn in program.functions}
        for kernel in program.functions:
            if not kernel.is_kernel:
                continue
            total = 0
            for fn in reached_from(kernel, program, calls, by_symbol):  # the kernel, then what it calls
                for decl in ir.statements(fn.body):
                    if not isinstance(decl, ir.ArrayDecl):
                        continue
                    ty = decl.ty
                    if not (isinstance(ty, ArrayType) and ty.space == "shared" and ty.size is not None):
                        continue
                    total += ty.size * ty.elem.itemsize
                    if total > STATIC_SHARED_LIMIT:
                        where = "" if fn is kernel else f" (in {fn.python_name}(), which it calls)"
                        raise IRError(
                            f"the shared arrays of {kernel.python_name}() take {total} bytes with "
                            f"{decl.name!r}{where}; static shared memory holds {STATIC_SHARED_LIMIT} bytes "
                            "(48 KiB) per block", fn.python_name, fn.file, decl.loc,
                            "use smaller tiles, or ox.shared.dynamic(...) with the size given at launch "
                            "(up to 227 KiB on sm_90)", user_error=True)
        return program
