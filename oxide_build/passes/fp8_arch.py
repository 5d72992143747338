"""8-bit floats need sm_89 or newer: ``cvt`` to and from ``e4m3``/``e5m2`` and the fp8
``mma.sync`` do not exist on sm_80/sm_86. A module that converts fp8 values or multiplies them
and is built for an older arch is refused here, at the first such expression, naming the type
and the arch, instead of by ptxas afterwards (naming a ``.ptx`` file). Loading and storing fp8
elements are byte moves that every arch has, so a kernel that only copies them is not refused.

Like ``arch_requirements`` (whose error it raises) it takes the archs the module is built for
as a field (``Fp8Archs.archs``); it is last in ``PIPELINE``.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..ir import nodes as ir
from ..ir.types import as_scalar
from ..targets import arch_number
from .arch_requirements import MissingArch

__all__ = ["FP8_MIN_ARCH", "Fp8Archs", "check_fp8_archs", "fp8_uses"]

FP8_MIN_ARCH = "sm_89"


def _fp8_type_of(e: ir.Expr) -> str | None:
    """The fp8 type ``e`` computes with (a conversion from or to one, an fp8 mma), or None."""
    if isinstance(e, ir.Cast):
        for t in (as_scalar(e.operand.ty), as_scalar(e.ty)):
            if t is not None and t.kind == "fp8":
                return t.name
    if isinstance(e, ir.Intrinsic) and e.name == "mma.sync" and e.options[1].startswith("f8"):
        return str(e.options[1])
    return None



def fp8_uses(fn: ir.Function) -> Iterator[tuple[ir.Expr, str]]:
    """Every expression of ``fn`` that converts or multiplies fp8 values, with its fp8 type."""
    for s in ir.statements(fn.body):
        for root in ir.statement_roots(s):
            for e in ir.subexpressions(root):
                name = _fp8_type_of(e)
                if name is not None:
                    yield e, name


def check_fp8_archs(program: ir.Program, archs: tuple[str, ...]) -> None:
    """Raises ``MissingArch`` at the first fp8 conversion or mma when one of ``archs`` is older
    than sm_89."""
    old = [a for a in archs if arch_number(a) < arch_number(FP8_MIN_ARCH)]
    if not old:
        return
    for fn in program.functions:
        for e, name in fp8_uses(fn):
            what = "an fp8 mma.sync" if isinstance(e, ir.Intrinsic) else f"converting {name} values"
            raise MissingArch(f"{what} needs {FP8_MIN_ARCH} or newer; this module is built for {old[0]}",
                              fn.python_name, fn.file, e.loc,
                              "build the module for sm_89+ only: [tool.oxide] arch = [\"sm_90\"] (or OXIDE_ARCH=sm_90); "
                              "keep kernels for older GPUs in a module of their own", user_error=True,
                              arch=old[0], required=FP8_MIN_ARCH)


@dataclass(frozen=True)
class Fp8Archs:
    """``check_fp8_archs`` against ``archs`` (none: nothing is checked)."""

    archs: tuple[str, ...] = ()
    name: str = "fp8-archs"
    prints_ir: ClassVar[bool] = False  # a check: the IR after it is the IR before it

    def apply(self, program: ir.Program) -> ir.Program:
        check_fp8_archs(program, self.archs)
        return program
