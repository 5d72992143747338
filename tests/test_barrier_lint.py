"""The mbarrier lint (oxide_build/passes/mbarrier_lint.py) on the CPU: each misuse of
``ox.mbarrier`` the IR shows is a located error naming the call and the line of the call it
relates to, and the correct ways of setting barriers up (every kernel of the repository that
uses them among them) compile."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir

ROOT = Path(__file__).resolve().parents[1]
HEADER = "import oxide as ox\nfrom oxide import Slice, MutSlice, f32, i32, thread, block\n"
SM90A = CompileOptions(archs=("sm_90a",))


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


# ---- used before it is initialized ------------------------------------------------------------

def test_a_barrier_that_is_never_initialized(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(2)
        block.sync()
        ox.mbarrier.arrive(bars[1])
    """)
    assert ("kern.py:8:5: error: ox.mbarrier.arrive() uses the barrier array 'bars' (declared at line 6), "
            "which is never initialized") in text, text
    assert "hint: call ox.mbarrier.init(bars[k], count) for each barrier in one thread" in text


def test_a_barrier_used_before_its_init(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(2)
        ox.mbarrier.wait(bars[1], 0)
        if thread.idx.x == 0:
            ox.mbarrier.init(bars[1], 1)
    """)
    assert ("kern.py:7:5: error: ox.mbarrier.wait() uses the barrier array 'bars' (declared at line 6) before it is "
            "initialized: its ox.mbarrier.init() is at line 9, after this call") in text, text


# ---- initialized in one thread, used by others without a sync ---------------------------------

def test_an_init_in_one_thread_used_by_all_without_block_sync(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(src: ox.tma.Descriptor[f32, 2]) -> None:
        tile = ox.shared.array((16, 32), f32)
        bars = ox.mbarrier.array(1)
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """)
    # the thread that initialized it may use it (line 12-13); every thread waiting may not
    assert ("kern.py:14:5: error: ox.mbarrier.wait() uses the barrier array 'bars', which the ox.mbarrier.init() at "
            "line 9 initialized in only some threads, with no block.sync() between them") in text, text
    assert "call block.sync() where every thread of the block reaches it" in text


def test_a_producer_warpgroup_using_thread_zeros_barriers_without_a_sync(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(n: i32) -> None:
        full = ox.mbarrier.array(4)
        if thread.idx.x == 0:
            for s in range(4):
                ox.mbarrier.init(full[s], 1)
            ox.mbarrier.fence_init()
        if ox.warpgroup.id() == 1:
            ox.mbarrier.wait(full[n % 4], 0)
    """)
    assert ("kern.py:12:9: error: ox.mbarrier.wait() uses the barrier array 'full', which the ox.mbarrier.init() at "
            "line 9 initialized in only some threads") in text, text


def test_each_path_needs_its_sync(tmp_path: Path) -> None:
    """A sync on one branch does not publish the init for the other."""
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(1)
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 32)
        if n > 4:
            block.sync()
        ox.mbarrier.arrive(bars)
    """)
    assert "kern.py:11:5: error: ox.mbarrier.arrive() uses the barrier array 'bars', which the ox.mbarrier.init() " \
           "at line 8 initialized in only some threads" in text, text


# ---- TMA: the init fence, the expected bytes --------------------------------------------------

def test_a_tma_load_on_a_barrier_initialized_without_the_fence(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(src: ox.tma.Descriptor[f32, 2]) -> None:
        tile = ox.shared.array((16, 32), f32)
        bars = ox.mbarrier.array(1)
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
        block.sync()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """)
    assert ("kern.py:13:9: error: ox.tma.load() counts its bytes on the barrier array 'bars', initialized at line 9 "
            "with no ox.mbarrier.fence_init() since: the TMA unit may see the barrier before its initialization"
            ) in text, text
    assert "hint: call ox.mbarrier.fence_init() after the inits" in text


def test_a_tma_load_on_a_barrier_no_expect_tx_names(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(src: ox.tma.Descriptor[f32, 2]) -> None:
        tile = ox.shared.array((16, 32), f32)
        bars = ox.mbarrier.array(1)
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        block.sync()
        if thread.idx.x == 0:
            ox.mbarrier.arrive(bars)
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """)
    assert ("kern.py:14:9: error: ox.tma.load() counts its bytes on the barrier array 'bars' (declared at line 7), "
            "which no ox.mbarrier.arrive_expect_tx() or expect_tx() in k() names: the barrier's phase does not wait "
            "for the box to land") in text, text
    assert "ox.mbarrier.arrive_expect_tx(bars[k], ox.tma.box_bytes(desc))" in text


# ---- init inside a loop -----------------------------------------------------------------------

