"""The warpgroup-uniform divergence rule (oxide_build/passes/warpgroup_divergence.py, the levels of
oxide_build/passes/uniformity.py) on the CPU: ``ox.wgmma.*`` and ``setmaxnreg`` under a condition
that is the same across each warpgroup compile (warp specialization), under one that differs
within a warpgroup they are a located error naming the call and the condition's line; and
``block.sync()`` keeps its stricter rule."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir
from oxide_build.passes.uniformity import Uniformity, program_uniformity

ROOT = Path(__file__).resolve().parents[1]
HEADER = "import oxide as ox\nfrom oxide import Slice, MutSlice, f16, f32, i32, thread, block\n"
SM90A = CompileOptions(archs=("sm_90a",))
HINT = ("branch on values that are the same in a whole warpgroup (ox.warpgroup.id(), thread.idx.x // 128, "
        "thread.idx.x < 128 * k, block and launch values), or move the call out of the branch")


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern", SM90A)
    return str(info.value)


def compiles(tmp_path: Path, body: str) -> None:
    _, frontend = build_ir(source(tmp_path, body), "kern", SM90A)
    assert [fn.python_name for fn in frontend.program.functions if fn.is_kernel] == ["k"]


def kernel_with(condition: str) -> str:
    """A kernel whose wgmma calls stand under ``if <condition>:`` (line 9 the `if`, 10 the fence)."""
    return f"""
    @ox.kernel(launch_bounds=384, max_registers=168)
    def k(c: MutSlice[f32], n: i32) -> None:
        sa = ox.shared.array(4096, f16, swizzle=128)
        acc = ox.wgmma.accumulator("m64n128k16")
        tid = thread.idx.x
        if {condition}:
            ox.wgmma.fence()
            ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
            ox.wgmma.commit_group()
            ox.wgmma.wait_group(0, acc)
            ox.warpgroup.setmaxnreg_inc(232)
    """


UNIFORM_ACROSS_A_WARPGROUP = [
    "ox.warpgroup.id() == 1",
    "ox.warpgroup.id() != 0 and n > 3",
    "tid // 128 == 2",
    "thread.idx.x // 256 == 0",
    "tid >> 7 == 1",
    "tid < 128",
    "tid >= 256",
    "tid <= 127",
    "128 > thread.idx.x",
    "ox.warp.id() // 4 == 1",
    "ox.warp.id() < 8",
    "(ox.warpgroup.id() - 1) * 64 < n",
    "block.idx.x % 2 == 0",
    "n > 0",
    "thread.idx.y == 0",
    "c[block.idx.x] > 0.0",  # memory at a block-uniform address
    "block.sync_or(tid == 3)",  # the block's answer
    "ox.math.sqrt(f32(ox.warpgroup.id())) > 1.0",
]


@pytest.mark.parametrize("condition", UNIFORM_ACROSS_A_WARPGROUP)
def test_warpgroup_collectives_under_a_warpgroup_uniform_condition_compile(tmp_path: Path, condition: str) -> None:
    compiles(tmp_path, kernel_with(condition))


DIFFERING_WITHIN_A_WARPGROUP = [
    "thread.idx.x % 128 < 64",
    "tid < 64",
    "tid <= 128",
    "tid == 0",
    "tid // 64 == 1",
    "ox.warp.lane() == 0",
    "ox.warp.id() < 2",
    "ox.warp.id() == 4",
    "thread.index_1d() < n",
    "c[thread.idx.x] > 0.0",  # memory at a lane-dependent address
    "ox.warp.any(tid == 5)",  # true in warp 0 only
]


@pytest.mark.parametrize("condition", DIFFERING_WITHIN_A_WARPGROUP)
def test_warpgroup_collectives_under_a_lane_dependent_condition_are_refused(tmp_path: Path, condition: str) -> None:
    text = compile_error(tmp_path, kernel_with(condition))
    assert ("kern.py:10:9: error: ox.wgmma.fence() is warpgroup-collective: all 128 threads of a warpgroup must "
            "reach it together, and this call is under a condition that differs within a warpgroup (line 9)") in text, text
    assert f"hint: {HINT}" in text


def test_setmaxnreg_is_warpgroup_collective_too(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel(launch_bounds=384, max_registers=168)
    def k(c: MutSlice[f32]) -> None:
        if ox.warpgroup.id() == 0:
            ox.warpgroup.setmaxnreg_dec(40)
        elif thread.idx.x % 2 == 0:
            ox.warpgroup.setmaxnreg_inc(232)
    """)
    assert ("kern.py:9:9: error: ox.warpgroup.setmaxnreg_inc() is warpgroup-collective: all 128 threads of a "
            "warpgroup must reach it together, and this call is under a condition that differs within a warpgroup "
            "(line 8)") in text, text


