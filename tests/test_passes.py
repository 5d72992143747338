"""The pass pipeline: its order, print-after-pass, verification after each pass, and each pass
on IR text (no llvmlite needed)."""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.cli import main
from oxide_build.compile import build_ir
from oxide_build.ir import nodes as ir
from oxide_build.ir.printer import print_function, print_program
from oxide_build.passes import PIPELINE, pass_names, run_pipeline

HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, i64, thread, block\n"


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def test_the_pipeline_is_one_visible_list_of_named_passes() -> None:
    assert pass_names() == [p.name for p in PIPELINE] == [
        "arch-requirements", "bounds-elimination", "launch-instances", "launch-preconditions", "disjoint-launch-shape",
        "barrier-divergence",
        "warpgroup-divergence", "mbarrier-lint", "shared-memory-limit", "wgmma-order", "wgmma-fence",
        "check-versioning", "fma-contraction", "constant-loop-unroll", "run-versioning", "canonicalize", "fp8-archs"]
    assert len(set(pass_names())) == len(PIPELINE)


# ---- bounds elimination ---------------------------------------------------------------------

def test_the_frontend_checks_every_access_and_the_pass_drops_the_proven_ones(tmp_path: Path) -> None:
    src = source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = x[i] + x[n]
    """)
    from oxide_build.frontend import build_program
    from oxide_build.scan import ProjectIndex

    index = ProjectIndex(tmp_path)
    frontend = build_program(index, index.add_file(src, "kern"))
    assert print_program(frontend.program).splitlines()[3] == "    out[i]!3 = (x[i]!1 + x[n]!2)"
    after = run_pipeline(frontend.program, passes=PIPELINE[1:2])  # bounds elimination
    assert print_program(after).splitlines()[3] == "    out[i] = (x[i] + x[n]!1)"
    # the sites left are numbered in order, in the program and in the frontend's result
    assert [(s.id, s.what) for s in frontend.error_sites] == [(1, "x[n]")] == [
        (s.id, s.what) for s in after.error_sites]


def test_facts_end_with_their_block_and_a_range_guard_stays_only_when_used(tmp_path: Path) -> None:
    body = """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32], n: ox.i32) -> None:
        for r in range(n):
            with ox.unsafe():
                assert r < len(x)
                out[r] = x[r]
            y = x[r]       # the assert's fact ended with the with-block
    """
    lines = print_program(build_ir(source(tmp_path, body), "kern")[1].program).splitlines()
    assert "y: f32 = x[r]!3" in [line.strip() for line in lines]  # (the checked copy of check-versioning's two)
    assert not any(line.lstrip().startswith("check ((i64($stop") for line in lines)  # no proof used r's range
    guarded = """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32], n: ox.i32) -> None:
        assert n <= len(x)
        for r in range(0, n, 2):
            y = x[r]  # proven from 0 <= r < n and n <= len(x)
    """
    lines = print_program(build_ir(source(tmp_path, guarded), "kern")[1].program).splitlines()
    assert "    y: f32 = x[r]" in lines
    # the proof relied on r < n, which holds only if r + 1 cannot wrap: the entry check stays
    assert "  check ((i64($stop1) + i64($step2)) <= 2147483648:i64)!2" in lines


def test_a_proven_product_of_widened_values_is_marked_for_a_wide_multiply(tmp_path: Path) -> None:
    program = build_ir(source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], rows: ox.i32, cols: ox.i32) -> None:
        i = thread.index_1d()
        r = ox.i32(block.idx.x)
        if r < rows and cols > 0 and i < len(out):
            out[i] = x[i64(r) * i64(cols)]
    """), "kern")[1].program
    products = [e for s in program.functions[0].body for e in _all_expressions(s)
                if isinstance(e, ir.BinOp) and e.op == "*"]
    assert products and all(isinstance(side, ir.Cast) and side.nonneg for side in (products[0].left, products[0].right))


def _all_expressions(s: ir.Stmt) -> list[ir.Expr]:
    from oxide_build.passes.bounds_elimination import _expressions

    return list(_expressions([s]))


# ---- launch preconditions -----------------------------------------------------------------