def test_the_same_barrier_initialized_on_every_trip(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(4)
        t = thread.idx.x
        for it in range(n):
            if t == 0:
                ox.mbarrier.init(bars[2], 1)
                ox.mbarrier.fence_init()
            block.sync()
            ox.mbarrier.arrive(bars[2])
            ox.mbarrier.wait(bars[2], 0)
    """)
    assert ("kern.py:10:13: error: ox.mbarrier.init() of the barrier array 'bars' inside the loop at line 8 "
            "initializes the same barrier on every trip, with no ox.mbarrier.inval of it in the loop") in text, text
    assert "ox.mbarrier.inval(bar) it once every thread is done with it" in text


LOOP_INITS_THAT_ARE_FINE = {
    "one barrier per trip": """
        if thread.idx.x == 0:
            for s in range(4):
                ox.mbarrier.init(bars[s], 1)
            ox.mbarrier.fence_init()
        block.sync()
        ox.mbarrier.arrive(bars[n % 4])
    """,
    "first trip only": """
        for it in range(n):
            if it == 0 and thread.idx.x == 0:
                ox.mbarrier.init(bars[2], 1)
                ox.mbarrier.fence_init()
            block.sync()
            ox.mbarrier.arrive(bars[2])
            ox.mbarrier.wait(bars[2], it % 2)
    """,
    "invalidated before the next init": """
        for it in range(n):
            if thread.idx.x == 0:
                ox.mbarrier.init(bars[2], 1)
                ox.mbarrier.fence_init()
            block.sync()
            ox.mbarrier.arrive(bars[2])
            ox.mbarrier.wait(bars[2], 0)
            block.sync()
            if thread.idx.x == 0:
                ox.mbarrier.inval(bars[2])
    """,
    "a loop of one trip": """
        for it in range(1):
            if thread.idx.x == 0:
                ox.mbarrier.init(bars[0], 1)
        block.sync()
        ox.mbarrier.arrive(bars[0])
    """,
}


@pytest.mark.parametrize("body", LOOP_INITS_THAT_ARE_FINE.values(), ids=LOOP_INITS_THAT_ARE_FINE.keys())
def test_inits_in_loops_that_do_not_reinitialize_a_live_barrier_compile(tmp_path: Path, body: str) -> None:
    compiles(tmp_path, textwrap.dedent("""
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(4)
    """) + textwrap.indent(textwrap.dedent(body), "    "))


# ---- what the typing refuses already, at the call ---------------------------------------------

@pytest.mark.parametrize("call, message", [
    ("ox.mbarrier.wait(bars[0], 2)", "kern.py:7:31: error: the phase parity is 0 or 1, got 2"),
    ("ox.mbarrier.wait(bars[0], 0.5)", "kern.py:7:31: error: the phase parity must be an integer (0 or 1), got f64"),
    ("ox.mbarrier.try_wait(bars[0], 3)", "kern.py:7:35: error: the phase parity is 0 or 1, got 3"),
    ("ox.mbarrier.init(bars[0], 0)", "kern.py:7:31: error: the arrival count is from 1 to 2**20 - 1, got 0"),
    ("ox.mbarrier.init(bars[0], -4)", "kern.py:7:31: error: the arrival count is from 1 to 2**20 - 1, got -4"),
])
def test_a_constant_phase_or_count_out_of_range_is_refused_by_the_typing(tmp_path: Path, call: str, message: str) -> None:
    text = compile_error(tmp_path, f"""
    @ox.kernel
    def k(n: i32) -> None:
        bars = ox.mbarrier.array(2)
        {call}
    """)
    assert message in text, text


# ---- correct setups compile -------------------------------------------------------------------

CORRECT_SETUPS = {
    "one thread does it all": """
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
            ox.mbarrier.wait(bars, 0)
        block.sync()
    """,
    "the same condition again": """
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        if thread.idx.x == 0:
            ox.mbarrier.expect_tx(bars, ox.tma.box_bytes(src))
            ox.mbarrier.arrive(bars)
            ox.tma.load(src, bars, tile, 0, 0)
        block.sync()
    """,
    "the same condition through a local": """
        t = thread.idx.x
        if t == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
            ox.mbarrier.wait(bars, 0)
        block.sync()
    """,
    "every thread initializes": """
        ox.mbarrier.init(bars, 1)
        ox.fence.proxy_async()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """,
    "published by a cluster sync": """
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        ox.cluster.sync()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """,
    "published by a named barrier in inline PTX": """
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        with ox.unsafe():
            ox.asm("bar.sync 1, 128;", memory=True)
        ox.mbarrier.arrive(bars)
    """,
    "published through a device function that syncs": """
        if thread.idx.x == 0:
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
        publish()
        ox.mbarrier.arrive(bars)
    """,
    "initialized by a device function": """
        setup(bars)
        block.sync()
        if thread.idx.x == 0:
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)
        ox.mbarrier.wait(bars, 0)
    """,
}

HELPERS = """
def publish() -> None:
    block.sync()


def setup(bars: MutSlice[ox.u64]) -> None:
    if thread.idx.x == 0:
        ox.mbarrier.init(bars, 1)
        ox.mbarrier.fence_init()
"""


@pytest.mark.parametrize("body", CORRECT_SETUPS.values(), ids=CORRECT_SETUPS.keys())
def test_correct_setups_compile(tmp_path: Path, body: str) -> None:
    compiles(tmp_path, HELPERS + textwrap.dedent("""
    @ox.kernel
    def k(src: ox.tma.Descriptor[f32, 2]) -> None:
        tile = ox.shared.array((16, 32), f32)
        bars = ox.mbarrier.array(1)
    """) + textwrap.indent(textwrap.dedent(body), "    "))


@pytest.mark.parametrize("path", [
    "examples/gemm/wgmma_gemm.py", "examples/gemm/wgmma_gemm_fp8.py", "examples/gemm/wgmma_gemm_tf32.py",
    "examples/gemm/wgmma_cpasync_gemm.py",
    "tests/packages/tma/tmak.py",
])
def test_the_kernels_of_the_repository_that_use_barriers_compile(path: str) -> None:
    _, frontend = build_ir(ROOT / path, "m", SM90A)
    assert any(fn.is_kernel for fn in frontend.program.functions)
