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


def _program(tmp_path: Path, source: str = SOURCE, also: tuple[str, ...] = ()) -> ir.Program:
    src = tmp_path / "vk.py"
    src.write_text(textwrap.dedent(source).replace("i64(", "ox.i64("))
    index = ProjectIndex(tmp_path)
    program = build_program(index, index.add_file(src, "vk")).program
    names = {"bounds-elimination", "check-versioning", *also}  # the kernels as written, not launch-versioned
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
        if e.op.value == "//":
            return _wrap(a // b if b else 0, e.ty)  # floor, as the IR's // is (x // 0 == 0)
        if e.op.value == "%":
            return _wrap(a % b if b else a, e.ty)
        return _wrap({"+": a + b, "-": a - b, "*": a * b}[e.op.value], e.ty)
    if isinstance(e, ir.Compare):
        a, b = _eval(e.left, env), _eval(e.right, env)
        return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[e.op.value])
    if isinstance(e, ir.Not):
        return int(not _eval(e.operand, env))
    if isinstance(e, ir.BoolOp):
        values = (_eval(v, env) for v in e.values)
        return int(all(values)) if e.op.value == "and" else int(any(values))
    if isinstance(e, ir.Select):
        return _eval(e.if_true, env) if _eval(e.cond, env) else _eval(e.if_false, env)
    if isinstance(e, ir.Intrinsic) and not e.args:
        return env[e.name]  # warp.lane()
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
    # out[k], the same in every trip, is tested before the loop too
    if not 0 <= env[{"rows": "i", "features": "p"}.get(fn, "j")] < env["len out"]:
        return False
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
                   "len x": rng.choice([ny, max(ny - 1, 0), 0, 10**6]), "len out": rng.choice([0, 3, 300, 2**40])}
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
            env = {"NX": nx, "NY": ny, "c": c, "len A": 2**62, "len x": ny, "len out": 2**40, "i": 0, "j": 0,
                   "$stop1": _wrap(ny, I32), "$stop3": nx}
            if fn.python_name == "columns":
                assert not _eval(cond, env) or _indices_in_range(fn.python_name, env), env
        ordinary = {"NX": 64, "NY": 64, "c": 0, "len A": 64 * 64, "len x": 64, "len out": 64, "i": 5, "j": 5, "p": 5,
                    "$stop1": 64, "$stop3": 64, "$stop5": 64}
        assert _eval(cond, ordinary), fn.python_name
        assert held > 100, (fn.python_name, held)


STEPPED = '''
import oxide as ox
from oxide import DisjointSlice, Slice, block, f32, i32, thread


@ox.kernel
def strided(A: Slice[f32], out: DisjointSlice[f32], W: i32, N: i32, c: i32) -> None:
    p = thread.index_1d()
    if p < W:
        out[p] = 0.0
        for r in range(2, N, 3):
            out[p] += A[i32(p) + r * W - c]


@ox.kernel
def tiled(A: Slice[f32], out: DisjointSlice[f32], W: i32, c: i32) -> None:
    tile = ox.shared.array((32, 33), f32)
    for i in range(0, 32, 8):
        tile[thread.idx.y + i, thread.idx.x] = A[c + i * W]
    block.sync()
    out[thread.index_1d()] = tile[thread.idx.x, thread.idx.y]
'''


def test_a_loop_of_constant_step_and_one_indexing_a_2d_array_are_versioned(tmp_path: Path) -> None:
    """range(start, stop, s) with a constant s > 1 (the tiles of a transpose), and a body that
    indexes a 2-D shared array (flat_index, checked_index: index arithmetic, no barrier)."""
    program = _program(tmp_path, STEPPED)
    for fn in program.functions:
        fast = _versioned(fn).then[0]
        assert isinstance(fast, ir.While)
        loads = [x for s in ir.statements(fast.body) for root in ir.statement_roots(s)
                 for x in ir.subexpressions(root) if isinstance(x, ir.ViewLoad) and x.view.name == "A"]  # type: ignore[union-attr]
        assert loads and all(x.check_site is None for x in loads), fn.python_name


