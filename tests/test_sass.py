"""The SASS of the tensor-core GEMM examples holds the tensor-core instructions (issue 18): the
bf16/f16 mma.sync GEMM is HMMA.16816 on sm_90; the fp8 one is QMMA.16832 (e4m3) on sm_89 and,
on sm_90, which has no fp8 mma.sync, F2FP unpacks to f16 and HMMA.16816. No local memory in
either (the accumulators stay in registers). Needs cuobjdump and nvdisasm (oxide_build.inspect's
disassemble, as tests/test_wgmma.py's SASS test), no GPU."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from oxide.errors import ToolchainError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.inspect import disassemble

GEMM = Path(__file__).resolve().parent.parent / "examples" / "gemm"
ROOT = GEMM.parent.parent


def sass_of(cubin: bytes) -> str:
    try:
        return disassemble(cubin)
    except ToolchainError as e:
        pytest.skip(f"no SASS: {e}")


def _cubins(name: str, archs: tuple[str, ...]) -> dict[str, bytes]:
    compiled = compile_module(GEMM / f"{name}.py", f"examples.gemm.{name}", CompileOptions(archs=archs, cache=False),
                              root=ROOT)
    return compiled.cubins


def test_mma_gemm_sass_is_hmma() -> None:
    sass = sass_of(_cubins("mma_gemm", ("sm_90",))["sm_90"])
    assert len(re.findall(r"HMMA\.16816\.F32\.BF16 ", sass)) == 128  # one K tile: 4 k-steps x 4 x 8
    assert len(re.findall(r"HMMA\.16816\.F32 ", sass)) == 128  # the f16 instance
    assert len(re.findall(r"LDSM\.16\.MT88\.4", sass)) == 2 * 16 and "LDGSTS.E.BYPASS.128" in sass
    assert not re.search(r"\b(LDL|STL)\b", sass)


def test_fp8_gemm_sass_is_qmma_on_sm89_and_unpacked_hmma_on_sm90() -> None:
    cubins = _cubins("mma_gemm_fp8", ("sm_89", "sm_90"))
    ada = sass_of(cubins["sm_89"])
    assert len(re.findall(r"QMMA\.16832\.F32\.E4M3\.E4M3 ", ada)) == 128
    assert "HMMA" not in ada and not re.search(r"\b(LDL|STL)\b", ada)
    hopper = sass_of(cubins["sm_90"])
    assert "QMMA" not in hopper
    assert len(re.findall(r"HMMA\.16816\.F32 ", hopper)) == 2 * 128
    assert "F2FP.F16.E4M3.UNPACK_B" in hopper
