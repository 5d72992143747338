"""ox.mma.stmatrix on the CPU (issue #18, sm_90): the PTX each backend makes for .x1/.x2/.x4,
plain and .trans, from local arrays and fragments; the registers stay registers; the arch it
needs (a located error on sm_80); the bounds check of this lane's row; and every misuse a
located compile error. tests/test_stmatrix_gpu.py checks where the elements land on a GPU."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import ArchRequirementError, CompileOptions, compile_module

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "packages" / "stmatrixkernels" / "stk.py"
HEADER = ("import oxide as ox\n"
          "from oxide import Slice, MutSlice, bf16, f16, f32, f8e4m3, i32, thread, block\n")

STORES = """
@ox.kernel
def k(x: Slice[ELEM], out: MutSlice[ELEM]) -> None:
    sm = ox.shared.array(1024, ELEM)
    lane = thread.idx.x
    fa = ox.mma.fragment_a("m16n8k16", ELEM)
    fb = ox.mma.fragment_b("m16n8k16", ELEM, 2)
    one = ox.local.array(2, ELEM)
    for e in ox.static_range(8):
        fa[e] = x[lane * 8 + e]
    for e in ox.static_range(4):
        fb[0, e] = x[lane + e]
        fb[1, e] = x[lane + 4 + e]
    one[0] = x[lane]
    one[1] = x[lane + 32]
    ox.mma.stmatrix(fa, sm, (lane % 16) * 16 + 8 * (lane // 16))
    ox.mma.stmatrix(fb[0], sm, 256 + (lane % 16) * 8, trans=True)
    ox.mma.stmatrix(fb[0], fb[1], sm, 512 + lane * 8)
    ox.mma.stmatrix(one, sm, 768 + (lane % 8) * 8)
    ox.mma.stmatrix(one, sm, 896 + (lane % 8) * 8, trans=True)
    block.sync()
    with ox.unsafe():
        for i in range(lane, 1024, 32):
            out[i] = sm[i]
"""


def compile_src(tmp_path: Path, body: str, backend: str = "nvptx", archs: tuple[str, ...] = ("sm_90",),
                bounds_check: bool = True) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "kern", CompileOptions(archs=archs, backend=backend, cache=False,
                                                         bounds_check=bounds_check))
    assert set(compiled.cubins) == set(archs)  # ptxas accepted the PTX
    return compiled.ptx[archs[0]]


def stmatrix_lines(ptx: str) -> list[str]:
    return [line.strip() for line in ptx.splitlines() if line.strip().startswith("stmatrix")]


@pytest.mark.parametrize("elem, backend", [("bf16", "nvptx"), ("f16", "nvptx"), ("f16", "nvvm")])
def test_stmatrix_ptx(tmp_path: Path, elem: str, backend: str) -> None:
    ptx = compile_src(tmp_path, STORES.replace("ELEM", elem), backend)
    lines = stmatrix_lines(ptx)
    reg = r"%r\d+"
    forms = [("x4", "", 4), ("x2.trans", "", 2), ("x4", "", 4), ("x1", "", 1), ("x1.trans", "", 1)]
    # the rows' checks hold for blocks of at most so many threads: the kernel is launch-versioned on
    # block.dim.x (bounds_elimination.py), each copy with the five stores
    copies = 2
    assert len(lines) == copies * len(forms), lines
    for line, (form, _, n) in zip(lines, forms * copies):
        regs = ", ".join([reg] * n)
        assert re.fullmatch(rf"stmatrix\.sync\.aligned\.m8n8\.{re.escape(form)}\.shared\.b16 "
                            rf"\[%r(d)?\d+(\+\d+)?\], \{{{regs}\}};", line), (form, line)
    # the registers are registers: no local memory
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_stmatrix_fixtures_compile_for_sm_90() -> None:
    ptx = compile_module(KERNELS, "stk", CompileOptions(archs=("sm_90",), cache=False)).ptx["sm_90"]
    forms = {line.split(" [")[0] for line in stmatrix_lines(ptx)}
    assert forms == {f"stmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16" for n in (1, 2, 4) for t in ("", ".trans")}


def test_stmatrix_needs_sm_90(tmp_path: Path) -> None:
    with pytest.raises(ArchRequirementError) as info:
        compile_src(tmp_path, STORES.replace("ELEM", "f16"), archs=("sm_80",))
    message = str(info.value)
    assert "ox.mma.stmatrix needs sm_90 or newer; this module is built for sm_80" in message
    assert "kern.py:18:5:" in message and "ox.mma.stmatrix(fa, sm," in message


def test_stmatrix_rows_are_bounds_checked(tmp_path: Path) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(STORES.replace("ELEM", "f16")))
    checked = compile_module(src, "kern", CompileOptions(archs=("sm_90",), cache=False, link_cubins=False))
    whats = [s.what for s in checked.error_sites if s.kind == "bounds"]
    # lane % 16 * 16 + 8 * (lane // 16) + 7 <= 240 + 504 + 7 < 1024 for lane < 1024: proven, no check
    assert "stmatrix row sm[lane % 16 * 16 + 8 * (lane // 16) : +8]" not in whats
    assert "stmatrix row sm[512 + lane * 8 : +8]" in whats
    unchecked = compile_module(src, "kern", CompileOptions(archs=("sm_90",), cache=False, link_cubins=False,
                                                            bounds_check=False))
    assert not [s for s in unchecked.error_sites if s.kind == "bounds"]


MISUSE = """
@ox.kernel
def k(x: Slice[f16], out: MutSlice[f32]) -> None:
    sm = ox.shared.array(512, f16)
    s8 = ox.shared.array(512, f8e4m3)
    s32 = ox.shared.array(512, f32)
    lane = thread.idx.x
    acc = ox.mma.fragment_c("m16n8k16")
    fb = ox.mma.fragment_b("m16n8k16", f16, 2)
    three = ox.local.array(6, f16)
    eight = ox.local.array(8, f8e4m3)
    fa = ox.mma.fragment_a("m16n8k16", f16)
    BODY
"""


@pytest.mark.parametrize("body, message", [
    ("ox.mma.stmatrix(acc, sm, lane * 8)",
     "stmatrix stores fragments of 16-bit elements (f16, bf16) or 8-bit ones (f8e4m3, f8e5m2), got"),
    ("ox.mma.stmatrix(three, sm, lane * 8)",
     "stmatrix stores 1, 2 or 4 8x8 matrices (one 32-bit register each per lane); these fragments take 3"),
    ("ox.mma.stmatrix(fa, fb[0], sm, lane * 8)", "these fragments take 6"),
    ("ox.mma.stmatrix(eight, s8, lane * 16, trans=True)",
     "stmatrix trans=True transposes 16-bit elements, so it cannot transpose f8e4m3 values"),
    ("ox.mma.stmatrix(fa, s32, lane * 4)", "stmatrix writes a shared array of 16-bit or 8-bit elements, got"),
    ("ox.mma.stmatrix(fa, x, lane * 8)", "stmatrix writes a shared array of 16-bit or 8-bit elements, got"),
    ("ox.mma.stmatrix(fa, sm, 0.5)", "the stmatrix index must be an integer"),
    ("ox.mma.stmatrix(fa, sm, lane * 8, trans=lane > 0)", "mma.stmatrix() takes one keyword, trans=True or trans=False"),
    ("ox.mma.stmatrix(fa, sm)", "mma.stmatrix(src, ..., smem, index) takes the fragments to store"),
    ("ox.mma.stmatrix(fb, sm, lane * 8)", "fb holds 2 fragments: pick one, fb[i]"),
    ("ox.mma.stmatrix(fb[lane], sm, lane * 8)", "fb holds 2 fragments: the index must be a compile-time integer"),
])
def test_stmatrix_misuse_is_a_located_error(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(CompileError) as exc:
        compile_src(tmp_path, MISUSE.replace("BODY", body))
    err = exc.value
    assert message in str(err), str(err)
    assert err.location is not None and "ox.mma.stmatrix(" in err.location.source_line


def test_an_f32_accumulator_gets_a_hint_to_convert(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as exc:
        compile_src(tmp_path, MISUSE.replace("BODY", "ox.mma.stmatrix(acc, sm, lane * 8)"))
    assert "convert the f32 values to f16 or bf16" in str(exc.value)


def test_a_float_ldmatrix_index_is_an_error_too(tmp_path: Path) -> None:
    """ldmatrix shares stmatrix's argument checks: a float row start is refused, not truncated."""
    with pytest.raises(CompileError) as exc:
        compile_src(tmp_path, MISUSE.replace("BODY", "ox.mma.ldmatrix(fa, sm, 0.5)"))
    assert "the ldmatrix index must be an integer, got f" in str(exc.value)
    assert exc.value.location is not None and "ox.mma.ldmatrix(" in exc.value.location.source_line