def test_a_loop_whose_condition_differs_within_a_warpgroup(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        acc = ox.wgmma.accumulator("m64n128k16")
        for i in range(thread.idx.x, n, 128):
            ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)
    """)
    assert "kern.py:8:9: error: ox.wgmma.commit_group() is warpgroup-collective" in text, text
    assert "under a condition that differs within a warpgroup (line 7)" in text


@pytest.mark.parametrize("exit, line", [("return", 7), ("break", 9), ("continue", 9)])
def test_an_early_exit_taken_by_part_of_a_warpgroup(tmp_path: Path, exit: str, line: int) -> None:
    loop = exit != "return"
    body = f"""
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        acc = ox.wgmma.accumulator("m64n128k16")
        {"for i in range(n):" if loop else "if n > 0:"}
            if ox.warp.lane() == 3:
                {exit}
            ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)
    """
    text = compile_error(tmp_path, body)
    assert (f"kern.py:10:9: error: ox.wgmma.commit_group() is warpgroup-collective: all 128 threads of a warpgroup "
            f"must reach it together, and this call is reached after a `{exit}` that part of a warpgroup takes (under "
            f"the condition at line 8, which differs within a warpgroup)") in text, text
    del line


def test_an_early_exit_under_a_warpgroup_uniform_condition_compiles(tmp_path: Path) -> None:
    compiles(tmp_path, """
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        acc = ox.wgmma.accumulator("m64n128k16")
        if ox.warpgroup.id() == 0:
            return
        for i in range(n):
            if i == 5:
                break
            ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)
    """)


DEVICE_FUNCTIONS = """
def consume(wg: i32) -> None:
    if wg == 1:
        ox.wgmma.commit_group()


def issue() -> None:
    ox.wgmma.fence()
"""


def test_a_call_that_reaches_wgmma_under_a_lane_dependent_condition(tmp_path: Path) -> None:
    text = compile_error(tmp_path, DEVICE_FUNCTIONS + textwrap.dedent("""
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        if ox.warp.lane() < 16:
            issue()
    """))
    assert ("kern.py:15:9: error: issue() reaches ox.wgmma.fence() (at kern.py:10:5), which is warpgroup-collective, "
            "and this call is under a condition that differs within a warpgroup (line 14)") in text, text
    assert "hint: call issue() where all threads of the warpgroup call it" in text


def test_a_lane_dependent_argument_makes_the_callees_branch_differ(tmp_path: Path) -> None:
    text = compile_error(tmp_path, DEVICE_FUNCTIONS + textwrap.dedent("""
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        consume(thread.idx.x % 4)
    """))
    assert ("kern.py:6:9: error: ox.wgmma.commit_group() is warpgroup-collective: all 128 threads of a warpgroup must "
            "reach it together, and this call is under a condition that differs within a warpgroup (line 5)") in text, text


def test_calls_under_warpgroup_uniform_conditions_compile(tmp_path: Path) -> None:
    compiles(tmp_path, DEVICE_FUNCTIONS + textwrap.dedent("""
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        wg = ox.warpgroup.id()
        if wg > 0:
            issue()
        consume(wg)
        consume(thread.idx.x // 128)
    """))


def test_block_sync_keeps_the_stricter_rule(tmp_path: Path) -> None:
    """A warpgroup-uniform condition still splits the block: block.sync() under it deadlocks."""
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(c: MutSlice[f32]) -> None:
        if ox.warpgroup.id() == 0:
            block.sync()
    """)
    assert "kern.py:7:9: error: block.sync() under a condition that differs between threads can deadlock the block" in text


@pytest.mark.parametrize("path", [
    "examples/gemm/wgmma_gemm.py", "examples/gemm/wgmma_gemm_fp8.py", "examples/gemm/wgmma_gemm_tf32.py",
    "examples/gemm/wgmma_cpasync_gemm.py",
    "tests/packages/wgmmakernels/wgk.py",
])
def test_the_warp_specialized_kernels_of_the_repository_compile(path: str) -> None:
    """They branch on `wg == 0` around setmaxnreg and wgmma (the producer / consumer split)."""
    _, frontend = build_ir(ROOT / path, "m", SM90A)
    assert any(fn.is_kernel for fn in frontend.program.functions)


def test_the_levels_of_the_gemms_locals(tmp_path: Path) -> None:
    _, frontend = build_ir(ROOT / "examples/gemm/wgmma_gemm.py", "m", SM90A)
    levels = program_uniformity(frontend.program)
    kernel = next(fn for fn in frontend.program.functions if fn.is_kernel)
    local = levels.functions[kernel.symbol].levels
    assert local.get("tiles", Uniformity.BLOCK) == Uniformity.BLOCK
    assert local["wg"] == local["half"] == Uniformity.WARPGROUP
    assert local["tid"] == local["lane"] == local["c_row"] == Uniformity.LANE
