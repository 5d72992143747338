"""f16x2 and bf16x2 vectors (CUDA's __half2, __nv_bfloat162): lane-wise arithmetic compiles to
the paired half instructions."""
from __future__ import annotations

from pathlib import Path

import oxide as ox
from oxide_build.compile import CompileOptions, compile_module

PACKAGE = Path(__file__).parent / "packages" / "half2"


def test_half2_arithmetic_is_one_paired_instruction() -> None:
    compiled = compile_module(PACKAGE / "half2k.py", "half2k", CompileOptions(archs=("sm_90",), link_cubins=False),
                              root=PACKAGE)
    ptx = compiled.ptx["sm_90"]
    assert "fma.rn.f16x2" in ptx  # v * (a, a) + w, contracted like nvcc's __hfma2
    assert "bf16x2" in ptx


def test_half2_names() -> None:
    assert ox.f16x2.name == "f16x2" and ox.bf16x2.name == "bf16x2"
    assert ox.f16x2.lanes == 2 and ox.VECTOR_TYPES["bf16x2"] is ox.bf16x2
