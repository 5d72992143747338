"""The wgmma fence check (oxide_build/passes/wgmma_fence.py) on the CPU: an ``ox.wgmma.mma`` with
no ``ox.wgmma.fence()`` since the kernel began, or since the threads last read or wrote its
accumulator or register A fragment, is a located error naming the access; the fences the
examples place compile."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir

ROOT = Path(__file__).resolve().parents[1]
HEADER = "import oxide as ox\nfrom oxide import Slice, MutSlice, f16, f32, i32, thread, block\n"
SM90A = CompileOptions(archs=("sm_90a",))
HINT = ("hint: call ox.wgmma.fence() before the mma (after the threads last read or write the accumulator or the A "
        "fragment)")


def kernel(body: str) -> str:
    """A kernel with a swizzled array ``sa``, an accumulator ``acc`` and ``body`` from line 9."""
    return HEADER + textwrap.dedent("""
    @ox.kernel
    def k(c: MutSlice[f32], n: i32) -> None:
        sa = ox.shared.array(4096, f16, swizzle=128)
        acc = ox.wgmma.accumulator("m64n128k16")
    """) + textwrap.indent(textwrap.dedent(body), "    ")


def compile_error(tmp_path: Path, text: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(text)
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern", SM90A)
    return str(info.value)


def compiles(tmp_path: Path, text: str) -> None:
    src = tmp_path / "kern.py"
    src.write_text(text)
    _, frontend = build_ir(src, "kern", SM90A)
    assert [fn.python_name for fn in frontend.program.functions if fn.is_kernel and not fn.fast_of] == ["k"]


def test_the_first_mma_needs_a_fence(tmp_path: Path) -> None:
    text = compile_error(tmp_path, kernel("""
    ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    """))
    assert ("kern.py:9:5: error: ox.wgmma.mma() on 'acc' with no ox.wgmma.fence() before it since k() began: the "
            "first wgmma of a warpgroup needs one") in text, text
    assert HINT in text


def test_an_accumulator_written_after_the_fence(tmp_path: Path) -> None:
    text = compile_error(tmp_path, kernel("""
    ox.wgmma.fence()
    for i in ox.static_range(64):
        acc[i] = 0.0
    ox.wgmma.mma(acc, sa, 0, sa, 16)
    """))
    assert ("kern.py:12:5: error: ox.wgmma.mma() on 'acc', which line 11 accessed with no ox.wgmma.fence() since: "
            "the tensor cores may use the registers before that access is done") in text, text


def test_an_accumulator_read_on_one_trip_and_multiplied_on_the_next(tmp_path: Path) -> None:
    text = compile_error(tmp_path, kernel("""
    ox.wgmma.fence()
    for t in range(n):
        ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=t > 0)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)
        with ox.unsafe():
            c[t] = acc[0]
    """))
    assert ("kern.py:11:9: error: ox.wgmma.mma() on 'acc', which line 15 accessed with no ox.wgmma.fence() "
            "since") in text, text


def test_a_branch_that_skips_the_fence(tmp_path: Path) -> None:
    text = compile_error(tmp_path, kernel("""
    if n > 2:
        ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    """))
    assert "kern.py:11:5: error: ox.wgmma.mma() on 'acc' with no ox.wgmma.fence() before it since k() began" in text, text


def test_a_register_a_fragment_written_after_the_fence(tmp_path: Path) -> None:
    text = compile_error(tmp_path, kernel("""
    pf = ox.mma.fragment_a("m16n8k16", f16)
    ox.wgmma.fence()
    for e in ox.static_range(8):
        pf[e] = f16(1.0)
    ox.wgmma.mma(acc, pf, sa, 0, b_major="mn", b_rows=16)
    """))
    assert "kern.py:13:5: error: ox.wgmma.mma() on 'pf', which line 12 accessed with no ox.wgmma.fence() since" in text, text


FENCED = {
    "mma after mma on one accumulator": """
        ox.wgmma.fence()
        ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
        ox.wgmma.mma(acc, sa, 16, sa, 32)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group(0, acc)
        with ox.unsafe():
            c[0] = acc[0]
    """,
    "a fence on each trip after the reads": """
        for t in range(n):
            ox.wgmma.fence()
            ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=t > 0)
            ox.wgmma.commit_group()
            ox.wgmma.wait_group(0, acc)
            with ox.unsafe():
                c[t] = acc[0]
    """,
    "zeroed, then fenced": """
        for i in ox.static_range(64):
            acc[i] = 0.0
        ox.wgmma.fence()
        ox.wgmma.mma(acc, sa, 0, sa, 16)
    """,
    "a register A packed, then fenced": """
        pf = ox.mma.fragment_a("m16n8k16", f16)
        for e in ox.static_range(8):
            pf[e] = f16(1.0)
        ox.wgmma.fence()
        ox.wgmma.mma(acc, pf, sa, 0, b_major="mn", b_rows=16, scale_d=False)
    """,
    "fenced in a device function": """
        fence_all()
        ox.wgmma.mma(acc, sa, 0, sa, 16, scale_d=False)
    """,
}


@pytest.mark.parametrize("body", FENCED.values(), ids=FENCED.keys())
def test_fenced_mmas_compile(tmp_path: Path, body: str) -> None:
    compiles(tmp_path, kernel(body) + "\n\ndef fence_all() -> None:\n    ox.wgmma.fence()\n")


@pytest.mark.parametrize("path", [
    "examples/gemm/wgmma_gemm.py", "examples/gemm/wgmma_gemm_fp8.py", "examples/gemm/wgmma_cpasync_gemm.py",
    "tests/packages/wgmmakernels/wgk.py",
])
def test_the_wgmma_kernels_of_the_repository_compile(path: str) -> None:
    _, frontend = build_ir(ROOT / path, "m", SM90A)
    assert any(fn.is_kernel for fn in frontend.program.functions)