def test_the_test_before_a_stepped_loop_is_sound(tmp_path: Path) -> None:
    """The last index the loop takes is start + the largest multiple of s <= stop - 1 - start,
    not stop - 1: a test that held with stop - 1 would refuse sizes it need not, one with a
    wrong last value would let an index out of range through."""
    fn = next(f for f in _program(tmp_path, STEPPED).functions if f.python_name == "strided")
    test = _versioned(fn)
    loop = test.then[0]
    assert isinstance(loop, ir.While) and isinstance(loop.cond, ir.Compare) and isinstance(loop.cond.right, ir.Var)
    stop_name = loop.cond.right.name
    rng = random.Random(29)
    held = 0
    for trial in range(4000):
        w, n = rng.choice([rng.randrange(0, 200), 2**30 + 7, 2**31 - 1]), rng.randrange(0, 40)
        c, p = rng.choice([0, 1, -7, 2**31 - 1, rng.randrange(0, 100)]), rng.randrange(0, 50)
        length = rng.choice([w * n, w * n + 1, max(w * n - 1, 0), w * (n - 1) + 50, 2**62, rng.randrange(0, 5000)])
        env = {"W": w, "N": n, "c": c, "p": p, "len A": length, "len out": rng.choice([0, 10, 60, 2**40]), stop_name: n}
        ok = 0 <= p < env["len out"] and all(0 <= _wrap(_wrap(_wrap(p + _wrap(r * w, I32), I32) - c, I32), I32) < length for r in range(2, n, 3))
        if _eval(test.cond, env):
            held += 1
            assert ok, env
    # the last r of range(2, 13, 3) is 11, not 12: an array of 11 * W + p + 1 elements holds every index
    env = {"W": 64, "N": 13, "c": 0, "p": 3, "len A": 11 * 64 + 4, "len out": 64, stop_name: 13}
    assert _eval(test.cond, env)
    env["len A"] -= 1
    assert not _eval(test.cond, env)
    assert held > 100, held
    # every index in range (W = 0), but r + 3 wraps past N = 2**31 - 1 after the last r
    # (2**31 - 3): the loop would go on with negative r, so the test must not hold
    env = {"W": 0, "N": 2**31 - 1, "c": 0, "p": 3, "len A": 2**62, "len out": 64, stop_name: 2**31 - 1}
    assert not _eval(test.cond, env)
    env[stop_name] = env["N"] = 2**31 - 3  # last r 2**31 - 6, then 2**31 - 3: no wrap
    assert _eval(test.cond, env)


def test_the_transpose_tile_loops_run_unchecked_in_the_fast_copy() -> None:
    """cuda-samples transposeNoBankConflicts: ``for i in range(0, TILE_DIM, BLOCK_ROWS)`` (step 8)
    over a 2-D shared tile. Its global load and store each kept a check in the block-shape
    versioned copy, and a check between one load and the next shared store serializes the
    loads (ptxas issues the next load only after the store, which waits for the data); now each
    loop has an unchecked copy behind one test."""
    root = Path(__file__).resolve().parent / "packages" / "ports"
    index = ProjectIndex(root)
    program = run_pipeline(build_program(index, index.add_file(root / "port_transpose_coalesced.py", "ptc")).program)
    # the copy proven under the block shape: the kernel's fast instance (passes/launch_instances.py)
    fn = next(f for f in program.functions if f.python_name == "transpose_no_bank_conflicts" and f.fast_of)
    tests = [s for s in fn.body if isinstance(s, ir.If)]
    assert len(tests) == 2  # the load loop and the store loop
    for test in tests:
        fast = test.then[0]
        assert isinstance(fast, ir.While)
        sites = [x for s in ir.statements(fast.body) for x in ([s] if isinstance(s, ir.Store) else [])
                 + [y for root in ir.statement_roots(s) for y in ir.subexpressions(root) if isinstance(y, ir.ViewLoad)]
                 if x.check_site is not None]
        assert sites == []


