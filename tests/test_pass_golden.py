"""One focused golden test per pass: tests/golden/passes/<pass name>/<case>.py is a kernel module
whose comments say what that pass, and only it, does to the IR (tests/filecheck.py):

    # AFTER: bounds-elimination      passes run first, on the frontend's IR (default: none);
                                     name(field=value; ...) sets fields of one
    # OPTIONS: archs=sm_80; fma=0    fields of the pass (CompileOptions' names)
    # BEFORE: ...                    checks of the IR the pass is given
    # CHECK: ...                     checks of the IR it returns
    # UNCHANGED                      it returns the IR it was given (a pass that only checks)
    # ERROR: text                    it refuses the module with an error containing text

Only the pass under test (and the passes its case names in AFTER) runs, so a new pass changes
no other pass's tests; the frontend's own output is tests/test_golden_ir.py's.
"""
from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import pytest
from filecheck import checks, match

from oxide.errors import CompileError
from oxide_build.frontend import build_program
from oxide_build.ir.printer import print_program
from oxide_build.ir.verify import IRError, verify_program
from oxide_build.passes import PIPELINE, Pass, run_pipeline
from oxide_build.scan import ProjectIndex

__all__: list[str] = []

PASSES = Path(__file__).resolve().parent / "golden" / "passes"
CASES = sorted(PASSES.glob("*/*.py"))
BY_NAME = {p.name: p for p in PIPELINE}


def _directive(source: str, name: str) -> str | None:
    m = re.search(rf"^#\s*{name}(?::\s*(.*))?$", source, re.MULTILINE)
    return None if m is None else (m.group(1) or "").strip()


def _configured(p: Pass, options: str) -> Pass:
    """``p`` with the fields ``options`` sets (``archs=sm_80,sm_90; fma=0``)."""
    known = {f.name: f for f in fields(p)}  # type: ignore[arg-type]
    values: dict[str, object] = {}
    for item in filter(None, (o.strip() for o in options.split(";"))):
        key, _, text = item.partition("=")
        key = key.strip()
        assert key in known and key != "name", f"pass {p.name} has no option {key!r}"
        default = getattr(p, key)
        values[key] = (tuple(t.strip() for t in text.split(",") if t.strip()) if isinstance(default, tuple)
                       else text.strip() not in ("0", "false", "False") if isinstance(default, bool)
                       else int(text) if isinstance(default, int) else text.strip())
    return replace(p, **values) if values else p  # type: ignore[type-var]


def _after(entry: str) -> Pass:
    """A pass of ``AFTER``: ``name`` or ``name(field=value; ...)``."""
    name, _, options = entry.partition("(")
    return _configured(BY_NAME[name.strip()], options.rstrip(")"))


def run_case(path: Path) -> tuple[str, str | None, str | None]:
    """(the IR the pass is given, the IR it returns or None, its error or None)."""
    source = path.read_text(encoding="utf-8")
    target = _configured(BY_NAME[path.parent.name], _directive(source, "OPTIONS") or "")
    first = tuple(_after(n.strip()) for n in (_directive(source, "AFTER") or "").split(",") if n.strip())
    index = ProjectIndex(path.parent)
    program = build_program(index, index.add_file(path, path.stem)).program
    program = run_pipeline(program, first, print_after="", verify=True)
    before = print_program(program)
    try:
        program = target.apply(program)
        verify_program(program)
    except (IRError, CompileError) as e:
        return before, None, str(e)
    return before, print_program(program), None


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_pass(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    before, after, error = run_case(path)
    where = str(path.relative_to(PASSES.parent.parent))
    expected_error = _directive(source, "ERROR")
    if expected_error is not None:
        assert after is None, f"{where}: the pass accepted the module; expected: {expected_error}"
        assert error is not None and expected_error in error, f"{where}: expected {expected_error!r}, got {error!r}"
    else:
        assert error is None, f"{where}: the pass refused the module: {error}"
    match(before, checks(source, "BEFORE"), where)
    if after is not None:
        assert checks(source) or _directive(source, "UNCHANGED") is not None, f"{where} checks nothing of the output"
        match(after, checks(source), where)
        if _directive(source, "UNCHANGED") is not None:
            assert after == before, f"{where}: the pass changed the IR"


def test_every_pass_has_its_own_golden_tests() -> None:
    dirs = {p.name for p in PASSES.iterdir() if p.is_dir()}
    assert dirs <= set(BY_NAME), f"no such pass: {sorted(dirs - set(BY_NAME))}"
    missing = [p.name for p in PIPELINE if not list((PASSES / p.name).glob("*.py"))]
    assert not missing, f"passes without a test in tests/golden/passes/: {missing}"


# ---- the checker itself ---------------------------------------------------------------------------

TEXT = "kernel k(x)\n  a = 1\n  b = fma(a, 2)\n  c = a + b\nkernel j(y)\n  d = 4\n"


@pytest.mark.parametrize("directives", [
    "# CHECK: a = 1\n# CHECK-NEXT: b = fma({{[a-z]}}, 2)\n# CHECK-SAME: \n# CHECK: c = a + b",
    "# CHECK: kernel k\n# CHECK-NOT: d = 4\n# CHECK: kernel j\n# CHECK: d = 4",
    "# CHECK: b =\n# CHECK-SAME: fma\n# CHECK-NOT: fma\n# CHECK-LABEL: kernel j(",
    "# CHECK: c   =   a",  # a run of spaces matches any run
])
def test_the_checker_accepts_what_holds(directives: str) -> None:
    match(TEXT, checks(directives), "t")


@pytest.mark.parametrize("directives, why", [
    ("# CHECK: c = a\n# CHECK: b = fma", "is not found"),  # in order only
    ("# CHECK: a = 1\n# CHECK-NEXT: c = a", "is not on the next line"),
    ("# CHECK: kernel k\n# CHECK-NOT: fma\n# CHECK: kernel j", "CHECK-NOT: 'fma' found on line 3"),
    ("# CHECK: kernel j\n# CHECK-NOT: d", "CHECK-NOT: 'd' found on line 6"),
    ("# CHECK: a = 1\n# CHECK-SAME: b", "is not on the line of the last match"),
    ("# CHECK: {{fma\\(b}}", "is not found"),
])
def test_the_checker_refuses_what_does_not_hold(directives: str, why: str) -> None:
    from filecheck import CheckFailure

    with pytest.raises(CheckFailure, match=re.escape(why)):
        match(TEXT, checks(directives), "t")
