"""Vectors past 16 bytes and of 8 halves (issue 29 items 5 and 6): ``load4`` of an ``f64`` view is
CUDA's ``double4`` (``f64x4``, two 16-byte accesses), ``load8`` of ``f32`` an ``f32x8`` (two),
``load8`` of ``bf16``/``f16`` the "x128" idiom (one 16-byte access of 8 halves), with lane-wise
conversions ``f32x8(h)`` / ``bf16x8(v)`` and lanes ``v[k]`` chosen at compile time. The results on
the GPU: tests/test_wide_vectors_gpu.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir, compile_module

KERNELS = Path(__file__).parent / "packages" / "widevec" / "widek.py"
HEADER = ("import oxide as ox\nfrom oxide import Slice, DisjointSlice, bf16, bf16x8, f16, f32, f32x8, f64, f64x4, u8, "
          "thread\n")
HEADER_LINES = HEADER.count("\n")


def entry_ptx(ptx: str, kernel: str) -> str:
    start = ptx.index(f"{kernel}(")
    return ptx[start:ptx.index("\n}", start)]


def test_accesses_of_the_wide_vectors() -> None:
    ptx = compile_module(KERNELS, "widek", CompileOptions(archs=("sm_80", "sm_90"), cache=False),
                         root=KERNELS.parent).ptx
    for arch in ("sm_80", "sm_90"):
        d4 = entry_ptx(ptx[arch], "double4_axpy")
        assert d4.count("ld.global.nc.v2.b64") == 4 and d4.count("st.global.v2.b64") == 2, d4  # 2 x 16 bytes each
        f8 = entry_ptx(ptx[arch], "float8_scale")
        assert f8.count("ld.global.nc.v4.b32") == 2 and f8.count("st.global.v4.b32") == 2
        h8 = entry_ptx(ptx[arch], "bf16x128")
        assert h8.count("ld.global.nc.v4.b32") == 1  # 8 bf16 in one 16-byte load
        assert h8.count("cvt.rn.bf16x2.f32") == 4 and h8.count("st.global.v4.b32") == 3  # out once, widened twice


def ir_of(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    _, frontend = build_ir(src, "kern")
    from oxide_build.ir.printer import print_program

    return print_program(frontend.program)


def test_types_and_conversions(tmp_path: Path) -> None:
    text = ir_of(tmp_path, """
        @ox.kernel
        def k(x: Slice[bf16], d: Slice[f64], b: Slice[u8], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            h = x.load8(i)
            v = f32x8(h)
            back = bf16x8(v)
            q = d.load4(i)
            p0, p1, p2, p3, p4, p5, p6, p7 = b.load8(i)
            out[i] = v[7] + f32(back[0]) + f32(q.w) + f32(q[1]) + f32(p7)
        """)
    assert "h: bf16x8 = view.load8(x" in text and "q: f64x4 = view.load4(d" in text
    assert "v: f32x8 = f32x8(f32(h.0)" in text or "v: f32x8 = f32x8(f32(h.x)" in text, text
    assert ":tuple[u8, u8, u8, u8, u8, u8, u8, u8]" in text  # no u8x8 type: a tuple of 8


ERRORS = {
    "load8 of f64": ("out[i] = f32(d.load8(i)[0])", "d.load8",
                     "load8 of f64 elements is 64 bytes, more than a 32-byte vector (two 16-byte accesses)",
                     "use load4/store4 twice"),
    "a lane chosen at run time": ("out[i] = f32x8(x.load8(i))[i]", "i]",
                                  "a lane of f32x8 is chosen at compile time; 'i' is not a constant",
                                  "index with a literal or a loop variable of ox.static_range(...)"),
    "lane out of range": ("out[i] = f32(x.load8(i)[8])", "8]", "bf16x8 has lanes 0 to 7, not 8", ""),
    "converting 8 lanes to 4": ("out[i] = f64x4(x.load8(i)).x", "x.load8",
                                "f64x4() of a bf16x8: the lane counts differ (8 and 4)",
                                "convert a vector of 4 lanes, or build it from lanes: f64x4(f64(v[0]), ...)"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_misuse_is_a_located_error(tmp_path: Path, case: str) -> None:
    line, marker, message, hint = ERRORS[case]
    col = 5 + line.rindex(marker)  # 1-based, in the body's 4-space indentation
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(f"""
        @ox.kernel
        def k(x: Slice[bf16], d: Slice[f64], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            {line}
        """))
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False), root=tmp_path)
    msg = str(info.value)
    assert f"kern.py:{HEADER_LINES + 5}:{col}: error: {message}" in msg, msg
    assert hint in msg
    assert re.search(r"\n +\^(\n|$)", msg)  # the caret line under the source line
