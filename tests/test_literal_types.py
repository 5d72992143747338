"""Literal locals typed before the translation (oxide_build/frontend/literal_types.py): each
function instance is translated exactly once, with the types the walk decides, and the
translation's record of what those locals met agrees with the walk's, for every function of the
examples, the fixtures, the benchmarks and the sample project. A disagreement is an internal
compiler error under OXIDE_VERIFY_IR=1 (the tests set it, tests/conftest.py), so every test that
compiles a kernel checks it too; without it the translation stands, with the walk's types."""
from __future__ import annotations

import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from oxide.errors import CompileError, OxideError
from oxide_build import compile as driver
from oxide_build.compile import CompileOptions
from oxide_build.frontend import program, translate
from oxide_build.frontend.literal_types import LiteralTypes
from oxide_build.ir.printer import print_program
from oxide_build.ir.types import F32

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptx_snapshot import ROOT, modules_of, snapshot_modules  # noqa: E402

HEADER = ("import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, f64, i32, i64, "
          "u8, u32, u64, thread, block, warp\n")


class _Translations:
    """Every ``translate_function`` (one instance of a function) and every body translated,
    by program builder; the builders, for their ``literal_disagreements``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.instances: Counter[tuple[int, str]] = Counter()
        self.bodies: Counter[int] = Counter()
        self.names: list[str] = []
        self.builders: dict[int, program.ProgramBuilder] = {}
        translate_function = program.ProgramBuilder.translate_function
        translate_body = translate.FunctionTranslator.translate_body

        def instance(builder: program.ProgramBuilder, module: object, fdef: object, typevars: object, symbol: str,
                     *args: object, **kw: object) -> object:
            self.builders[id(builder)] = builder
            self.instances[(id(builder), symbol)] += 1
            self.names.append(fdef.name)  # type: ignore[attr-defined]
            return translate_function(builder, module, fdef, typevars, symbol, *args, **kw)  # type: ignore[arg-type]

        def body(tr: translate.FunctionTranslator) -> object:
            self.bodies[id(tr.builder)] += 1
            return translate_body(tr)

        monkeypatch.setattr(program.ProgramBuilder, "translate_function", instance)
        monkeypatch.setattr(translate.FunctionTranslator, "translate_body", body)

    def assert_once(self) -> None:
        """Each instance translated once, and one body translated for each."""
        assert [key for key, n in self.instances.items() if n != 1] == []
        for builder in self.builders:
            assert self.bodies[builder] == sum(n for (b, _), n in self.instances.items() if b == builder)

    def disagreements(self) -> list[program.LiteralDisagreement]:
        return [d for b in self.builders.values() for d in b.literal_disagreements]


def _corpus() -> list[tuple[Path, str, Path]]:
    """snapshot_modules (examples/, tests/packages/), and the benchmarks' and the sample
    project's modules."""
    return snapshot_modules() + modules_of(sorted((ROOT / "benchmarks").rglob("*.py"))
                                           + sorted((ROOT / "sample_project").rglob("*.py")))


def _frontend(path: Path, module: str, root: Path) -> str:
    options = CompileOptions(archs=("sm_90",), link_cubins=False, cache=False)
    try:
        build = driver.run_stages(driver._request(path, module, options, root, None), until="frontend")
    except OxideError as exc:
        return f"error: {exc}"
    assert build.frontend is not None
    return print_program(build.frontend.program)


def test_every_function_of_the_corpus_is_translated_once_as_the_walk_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXIDE_VERIFY_IR", "0")  # the disagreements recorded, not raised: all of them listed
    made = _Translations(monkeypatch)
    modules = _corpus()
    texts = {str(path): _frontend(path, module, root) for path, module, root in modules}
    assert len(modules) > 130 and len(made.instances) > 550
    made.assert_once()
    assert [(Path(d.file).name, d.function, d.decided, d.met) for d in made.disagreements()] == []
    # the two the walk once left to a retry loop: a struct's fields, a tuple from a generic device function
    assert {"ray_kernel", "avg_pool2d_out_cuda_frame"} <= set(made.names)
    ray = texts[str(ROOT / "tests/packages/ports/port_ray_spheres.py")]
    assert "r: f32 = 0.0:f32" in ray and "maxz: f32 = " in ray
    pool = texts[str(ROOT / "tests/packages/ports/port_aten_avg_pool2d.py")]
    assert "aveval: f32 = 0.0:f32" in pool and "divide_factor: i64 = 0:i64" in pool