RUNS = '''
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread


@ox.kernel
def taps(src: Slice[f32], out: MutSlice[f32], p: i32, rows: i32, w: i32) -> None:
    c = thread.index_1d()
    q = p * 3 + w
    a = src[c]
    b = src[c + q] if rows > 2 else 0.0
    r = (c + p) % w
    s = src[r * p - w] + src[c // w]
    with ox.unsafe():
        out[c + p] = a + b + s
'''


def _taps_in_range(env: dict[str, int]) -> bool:
    """Every access of ``taps`` that runs is in range: c a ThreadIndex (i64), q an i32 that wraps,
    ``//`` and ``%`` Python's (x // 0 == 0, x % 0 == x)."""
    c, p, rows, w, q, n, m = env["c"], env["p"], env["rows"], env["w"], env["q"], env["len src"], env["len out"]
    r = (c + p) % w if w else c + p
    indices = [(c, n), (r * p - w, n), (c // w if w else 0, n), (c + p, m)]
    if rows > 2:
        indices.append((c + q, n))
    return all(0 <= i < length for i, length in indices)


def test_the_test_before_a_run_is_sound_and_holds_for_ordinary_sizes(tmp_path: Path) -> None:
    """run-versioning: wherever the test before a run holds, every access it removed the check
    of is in range (evaluated with the machine's wrapping arithmetic, Python's // and %, over
    sizes where the i32 index math wraps, divisors of 0 and negative ones); and it holds for
    ordinary sizes. Where it fails, one of those accesses is out of range: the copy as written
    ends the thread at its check, so it is lowered with no way back (``If.orelse_fails``)."""
    (fn,) = _program(tmp_path, RUNS, also=("run-versioning",)).functions
    found = [s for s in ir.statements(fn.body) if isinstance(s, ir.If) and s.check_versioned]
    assert len(found) == 1 and found[0].orelse_fails
    fast, slow = found[0].then, found[0].orelse
    checked = lambda body: [x for s in ir.statements(body) for r in ir.statement_roots(s) for x in ir.subexpressions(r)  # noqa: E731
                            if isinstance(x, ir.ViewLoad) and x.check_site is not None] + [
        s for s in ir.statements(body) if isinstance(s, ir.Store) and s.check_site is not None]
    assert not checked(fast) and len(checked(slow)) == 5
    cond = found[0].cond
    prelude = [s for s in fn.body[:fn.body.index(found[0])] if isinstance(s, ir.Assign) and s.name.startswith("$run")]
    assert prelude  # the values the run assigns, computed once before the test

    def evaluate(env: dict[str, int]) -> int:
        for s in prelude:
            env[s.name] = _eval(s.value, env)
        return _eval(cond, env)

    rng = random.Random(28)
    values = [0, 1, 2, 3, -1, -7, 64, 1000, 46341, 2**31 - 1, -2**31, 2**30 + 5]
    held = 0
    for trial in range(20000):
        pick = (lambda: rng.choice(values)) if trial % 2 else (lambda: rng.randrange(-50, 300))
        env = {"c": rng.randrange(0, 400), "p": pick(), "rows": rng.choice([0, 2, 3, 9]), "w": pick()}
        env["q"] = _wrap(env["p"] * 3 + env["w"], I32)
        env["len src"] = rng.choice([0, 5, 100, 400, 1000, 2**31, 2**40])
        env["len out"] = rng.choice([0, 100, 700, 2**40])
        if evaluate(env):
            held += 1
            assert _taps_in_range(env), env
        else:  # the copy with its checks fails one of them: it never reaches the code after the run
            assert not _taps_in_range(env), env
    ordinary = {"c": 5, "p": 64, "rows": 4, "w": 16, "q": 208, "len src": 4096, "len out": 4096}
    assert evaluate(ordinary)
    assert held > 1000, held


INVARIANT = '''
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread


@ox.kernel
def rows(a: Slice[f32], y: MutSlice[f32], tmp: MutSlice[f32], n: i32) -> None:
    i = thread.index_1d()
    with ox.unsafe():
        for j in range(n):
            tmp[i] += a[j]
            y[i] += a[j]
        y[i] = tmp[i] + y[i]
'''


def test_the_checks_that_are_the_same_in_every_trip_are_tested_before_the_loop(tmp_path: Path) -> None:
    """check-versioning: ``tmp[i]`` and ``y[i]`` in a loop over ``j`` are tested once before the
    loop, and the fast copy has no check of them (LLVM did not hoist them, and a test in the
    loop would stay there); the test is sound. run-versioning leaves the loop body alone, and
    versions the run after the loop."""
    (fn,) = _program(tmp_path, INVARIANT, also=("run-versioning",)).functions
    loop_test = _versioned(fn)
    fast = loop_test.then[0]
    assert isinstance(fast, ir.While)
    checked = [x for s in ir.statements(fast.body) for r in ir.statement_roots(s) for x in ir.subexpressions(r)
               if isinstance(x, ir.ViewLoad) and x.check_site is not None]
    checked += [s for s in ir.statements(fast.body) if isinstance(s, (ir.Store, ir.If)) and getattr(s, "check_site", None) is not None
                or isinstance(s, ir.If) and s.check_versioned]
    assert checked == []
    after = [s for s in fn.body if isinstance(s, ir.If) and s.check_versioned and s is not loop_test]
    assert len(after) == 1 and after[0].orelse_fails  # y[i] = tmp[i] + y[i]: two tests, after the loop
    rng = random.Random(7)
    held = 0
    for _ in range(5000):
        env = {"i": rng.choice([-3, -1, 0, 1, 5, 99, 100, 2**31 - 1, rng.randrange(0, 300)]), "n": rng.choice([0, 1, 7, 300]),
               "len a": 300, "len tmp": rng.choice([0, 1, 100, 200]), "len y": rng.choice([0, 6, 100, 400])}
        env["j"] = 0
        env["$stop1"] = env["n"]
        if _eval(loop_test.cond, env):
            held += 1
            assert 0 <= env["i"] < min(env["len tmp"], env["len y"]), env
    assert held > 200


LANES = """
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, warp


@ox.kernel
def row_sums(inp: Slice[f32], out: MutSlice[f32], N: i32, C: i32) -> None:
    row = block.idx.x * (block.dim.x // 32) + warp.id()
    if row >= N:
        return
    x = inp[row * C:]
    s = f32(0.0)
    for i in range(warp.lane(), C, 32):
        s += x[i]
    s = warp.reduce_sum(s)
    if warp.lane() == 0:
        with ox.unsafe():
            out[row] = s
"""


def test_a_loop_from_the_lane_in_steps_of_the_warp_is_versioned_soundly(tmp_path: Path) -> None:
    """``for i in range(warp.lane(), C, 32)`` over a row (a warp per row, llm.c's layer norm):
    the lane is evaluated again in the test before the loop, and the fast copy reads ``x[i]``
    unchecked; the test holds only when every ``i`` the lane takes is inside ``x``."""
    (fn,) = _program(tmp_path, LANES).functions
    test = _versioned(fn)
    fast = test.then[0]
    assert isinstance(fast, ir.While)
    loads = [x for s in ir.statements(fast.body) for r in ir.statement_roots(s) for x in ir.subexpressions(r)
             if isinstance(x, ir.ViewLoad)]
    assert loads and all(x.check_site is None for x in loads)
    assert any(isinstance(x, ir.Intrinsic) and x.name == "warp.lane" for x in ir.subexpressions(test.cond))
    assert isinstance(fast.cond, ir.Compare) and isinstance(fast.cond.right, ir.Var)
    stop_name = fast.cond.right.name
    rng = random.Random(3)
    held = 0
    for _ in range(4000):
        lane, c = rng.randrange(0, 32), rng.choice([0, 1, 31, 32, 33, 768, rng.randrange(0, 2000), 2**31 - 1])
        length = rng.choice([c, c - 1, c + 1, 0, 700, rng.randrange(0, 2000)])
        env = {"warp.lane": lane, "C": c, stop_name: c, "len x": length}
        if _eval(test.cond, env):
            held += 1
            assert all(0 <= i < length for i in range(lane, c, 32)), env
    assert held > 500, held


HINTED = """
import oxide as ox
from oxide import MutSlice, Slice, f32, i32


@ox.kernel
def hinted_rows(A: Slice[f32], out: MutSlice[f32], NY: i32, r: i32) -> None:
    for j in range(NY):
        with ox.unsafe():
            ox.cache.store(out, j, ox.cache.load(A, r * NY + j, "cs"), "cs")
"""


def test_a_loop_of_cache_hinted_accesses_is_versioned_like_indexing(tmp_path: Path) -> None:
    """``ox.cache.load(A, r * NY + j, "cs")`` and ``ox.cache.store(out, j, v, "cs")`` are checked
    like ``A[r * NY + j]`` and ``out[j]``: the fast copy has neither check, the other both."""
    (fn,) = _program(tmp_path, HINTED).functions
    test = _versioned(fn)
    fast, slow = test.then[0], test.orelse[0]
    assert isinstance(fast, ir.While) and isinstance(slow, ir.While)

    def hinted(loop: ir.While) -> list[ir.Intrinsic]:
        return [x for s in ir.statements(loop.body) for root in ir.statement_roots(s) for x in ir.subexpressions(root)
                if isinstance(x, ir.Intrinsic) and x.name.startswith("cache.")]
    assert len(hinted(fast)) == 2 and all(x.check_site is None for x in hinted(fast))
    assert len(hinted(slow)) == 2 and all(x.check_site is not None for x in hinted(slow))


DERIVED = """
import oxide as ox
from oxide import MutSlice, Slice, f32, i32


@ox.kernel
def columns_of(A: Slice[f32], out: MutSlice[f32], K: i32, col0: i32, step: i32, a0: i32) -> None:
    col = col0
    for j in range(K):
        with ox.unsafe():
            out[col] = A[a0 + j]
        col += step
        with ox.unsafe():
            out[col] = 1.0
"""


def test_a_derived_induction_variable_is_versioned_soundly(tmp_path: Path) -> None:
    """``col += step`` once a trip (im2col's column pointer): at trip j the index is col's value
    at the loop's entry plus j increments (j + 1 after the increment), so the test before the
    loop covers ``out[col]`` on both sides of it; evaluated with the machine's i32 wrapping, it
    holds only when every index the loop takes is inside ``out`` (and ``A``)."""
    (fn,) = _program(tmp_path, DERIVED).functions
    test = _versioned(fn)
    fast = test.then[0]
    assert isinstance(fast, ir.While)
    accesses = [s for s in ir.statements(fast.body) if isinstance(s, ir.Store)]
    accesses += [x for s in ir.statements(fast.body) for r in ir.statement_roots(s) for x in ir.subexpressions(r)
                 if isinstance(x, ir.ViewLoad)]
    assert len(accesses) == 3 and all(a.check_site is None for a in accesses)
    assert isinstance(fast.cond, ir.Compare) and isinstance(fast.cond.right, ir.Var)
    stop_name = fast.cond.right.name
    rng = random.Random(27)
    held = 0
    for trial in range(6000):
        k = rng.choice([0, 1, 2, 5, 17, rng.randrange(0, 40)])
        step = rng.choice([0, 1, -1, 3, -7, 16, 2**30, -(2**31), 2**31 - 1, rng.randrange(-50, 50)])
        col0 = rng.choice([0, 1, 5, 100, 2**31 - 1, -(2**31), rng.randrange(-20, 400)])
        length = rng.choice([0, 1, 64, 400, 2**31, rng.randrange(0, 500)])
        a0 = rng.choice([0, 3, -1, rng.randrange(-5, 50)])
        env = {"K": k, stop_name: k, "col": col0, "col0": col0, "step": step, "a0": a0,
               "len out": length, "len A": rng.choice([40, 60, 2**31])}
        if _eval(test.cond, env):
            held += 1
            col = col0
            for j in range(k):  # the machine's values, step by step
                assert 0 <= col < length and 0 <= _wrap(a0 + j, I32) < env["len A"], env
                col = _wrap(col + step, I32)
                assert 0 <= col < length, env
    assert held > 300, held
