"""Check versioning (oxide_build/passes/check_versioning.py): the test it puts before a counted
loop is sound — evaluated here with the machine's wrapping arithmetic over many sizes, including
ones where the i32 index math wraps, whenever it holds every index the loop takes is in range —
and it holds for the ordinary sizes, so the unchecked copy is the one that runs."""
from __future__ import annotations

import random
import textwrap
from dataclasses import replace
from pathlib import Path

from oxide_build.frontend import build_program
from oxide_build.ir import nodes as ir
from oxide_build.ir.types import I32, ScalarType
from oxide_build.passes import PIPELINE, run_pipeline
from oxide_build.passes.bounds_elimination import BoundsElimination
from oxide_build.scan import ProjectIndex

SOURCE = '''
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel
def rows(A: Slice[f32], x: Slice[f32], out: DisjointSlice[f32], NX: i32, NY: i32) -> None:
    i = thread.index_1d()
    if i < NX:
        out[i] = 0.0
        for j in range(NY):
            out[i] += A[i * NY + j] * x[j]


@ox.kernel
def columns(A: Slice[f32], out: DisjointSlice[f32], NX: i32, NY: i32, c: i32) -> None:
    j = thread.index_1d()
    if j < NY:
        out[j] = 0.0
        for r in range(2, NX):
            out[j] += A[i64(r * NY - c) + j]


@ox.kernel
def features(A: Slice[f32], out: DisjointSlice[f32], NX: i32, NY: i32, c: i32) -> None:
    p = thread.index_1d()
    if p < NX:
        out[p] = 0.0
        for l in range(NY):
            addr = i32(p) + l * NX - c
            out[p] += A[addr]
'''


def _program(tmp_path: Path) -> ir.Program:
    src = tmp_path / "vk.py"
    src.write_text(textwrap.dedent(SOURCE).replace("i64(", "ox.i64("))
    index = ProjectIndex(tmp_path)
    program = build_program(index, index.add_file(src, "vk")).program
    names = {"bounds-elimination", "check-versioning"}  # the kernels as written, not launch-versioned
    passes = tuple(replace(p, launch_versioning=False) if isinstance(p, BoundsElimination) else p
                   for p in PIPELINE if p.name in names)
    return run_pipeline(program, passes=passes)


def _versioned(fn: ir.Function) -> ir.If:
    found = [s for s in ir.statements(fn.body) if isinstance(s, ir.If) and s.then and isinstance(s.then[0], ir.While)]
    assert len(found) == 1, fn.python_name
    return found[0]


def _wrap(value: int, ty: object) -> int:
    if not isinstance(ty, ScalarType) or ty.kind not in ("int", "uint"):
        return value  # the thread index: exact
    value &= (1 << ty.bits) - 1
    return value - (1 << ty.bits) if ty.kind == "int" and value >> (ty.bits - 1) else value


def _eval(e: ir.Expr, env: dict[str, int]) -> int:
    """``e`` as the machine computes it (wrapping integer arithmetic)."""
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.ViewLen):
        assert isinstance(e.view, ir.Var)
        return env["len " + e.view.name]
    if isinstance(e, ir.Cast):
        return _wrap(_eval(e.operand, env), e.ty)
    if isinstance(e, ir.BinOp):
        a, b = _eval(e.left, env), _eval(e.right, env)
        return _wrap({"+": a + b, "-": a - b, "*": a * b}[e.op.value], e.ty)
    if isinstance(e, ir.Compare):
        a, b = _eval(e.left, env), _eval(e.right, env)
        return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[e.op.value])
    if isinstance(e, ir.BoolOp):
        values = (_eval(v, env) for v in e.values)
        return int(all(values)) if e.op.value == "and" else int(any(values))
    if isinstance(e, ir.Select):
        return _eval(e.if_true, env) if _eval(e.cond, env) else _eval(e.if_false, env)
    raise AssertionError(f"unexpected {type(e).__name__}")