def _kernel_ir(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return print_program(driver.build_ir(src, "kern")[1].program)


def test_a_function_whose_literal_locals_retype_is_translated_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _Translations(monkeypatch)
    text = _kernel_ir(tmp_path, """
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
    """)
    assert made.names == ["k"]
    made.assert_once()
    assert "acc: f32 = 0.0:f32" in text and "s: i64 = 16:i64" in text  # it meets len(x) too


def test_literal_locals_met_inside_an_intrinsic_call_and_a_failed_conversion(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _Translations(monkeypatch)
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
    assert made.names == ["k"]
    made.assert_once()
    assert "offset: i32 = 16:i32" in text and "c1: u32 = 0:u32" in text


def test_literal_locals_meet_the_other_operand_of_the_expression_they_are_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``z_re * z_re - z_im * z_im + c_re`` with an f32 ``c_re``: the literal locals that gave
    the left operand its f64 meet the f32 (C's ``float z_re = 0.0f``), so the iteration runs in
    f32 (numba-cuda's Mandelbrot example); ``j * N + i`` with an i32 ``i`` makes a constant
    range's ``j`` an i32 with an i32 ``thread.idx.x``. A local that also meets an f64 stays f64."""
    made = _Translations(monkeypatch)
    text = _kernel_ir(tmp_path, """
    N = 64


    def mandel(x: f32, y: f32, d: f64, max_iters: i32) -> i32:
        z_re = 0.0
        z_im = 0.0
        w = 0.0
        for i in range(max_iters):
            z_re, z_im = z_re * z_re - z_im * z_im + x, 2 * z_re * z_im + y
            w = w * d + x
            if (z_re * z_re + z_im * z_im) >= 4:
                return i
        return max_iters + i32(w)


    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            acc = 0
            for j in range(N):
                acc += i32(x[j * N + thread.idx.x])
            out[i] = mandel(x[i], x[i], f64(x[i]), 20) + acc
    """)
    made.assert_once()
    assert "z_re: f32 = 0.0:f32" in text and "z_im: f32 = 0.0:f32" in text
    assert "w: f64 = 0.0:f64" in text
    assert "j: i32 = 0:i32" in text


def test_literal_locals_met_in_struct_fields_vector_lanes_and_tuples_from_device_functions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _Translations(monkeypatch)
    text = _kernel_ir(tmp_path, """
    T = ox.TypeVar("T", i32, i64)

    @ox.struct
    class P:
        w: f32
        n: i32

    def make(x: f32) -> P:
        return P(x, 1)

    def split(k: T, m: T) -> tuple[T, f32]:
        return k // m, f32(k % m)

    @ox.kernel
    def k(x: Slice[f32], y: Slice[ox.f32x4], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        w = 0.0
        c = 0
        lane = 0.0
        frac = 0.0
        q = 0
        p = make(x[0])
        p.w += 1.0
        p.n = c
        for j in range(4):
            w += p.w
            lane = y[j].z
            q, frac = split(i32(j), 3)
            c = p.n
        v = y[0]
        a, b, e, f = v
        if i < len(out):
            out[i] = w + lane + frac + f32(q) + a + b + e + f
    """)
    assert sorted(made.names) == ["k", "make", "split"]
    made.assert_once()
    assert made.disagreements() == []
    for local in ("w: f32 = 0.0:f32", "lane: f32 = 0.0:f32", "frac: f32 = 0.0:f32", "q: i32 = 0:i32",
                  "c: i32 = 0:i32"):
        assert local in text, local


def test_a_device_function_that_declares_no_return_type_is_walked_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _Translations(monkeypatch)
    text = _kernel_ir(tmp_path, """
    def half(v: f32):
        h = 0.5
        return v * h

    def pair(v: f32):
        return v, 1

    def total(v: f32, w: f32) -> tuple[f32, i32]:
        s = 0.0
        s += w
        return v + s, 0

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        acc = 0.0
        b = 0.0
        t = 0.0
        acc += half(x[0])
        a, n = pair(x[1])
        b = a
        t, m = total(x[2], t)
        if i < len(out):
            out[i] = acc + b + f32(n) + t + f32(m)
    """)
    assert sorted(made.names) == ["half", "k", "pair", "total"]
    made.assert_once()
    assert made.disagreements() == []
    assert "return (v * 0.5:f32)" in text  # h, a named constant, takes the type of v
    for local in ("acc: f32 = 0.0:f32", "b: f32 = 0.0:f32", "t: f32 = 0.0:f32", "s: f32 = 0.0:f32"):
        assert local in text, local


def test_an_error_is_the_one_of_the_attempt_that_got_furthest(tmp_path: Path) -> None:
    # `d` meets a u32 (then -1 does not fit) and every attempt fails: the error is the one the
    # attempt with `d` an i64 stops at, further down the source
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
    assert "kern.py:12:14:" in str(walked.value) and "store into out needs i64" in str(walked.value)


DISAGREES = """
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    acc = 0.0
    acc += x[0]
    if i < len(out):
        out[i] = f32(acc)
"""


def test_a_disagreement_is_an_internal_error_under_verify_and_otherwise_the_walks_types_stand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the walk made to miss what `acc` meets (a rule of the translation's it lacks)
    monkeypatch.setattr(program, "decide_literal_types", lambda tr: LiteralTypes({}, {}))
    monkeypatch.setenv("OXIDE_VERIFY_IR", "1")
    with pytest.raises(CompileError) as failed:
        _kernel_ir(tmp_path, DISAGREES)
    assert "kern.py:5:1: error: internal compiler error: the translation of k() met its literal-initialized " \
           "locals as {acc: f32}, but literal_types.py decided their types expecting {}" in str(failed.value)
    monkeypatch.setenv("OXIDE_VERIFY_IR", "0")
    made = _Translations(monkeypatch)
    text = _kernel_ir(tmp_path, DISAGREES)
    made.assert_once()
    assert "acc: f64 = 0.0:f64" in text  # a well-typed translation: the literal's own type, checked throughout
    assert [(d.function, d.met) for d in made.disagreements()] == [("k", {"acc": F32})]


def test_a_bug_of_the_walk_is_no_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(tr: object) -> LiteralTypes:
        raise AttributeError("a bug")

    monkeypatch.setattr(program, "decide_literal_types", broken)
    monkeypatch.setenv("OXIDE_VERIFY_IR", "0")
    assert "acc: f64 = 0.0:f64" in _kernel_ir(tmp_path, DISAGREES)
    monkeypatch.setenv("OXIDE_VERIFY_IR", "1")
    with pytest.raises(CompileError, match="literal_types.py found no decision"):
        _kernel_ir(tmp_path, DISAGREES)
