"""The arch an intrinsic needs (``IntrinsicInfo.min_arch``): a module built for an arch without
the instruction is refused here, at the call, naming the intrinsic and the arch, instead of by
ptxas afterwards ("Instruction 'wgmma.fence' not supported on .target 'sm_90'", naming a
``.ptx`` file).

The pass (``ArchRequirements``) takes the archs the module is built for as its field
(``CompileOptions.archs``, set by ``passes.configured``); it is first in ``PIPELINE``: a module
that cannot be built for its archs says so before any pass's complaint about its code. Every function of
the program is compiled for every arch, so every intrinsic call is checked against each.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..intrinsics import intrinsic_info
from ..ir import nodes as ir
from ..ir.verify import IRError
from ..targets import arch_number, is_arch_specific

__all__ = ["ArchRequirements", "MissingArch", "arch_satisfies", "check_arch_requirements"]


@dataclass
class MissingArch(IRError):
    """An intrinsic that ``arch`` lacks; ``required`` is the arch it needs."""

    arch: str = ""
    required: str = ""


def arch_satisfies(arch: str, required: str) -> bool:
    """Whether code for ``arch`` may use an instruction that needs ``required``: an
    arch-specific requirement (``sm_90a``) is met by that arch only, as its instructions do not
    carry forward (sm_100a has no wgmma); a plain one by it and every newer arch."""
    if is_arch_specific(required):
        return arch == required
    return arch_number(arch) >= arch_number(required)


def _intrinsics(e: ir.Expr) -> Iterator[ir.Intrinsic]:
    if isinstance(e, ir.Intrinsic):
        yield e
    for child in ir.children(e):
        yield from _intrinsics(child)


def check_arch_requirements(program: ir.Program, archs: tuple[str, ...]) -> None:
    """Raises ``MissingArch`` at the first call of an intrinsic that one of ``archs`` lacks."""
    for fn in program.functions:
        for s in ir.statements(fn.body):
            for root in ir.statement_roots(s):
                for call in _intrinsics(root):
                    info = intrinsic_info(call.name)
                    if info is None or info.min_arch is None:
                        continue
                    for arch in archs:
                        if arch_satisfies(arch, info.min_arch):
                            continue
                        needs = (f"{info.min_arch} (that arch only: sm_90a instructions are not on later GPUs)"
                                 if is_arch_specific(info.min_arch) else f"{info.min_arch} or newer")
                        raise MissingArch(
                            f"ox.{call.name} needs {needs}; this module is built for {arch}",
                            fn.python_name, fn.file, call.loc,
                            f"build the module for {info.min_arch} only: [tool.oxide] arch = [\"{info.min_arch}\"] "
                            f"(or OXIDE_ARCH={info.min_arch}); keep kernels for other archs in a module of their own",
                            user_error=True, arch=arch, required=info.min_arch)


@dataclass(frozen=True)
class ArchRequirements:
    """``check_arch_requirements`` against ``archs`` (none: nothing is checked)."""

    archs: tuple[str, ...] = ()
    name: str = "arch-requirements"
    prints_ir: ClassVar[bool] = False  # a check: the IR after it is the IR before it

    def apply(self, program: ir.Program) -> ir.Program:
        check_arch_requirements(program, self.archs)
        return program