def test_leading_asserts_on_the_launch_move_to_the_runtime(tmp_path: Path) -> None:
    src = source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
        half = n + 2
        assert len(x) == len(out), "x and out differ"
        assert n > 0
        assert half < 100
        i = thread.index_1d()
        assert len(x) > 1
        if i < len(out):
            out[i] = x[i]
    """)
    from oxide_build.frontend import build_program
    from oxide_build.scan import ProjectIndex

    index = ProjectIndex(tmp_path)
    before = build_program(index, index.add_file(src, "kern")).program
    assert print_program(before).splitlines()[1:6] == [
        "  half: i64 = (n + 2:i64)",
        "  check (len(x) == len(out))!1  ; hoistable",
        "  check (n > 0:i64)!2  ; hoistable",
        "  check (half < 100:i64)!3  ; hoistable",  # a local: not a launch value
        "  i: ThreadIndex = index_1d()",
    ]
    # bounds elimination, the launch instances, then this pass
    after = run_pipeline(before, passes=tuple(p for p in PIPELINE if p.name in (
        "bounds-elimination", "launch-instances", "launch-preconditions")))
    text = print_program(after)
    assert "  ; precondition !1 ['eq', ['arg', 1], ['arg', 3]]" in text
    assert "  ; precondition !2 ['gt', ['arg', 4], ['const', 0]]" in text
    # a local is no launch value: that check stays on the device, and so does every later one
    assert "check (half < 100:i64)!3" in text and "check (len(x) > 1:i64)!4  ; hoistable" in text
    assert "check (n > 0" not in text
    _, frontend = build_ir(src, "kern")
    # the hoisted asserts, then the launch shape its DisjointSlice write needs (disjoint-launch-shape)
    assert [p.site for p in frontend.kernels[0].preconditions] == [1, 2, 5]


# ---- barrier divergence across calls -------------------------------------------------------

SYNCING_HELPER = """
    def stage(tile: MutSlice[f32], k: i64) -> None:
        with ox.unsafe():
            tile[k] = 0.0
        block.sync()
"""


def test_a_call_that_reaches_block_sync_under_a_thread_dependent_branch_is_an_error(tmp_path: Path) -> None:
    """It was not flagged: divergence was tracked per function."""
    text = compile_error(tmp_path, SYNCING_HELPER + """
    @ox.kernel
    def k(x: MutSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        if i < n:
            stage(x, i)
    """)
    assert "kern.py:13:9: error: stage() reaches block.sync() (at kern.py:7:5)" in text, text
    assert "condition that differs between threads" in text
    assert "call stage() where every thread of the block calls it" in text


def test_the_sync_is_found_through_a_chain_of_calls(tmp_path: Path) -> None:
    text = compile_error(tmp_path, SYNCING_HELPER + """
    def outer(t: MutSlice[f32], k: i64) -> None:
        stage(t, k)

    @ox.kernel
    def k(x: MutSlice[f32], n: i64) -> None:
        j = i64(thread.index_1d())
        while j < n:
            outer(x, j)
            j += 1024
    """)
    assert "outer() reaches block.sync() (at kern.py:7:5)" in text, text


def test_a_thread_dependent_argument_makes_the_callees_branch_divergent(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    def maybe_sync(k: i64) -> None:
        if k > 0:
            block.sync()

    @ox.kernel
    def k(x: MutSlice[f32]) -> None:
        maybe_sync(thread.index_1d())
    """)
    assert "kern.py:6:9: error: block.sync() under a condition that differs between threads" in text, text


def test_a_thread_dependent_return_value_makes_the_branch_divergent(tmp_path: Path) -> None:
    text = compile_error(tmp_path, SYNCING_HELPER + """
    def my_lane() -> i64:
        return thread.index_1d() % 32

    @ox.kernel
    def k(x: MutSlice[f32]) -> None:
        if my_lane() == 0:
            stage(x, 0)
    """)
    assert "stage() reaches block.sync()" in text, text


def test_calls_that_every_thread_makes_compile(tmp_path: Path) -> None:
    program = build_ir(source(tmp_path, SYNCING_HELPER + """
    def maybe_sync(k: i64) -> None:
        if k > 0:
            block.sync()

    @ox.kernel
    def k(x: MutSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        stage(x, i)            # a thread-dependent argument, but every thread calls
        if n > 4:              # a kernel parameter: the same for every thread
            stage(x, i)
        maybe_sync(n)
        for r in range(n):     # a loop every thread runs as often
            stage(x, r)
    """), "kern")[1].program
    assert [f.python_name for f in program.functions if f.is_kernel] == ["k"]


