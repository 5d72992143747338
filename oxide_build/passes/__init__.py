"""Passes over the IR, between the frontend and the lowering: one module a pass, one visible
``PIPELINE``.

A pass is a frozen dataclass with a ``name`` and ``apply(program) -> program``; it may rewrite
the program or only check it (raising ``IRError`` at the source it rejects). A pass takes a
compile option as a field named as the ``CompileOptions`` field (``FmaContraction.fma``,
``ArchRequirements.archs``): ``configured(PIPELINE, options)`` sets them, so an option never
rides on the IR. A pass that only checks and whose IR is not worth printing again says
``prints_ir = False``. ``run_pipeline``
runs them in order; with ``print_after`` (``oxide compile --print-after=NAME``, or
``OXIDE_PRINT_AFTER=NAME``; ``all`` for every pass) it writes the IR after that pass to
stderr, and with ``verify`` (``OXIDE_VERIFY_IR=1``; the tests set it) it checks the IR's
contract after each pass.

Adding a pass: a module here with its dataclass, an entry in ``PIPELINE`` where it belongs,
and its own golden tests of what it does to the IR, in tests/golden/passes/<its name>/
(tests/test_pass_golden.py, which fails for a pass without one).
"""
from __future__ import annotations

import os
import sys
from dataclasses import fields, replace
from typing import Protocol, TextIO

from ..ir import nodes as ir
from ..ir.printer import print_program
from ..ir.verify import verify_program
from .arch_requirements import ArchRequirements
from .bounds_elimination import BoundsElimination
from .canonicalize import Canonicalize
from .check_versioning import CheckVersioning
from .constant_loop_unroll import ConstantLoopUnroll
from .disjoint_launch_shape import DisjointLaunchShape
from .divergence import BarrierDivergence
from .fma import FmaContraction
from .fp8_arch import Fp8Archs
from .launch_instances import LaunchInstances
from .launch_preconditions import LaunchPreconditions
from .mbarrier_lint import MbarrierLint
from .run_versioning import RunVersioning
from .shared_memory import SharedMemoryLimit
from .warpgroup_divergence import WarpgroupDivergence
from .wgmma_fence import WgmmaFence
from .wgmma_order import WgmmaOrder

__all__ = ["Pass", "PIPELINE", "configured", "pass_names", "run_pipeline"]


class Pass(Protocol):
    @property
    def name(self) -> str: ...

    def apply(self, program: ir.Program) -> ir.Program: ...


PIPELINE: tuple[Pass, ...] = (
    ArchRequirements(),  # first: a module that cannot be built for its archs says so before any lint
    BoundsElimination(),  # first: the checks it keeps are what the others see
    LaunchInstances(),  # before the preconditions: both instances keep the leading asserts
    LaunchPreconditions(),
    DisjointLaunchShape(),  # after it: its precondition comes after the kernel's own asserts
    BarrierDivergence(),
    WarpgroupDivergence(),
    MbarrierLint(),
    SharedMemoryLimit(),
    WgmmaOrder(),
    WgmmaFence(),
    CheckVersioning(),  # after the lints: they see the source's control flow, not its two copies
    FmaContraction(),
    ConstantLoopUnroll(),
    RunVersioning(),  # after the unrolling hints: they weigh a loop body as the source wrote it
    Canonicalize(),  # last of the rewrites: the passes before it read conditions as the source wrote them
    Fp8Archs(),
)


def configured(passes: tuple[Pass, ...], options: object) -> tuple[Pass, ...]:
    """``passes`` with each field named as an attribute of ``options`` (a ``CompileOptions``)
    set to that option's value."""
    out: list[Pass] = []
    for p in passes:
        names = [f.name for f in fields(p) if f.name != "name" and hasattr(options, f.name)]  # type: ignore[arg-type]
        out.append(replace(p, **{n: getattr(options, n) for n in names}) if names else p)  # type: ignore[type-var]
    return tuple(out)


def pass_names(passes: tuple[Pass, ...] = PIPELINE) -> list[str]:
    return [p.name for p in passes]


def run_pipeline(
    program: ir.Program,
    passes: tuple[Pass, ...] = PIPELINE,
    print_after: str | None = None,
    verify: bool | None = None,
    out: TextIO | None = None,
) -> ir.Program:
    """``program`` after every pass of ``passes``. ``print_after`` and ``verify`` default to
    ``$OXIDE_PRINT_AFTER`` and ``$OXIDE_VERIFY_IR``."""
    if print_after is None:
        print_after = os.environ.get("OXIDE_PRINT_AFTER") or None
    if verify is None:
        verify = os.environ.get("OXIDE_VERIFY_IR", "").strip() not in ("", "0")
    for p in passes:
        program = p.apply(program)
        if verify:
            verify_program(program)
        if print_after == p.name or print_after == "all" and getattr(p, "prints_ir", True):
            print(f"; IR after pass {p.name}\n{print_program(program)}", file=out or sys.stderr)
    return program
