"""The attention example (examples/attention/flash_attention.py) compiles, on both backends, to
what its design says: every instance all tensor-core instructions (mma.sync m16n8k16, ldmatrix
and ldmatrix.trans, cp.async.cg), exp2 as one ex2.approx, row reductions as shuffles, and
nothing in local memory. The GPU tests are tests/test_attention_gpu.py."""
from __future__ import annotations

import re
from pathlib import Path

from oxide_build.compile import CompileOptions, compile_module

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "attention" / "flash_attention.py"
INSTANCES = [(d, causal, warps) for d in (64, 128) for causal in (0, 1) for warps in (4, 8)]


def entries(ptx: str) -> dict[str, str]:
    """Each kernel entry's PTX by name."""
    parts = re.split(r"^\.visible \.entry ", ptx, flags=re.M)[1:]
    return {p.split("(", 1)[0]: p for p in parts}


def check_instance(body: str, elem: str, d: int) -> None:
    mmas = 2 * 2 * (d // 16) * 4  # S = Q K^T and O += P V: (D/16) x (BN/16) steps of two n8 tiles each
    assert body.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{elem}.{elem}.f32") == mmas
    assert body.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == mmas // 4
    assert body.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == mmas // 4
    assert body.count("ex2.approx") == 64 // 2 + 2  # P's 32 values a lane and the two rescale factors
    assert body.count("shfl.sync.bfly") == 4 + 4  # two row maxima a tile and two sums at the end, 2 steps each
    assert "cp.async.cg.shared.global" in body and "cp.async.wait_group" in body
    assert "ld.local" not in body and "st.local" not in body


def test_attention_example_nvptx() -> None:
    compiled = compile_module(EXAMPLE, "flash_attention", CompileOptions(archs=("sm_80",), cache=False))
    kernels = entries(compiled.ptx["sm_80"])
    assert len(kernels) == 16
    for elem in ("bf16", "f16"):
        for d, causal, warps in INSTANCES:
            check_instance(kernels[f"flash_attention_{elem}_D{d}_CAUSAL{causal}_WARPS{warps}"], elem, d)


def test_attention_example_nvvm(tmp_path: Path) -> None:
    """libNVVM has no bf16: the f16 instances, compiled by the nvvm backend (inline PTX for mma,
    ldmatrix and cp.async)."""
    source = EXAMPLE.read_text()
    assert 'T = ox.TypeVar("T", bf16, f16)' in source
    copy = tmp_path / "flash_attention.py"
    copy.write_text(source.replace('T = ox.TypeVar("T", bf16, f16)', 'T = ox.TypeVar("T", f16)'))
    compiled = compile_module(copy, "flash_attention", CompileOptions(archs=("sm_80",), cache=False, backend="nvvm"))
    kernels = entries(compiled.ptx["sm_80"])
    assert len(kernels) == 8
    for d, causal, warps in INSTANCES:
        check_instance(kernels[f"flash_attention_f16_D{d}_CAUSAL{causal}_WARPS{warps}"], "f16", d)