# ---- canonicalize --------------------------------------------------------------------------

def _canonical_body(tmp_path: Path, body: str) -> list[str]:
    """The kernel's body as printed after the whole pipeline (canonicalize runs last), without
    the launch-shape precondition its DisjointSlice write gets (tests/test_disjoint_launch_shape.py);
    of a launch-versioned kernel, the copy with its checks (the kernel as written: the
    launch-instances pass made the other copy an entry point of its own)."""
    program = build_ir(source(tmp_path, body), "kern")[1].program
    kernel = next(fn for fn in program.functions if fn.symbol == "k")
    return [line for line in print_function(kernel).splitlines()[1:] if not line.startswith("  ; ")]


def test_an_if_without_else_branches_past_its_body_on_the_negated_test(tmp_path: Path) -> None:
    assert _canonical_body(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        if i < len(out) and not n == 3:
            out[i] = x[i]
    """) == [
        "  i: ThreadIndex = index_1d()",
        "  if ((i64(i) >= len(out)) or (n == 3:i64)):",
        "    pass",
        "  else:",
        "    out[i] = x[i]!1",
    ]


def test_float_tests_and_ifs_with_else_stay_as_written(tmp_path: Path) -> None:
    # not (a < b) is not a >= b when a is NaN; an if with an else already has its two bodies
    assert _canonical_body(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        if i < len(out):
            if x[i] < 0.5:
                out[i] = x[i]
            if n > 2:
                out[i] = 1.0
            else:
                out[i] = 2.0
    """) == [
        "  i: ThreadIndex = index_1d()",
        "  if (i64(i) >= len(out)):",
        "    pass",
        "  else:",
        "    if (x[i]!1 < 0.5:f32):",
        "      out[i] = x[i]!2",
        "    if (n > 2:i64):",
        "      out[i] = 1.0:f32",
        "    else:",
        "      out[i] = 2.0:f32",
    ]


def test_the_canonical_if_lowers_to_one_branch_past_the_body(tmp_path: Path) -> None:
    from oxide_build.compile import CompileOptions, compile_module

    src = source(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32], n: i64) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = 1.0
    """)
    llvm_ir = compile_module(src, "kern", CompileOptions(archs=("sm_80",), link_cubins=False, cache=False),
                             root=tmp_path).llvm_ir
    compare = next(line for line in llvm_ir.splitlines() if "icmp" in line)
    assert "icmp sge" in compare  # i >= len(out): the test of the branch past the body
    assert any(line.strip().startswith("br i1") and "label %\"endif\", label %\"then\"" in line
               for line in llvm_ir.splitlines())


# ---- the pipeline's switches ---------------------------------------------------------------

def test_print_after_writes_the_ir_after_the_pass(tmp_path: Path) -> None:
    program = build_ir(source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = x[i]
    """), "kern")[1].program
    out = io.StringIO()
    after = run_pipeline(program, print_after="barrier-divergence", out=out)
    assert out.getvalue() == f"; IR after pass barrier-divergence\n{print_program(after)}\n"
    quiet = io.StringIO()
    run_pipeline(program, print_after="no-such-pass", out=quiet)
    assert quiet.getvalue() == ""


def test_the_command_line_prints_after_a_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = x[i] * 2.0
    """)
    assert main(["compile", str(src), "--emit", "ir", "--print-after", "all", "-o", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "; IR after pass barrier-divergence" in err and "out[i] = (x[i] * 2.0:f32)" in err


def test_the_pipeline_verifies_after_each_pass_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import dataclass

    from oxide_build.ir.types import I64, VOID
    from oxide_build.ir.verify import IRError

    @dataclass(frozen=True)
    class BreaksTheIR:
        name: str = "breaks-the-ir"

        def apply(self, program: ir.Program) -> ir.Program:
            program.functions[0].body.append(ir.Break(ir.Loc(9, 1)))
            return program

    def program() -> ir.Program:
        fn = ir.Function("k", "k", "k.py", [ir.Param("n", I64)], VOID, [], {}, True, 1)
        return ir.Program([fn])

    with pytest.raises(IRError, match="break outside a loop"):
        run_pipeline(program(), passes=(BreaksTheIR(),), verify=True)
    monkeypatch.setenv("OXIDE_VERIFY_IR", "0")
    run_pipeline(program(), passes=(BreaksTheIR(),))  # not verified: no error
