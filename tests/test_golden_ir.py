"""Golden IR of the frontend: each tests/golden/<name>.py translates (scan, frontend; no passes,
no llvmlite) to the IR text in tests/golden/<name>.ir.

A change to the frontend that changes the IR shows here as a text diff. When the change is
meant, rewrite the expected files with ``OXIDE_UPDATE_GOLDEN=1 python -m pytest
tests/test_golden_ir.py`` and read the diff before committing it. What each pass does to the IR
is tested by that pass's own cases (tests/golden/passes/<pass>/, tests/test_pass_golden.py), so
a new pass changes none of these files.
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from oxide_build.frontend import build_program
from oxide_build.ir.verify import verify_program
from oxide_build.scan import ProjectIndex

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.stem for p in GOLDEN.glob("*.py"))


def ir_text(name: str) -> str:
    """The IR the frontend makes."""
    index = ProjectIndex(GOLDEN)
    program = build_program(index, index.add_file(GOLDEN / f"{name}.py", name)).program
    out = io.StringIO()
    from oxide_build.ir.printer import print_program

    verify_program(program)
    out.write(f"; IR after the frontend\n{print_program(program)}\n")
    return out.getvalue()


@pytest.mark.parametrize("name", CASES)
def test_golden_ir(name: str) -> None:
    expected_file = GOLDEN / f"{name}.ir"
    text = ir_text(name)
    if os.environ.get("OXIDE_UPDATE_GOLDEN") == "1":
        expected_file.write_text(text, encoding="utf-8")
    assert expected_file.is_file(), f"no {expected_file.name}: run with OXIDE_UPDATE_GOLDEN=1"
    assert text == expected_file.read_text(encoding="utf-8")


def test_there_are_golden_cases() -> None:
    assert {"bounds", "bounds_elimination", "canonicalize", "divergence_ok", "launch_preconditions", "fma"} <= set(CASES)
