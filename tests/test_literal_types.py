"""Literal locals typed before the translation (oxide_build/frontend/literal_types.py): each
function is translated once, with the types the walk decides, and those are the types the
attempts by translation (ProgramBuilder._search_literal_types, the retry loop the frontend used
before) reach, for every example and fixture module."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError, OxideError
from oxide_build import compile as driver
from oxide_build.compile import CompileOptions
from oxide_build.frontend import program
from oxide_build.frontend.literal_types import LiteralTypes
from oxide_build.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptx_snapshot import ROOT, snapshot_modules  # noqa: E402

HEADER = ("import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, f64, i32, i64, "
          "u8, u32, u64, thread, block, warp\n")

# the functions whose literal locals meet what the walk does not type (a struct's fields, a
# tuple from a device function; a meeting of the walk and the translation that differs): the
# attempts by translation type them. A new fixture may add one; more than a few means the walk
# has lost a rule of the translation's.
SEARCHED = {("port_ray_spheres.py", "ray_kernel"), ("port_aten_avg_pool2d.py", "avg_pool2d_out_cuda_frame")}


def _frontend(path: Path, module: str, root: Path) -> str:
    options = CompileOptions(archs=("sm_90",), link_cubins=False, cache=False)
    try:
        build = driver.run_stages(driver._request(path, module, options, root, None), until="frontend")
    except OxideError as exc:
        return f"error: {exc}"
    assert build.frontend is not None
    return print_program(build.frontend.program)


def _by_translation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk made to decide nothing: every function typed by the attempts by translation."""
    monkeypatch.setattr(program, "decide_literal_types", lambda tr: LiteralTypes({}, {}, settled=False))


def test_the_walk_types_every_example_and_fixture_as_the_attempts_by_translation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    searched: set[tuple[str, str]] = set()
    search = program.ProgramBuilder._search_literal_types

    def spy(builder: program.ProgramBuilder, module: object, fdef: object, *args: object, **kw: object) -> object:
        searched.add((module.path.name, fdef.name))  # type: ignore[attr-defined]
        return search(builder, module, fdef, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(program.ProgramBuilder, "_search_literal_types", spy)
    modules = snapshot_modules()
    walked = {str(path): _frontend(path, module, root) for path, module, root in modules}
    assert len(searched - SEARCHED) <= 2, sorted(searched)
    assert SEARCHED & searched, sorted(searched)  # the fallback is still exercised
    _by_translation(monkeypatch)
    differ = [str(path.relative_to(ROOT)) for path, module, root in modules
              if _frontend(path, module, root) != walked[str(path)]]
    assert differ == []
    assert len(modules) > 100


def _translations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    attempt = program.ProgramBuilder._attempt

    def count(builder: program.ProgramBuilder, module: object, fdef: object, *args: object) -> object:
        made.append(fdef.name)  # type: ignore[attr-defined]
        return attempt(builder, module, fdef, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(program.ProgramBuilder, "_attempt", count)
    return made


def _kernel_ir(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return print_program(driver.build_ir(src, "kern")[1].program)


def test_a_function_whose_literal_locals_retype_is_translated_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        acc = 0.0
        s = 16
        while s > 0:
            acc += x[s % len(x)]
            s //= 2
        if i < len(out) and s < n:
            out[i] = acc
    """
    made = _translations(monkeypatch)
    text = _kernel_ir(tmp_path, source)
    assert made == ["k"]
    assert "acc: f32 = 0.0:f32" in text and "s: i64 = 16:i64" in text  # it meets len(x) too
    made.clear()
    _by_translation(monkeypatch)
    assert _kernel_ir(tmp_path, source) == text
    assert made == ["k", "k", "k"]  # what the walk saves: attempts with acc an f64, then s an i32


def test_literal_locals_met_inside_an_intrinsic_call_and_a_failed_conversion(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _translations(monkeypatch)
    text = _kernel_ir(tmp_path, """
    @ox.kernel
    def k(x: Slice[u32], out: DisjointSlice[u32]) -> None:
        i = thread.index_1d()
        c0 = x[0]
        c1 = 0
        offset = 16
        while offset > 0:
            c0 = warp.shfl_down(c0, offset) ^ c1
            c1 = c0 + 1
            offset //= 2
        if i < len(out):
            out[i] = c0 ^ c1
    """)
    assert made == ["k"]
    assert "offset: i32 = 16:i32" in text and "c1: u32 = 0:u32" in text


def test_an_error_is_the_one_the_attempts_by_translation_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = """
    @ox.kernel
    def k(x: Slice[u32], out: DisjointSlice[i64]) -> None:
        i = thread.index_1d()
        d = -1
        d += x[0]
        if i < len(out):
            out[i] = d
        e = 0.5
        out[i] = e
    """
    with pytest.raises(CompileError) as walked:
        _kernel_ir(tmp_path, body)
    _by_translation(monkeypatch)
    with pytest.raises(CompileError) as searched:
        _kernel_ir(tmp_path, body)
    assert str(walked.value) == str(searched.value)
    assert "kern.py:12:14:" in str(walked.value) and "store into out needs i64" in str(walked.value)