def test_the_fast_copy_has_no_checks_of_the_moving_indices(tmp_path: Path) -> None:
    program = _program(tmp_path)
    for fn in program.functions:
        test = _versioned(fn)
        fast, slow = test.then[0], test.orelse[0]
        assert isinstance(fast, ir.While) and isinstance(slow, ir.While)
        moving = [x for s in ir.statements(fast.body) for root in ir.statement_roots(s)
                  for x in ir.subexpressions(root) if isinstance(x, ir.ViewLoad) and x.view.name in ("A", "x")]  # type: ignore[union-attr]
        assert moving and all(x.check_site is None for x in moving)
        checked = [x for s in ir.statements(slow.body) for root in ir.statement_roots(s)
                   for x in ir.subexpressions(root) if isinstance(x, ir.ViewLoad) and x.check_site is not None]
        assert len(checked) >= len(moving)


def _indices_in_range(fn: str, env: dict[str, int]) -> bool:
    if fn == "rows":
        i, ny = env["i"], env["NY"]
        return all(0 <= i * ny + j < env["len A"] and 0 <= j < env["len x"] for j in range(ny))
    if fn == "features":
        p, nx, c = env["p"], env["NX"], env["c"]
        return all(0 <= _wrap(_wrap(p + _wrap(l * nx, I32), I32) - c, I32) < env["len A"] for l in range(env["NY"]))
    j, ny, c = env["j"], env["NY"], env["c"]
    return all(0 <= _wrap(r * ny - c, I32) + j < env["len A"] for r in range(2, env["NX"]))


def test_the_test_before_the_loop_is_sound_and_holds_for_ordinary_sizes(tmp_path: Path) -> None:
    program = _program(tmp_path)
    rng = random.Random(28)
    big = [0, 1, 2, 3, 7, 64, 1000, 46341, 65536, 2**31 - 1, 2**31 - 2]
    for fn in program.functions:
        cond = _versioned(fn).cond
        held = 0
        for trial in range(3000):
            pick = (lambda: rng.choice(big)) if trial % 3 == 0 else (lambda: rng.randrange(0, 300))
            nx, ny = pick(), pick()
            if max(nx, ny) > 5000 and trial % 3 == 0:  # keep the brute force small: sizes that loop little
                nx, ny = (rng.randrange(0, 6), ny) if fn.python_name == "columns" else (nx, rng.randrange(0, 4))
            stop = ny if fn.python_name == "rows" else nx
            env = {"NX": nx, "NY": ny, "c": rng.choice([0, 1, -5, 2**31 - 1]),
                   "len A": rng.choice([0, 10, nx * ny, nx * ny + 1, max(nx * ny - 1, 0), 2**62]),
                   "len x": rng.choice([ny, max(ny - 1, 0), 0, 10**6])}
            env["i" if fn.python_name == "rows" else "j"] = rng.randrange(0, max(nx if fn.python_name == "rows" else ny, 1) + 2)
            env["p"] = rng.randrange(0, max(nx, 1) + 2)
            if fn.python_name == "features":
                stop = ny
            env["$stop1" if fn.python_name == "rows" else "$stop3" if fn.python_name == "columns" else "$stop5"] = _wrap(stop, I32)
            if _eval(cond, env):
                held += 1
                assert _indices_in_range(fn.python_name, env), (fn.python_name, env)
        # the i32 row offset r * NY - c wraps between the loop's ends: both ends are in range,
        # the middle is not; only the test that the narrow value did not wrap catches it
        for nx, ny, c in ((5, 2**31 - 1, 2**31 - 1), (4, 2**30 + 5, 2**30), (7, 2**29 + 3, 0)):
            env = {"NX": nx, "NY": ny, "c": c, "len A": 2**62, "len x": ny, "i": 0, "j": 0,
                   "$stop1": _wrap(ny, I32), "$stop3": nx}
            if fn.python_name == "columns":
                assert not _eval(cond, env) or _indices_in_range(fn.python_name, env), env
        ordinary = {"NX": 64, "NY": 64, "c": 0, "len A": 64 * 64, "len x": 64, "i": 5, "j": 5, "p": 5,
                    "$stop1": 64, "$stop3": 64, "$stop5": 64}
        assert _eval(cond, ordinary), fn.python_name
        assert held > 100, (fn.python_name, held)
