"""FMA contraction (oxide_build/passes/fma.py) and the fma setting through the backends: on,
a * b + c is one fused multiply-add as nvcc --fmad=true makes it; off (`[tool.oxide] fma =
false`), every + - * rounds on its own, as nvcc --fmad=false."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import ToolchainError
from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.config import OxideConfig
from oxide_build.ir.printer import print_program

SOURCE = '''
import oxide as ox
from oxide import MutSlice, Slice, f32, f64, i64, thread


def scale(v: f32) -> f32:
    return v * 3.0


@ox.kernel
def k(x: Slice[f32], y: Slice[f32], out: MutSlice[f32], o2: MutSlice[f32], o3: MutSlice[f32],
      o4: MutSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(y) and i < len(out) and i < len(o2) and i < len(o3) and i < len(o4):
        a = x[i]
        with ox.unsafe():
            out[i] = a * y[i] + 1.0
            o2[i] = 2.0 - a * a
            o3[i] = scale(a) + a * a          # a call stays before the product it precedes
            o4[i] = ox.math.exp(a) * 0.5 + a  # libdevice inside, a product outside
'''


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "fk.py"
    src.write_text(textwrap.dedent(SOURCE))
    return src


def _kernel_ir(tmp_path: Path, fma: bool) -> str:
    _, frontend = build_ir(_source(tmp_path), "fk", CompileOptions(fma=fma), root=tmp_path)
    text = print_program(frontend.program)
    return text[text.index("kernel k"):]


def _ptx(tmp_path: Path, fma: bool, backend: str = "nvptx") -> str:
    options = CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, fma=fma, backend=backend)
    ptx = compile_module(_source(tmp_path), "fk", options, root=tmp_path).ptx["sm_90"]
    return ptx[ptx.index(".entry k("):]


def test_contraction_in_the_ir(tmp_path: Path) -> None:
    text = _kernel_ir(tmp_path, fma=True)
    assert "out[i] = math.fma(a, y[i], 1.0:f32):f32" in text
    assert "o2[i] = math.fma((-a), a, 2.0:f32):f32" in text
    # scale(a) is a call: evaluating it after a * a is fine only because the product is pure
    assert "o3[i] = math.fma(a, a, call " in text
    assert re.search(r"o4\[i\] = math\.fma\(math\.exp\(a\):f32, 0\.5:f32, a\):f32", text)


def test_no_contraction_when_switched_off(tmp_path: Path) -> None:
    text = _kernel_ir(tmp_path, fma=False)
    assert "math.fma" not in text
    assert "out[i] = ((a * y[i]) + 1.0:f32)" in text


def test_impure_addend_stays_first(tmp_path: Path) -> None:
    src = tmp_path / "order.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import MutSlice, Slice, f32, i64, thread

        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                with ox.unsafe():
                    out[i] = ox.atomic.add(out, 0, 1.0) + x[i] * x[i]
    '''))
    _, frontend = build_ir(src, "order", CompileOptions(), root=tmp_path)
    # neither side is pure: the atomic must run before the loads of the product, so no fma
    assert "math.fma" not in print_program(frontend.program)


def test_nvptx_fuses_like_nvcc_and_not_when_off(tmp_path: Path) -> None:
    on, off = _ptx(tmp_path, True), _ptx(tmp_path, False)
    # the four of the kernel (libdevice's exp calls fmaf itself: those stay fused either way,
    # as with nvcc --fmad=false)
    assert len(re.findall(r"\bfma\.rn\.f32", on)) - len(re.findall(r"\bfma\.rn\.f32", off)) == 4
    # what is not fused stays plain (ptxas may fuse it further, as after nvcc), never .rn
    assert not re.search(r"\b(add|sub|mul)\.rn\.f32", on)
    assert re.search(r"\bmul\.rn\.f32", off) and re.search(r"\badd\.rn\.f32", off)
    assert not re.search(r"\b(add|sub|mul)\.f32", off)  # .rn: ptxas must not fuse them either
    # the NVPTX option is process-wide: switching back gives the fused code again
    assert _ptx(tmp_path, True) == on


def test_libnvvm_follows_the_setting(tmp_path: Path) -> None:
    try:
        on, off = _ptx(tmp_path, True, "nvvm"), _ptx(tmp_path, False, "nvvm")
    except ToolchainError as exc:
        pytest.skip(str(exc))
    assert len(re.findall(r"\bfma\.rn\.f32", on)) - len(re.findall(r"\bfma\.rn\.f32", off)) == 4
    assert not re.search(r"\b(add|sub|mul)\.f32", off)


def test_fma_setting_in_tool_oxide() -> None:
    assert OxideConfig().compile_options().fma is True
    assert OxideConfig(fma=False).compile_options().fma is False
