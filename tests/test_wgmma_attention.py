"""examples/attention/wgmma_attention.py (issue #18) compiles for sm_90a to the design its
docstring describes, in every instance (bf16/f16, D 64/128, causal or not, pingpong or not):

- ptxas reports no serialized wgmma and no wait it had to inject (its C75xx performance notes),
  and nothing in local memory: the consumers' accumulators, P and O, stay in registers under
  the 232 registers setmaxnreg gives them (the module is compiled as a whole program);
- the PTX has one ``ex2.approx.ftz`` per score and rescale factor and P packed by one
  ``cvt.rn.{bf16,f16}x2.f32`` per pair;
- the SASS (where cuobjdump is installed) has the GEMMs as HGMMA with P V kept in flight past
  the wait for S (``WARPGROUP.DEPBAR.LE gsb0, 0x1``), one WARPGROUP.ARRIVE per batch of
  HGMMA (no register A re-packed between them), 3-d TMA loads and the setmaxnreg pair.

The GPU results are in tests/test_attention_gpu.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from oxide.errors import ToolchainError
from oxide_build.compile import CompileOptions, compile_module, ptxas_options
from oxide_build.link.ptxas import ptx_cubin_with_log

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "attention" / "wgmma_attention.py"
INSTANCES = [(elem, d, causal, pingpong) for elem in ("bf16", "f16") for d in (64, 128) for causal in (0, 1)
             for pingpong in (0, 1)]


def block_n(d: int, causal: int) -> int:
    return 176 if d == 128 and not causal else 128


@pytest.fixture(scope="module")
def compiled() -> tuple[str, bytes, str]:
    opts = CompileOptions(archs=("sm_90a",), link_cubins=False, embed_ptx=False, fatbin=False, cache=False)
    ptx = compile_module(EXAMPLE, "wgmma_attention", opts).ptx["sm_90a"]
    cubin, log = ptx_cubin_with_log(ptx, "sm_90a", ptxas_options(opts), "wgmma_attention")
    return ptx, cubin, log


def test_ptxas_neither_serializes_nor_spills(compiled: tuple[str, bytes, str]) -> None:
    _, _, log = compiled
    assert not re.findall(r"\(C75\d\d\)", log), [line for line in log.splitlines() if "C75" in line]
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(spills) == len(INSTANCES) and all(s == ("0", "0") for s in spills), spills


def test_ptx_of_each_instance(compiled: tuple[str, bytes, str]) -> None:
    ptx, _, _ = compiled
    parts = {p.split("(", 1)[0]: p for p in re.split(r"^\.visible \.entry ", ptx, flags=re.M)[1:]}
    assert len(parts) == len(INSTANCES)
    for elem, d, causal, pingpong in INSTANCES:
        body = parts[f"wgmma_attention_{elem}_D{d}_CAUSAL{causal}_PINGPONG{pingpong}"]
        bn = block_n(d, causal)
        assert body.count("ex2.approx.ftz.f32") == bn // 2 + 2  # a thread's scores of a tile, two rescale factors
        assert body.count(f"cvt.rn.{elem}x2.f32") == bn // 4 + d // 4  # P, then O at the end
        assert body.count("wgmma.mma_async") == d // 16 + 2 * bn // 16  # S, P V in the loop, P V of the last tile
        assert f".m64n{bn}k16." in body
        assert body.count("cp.async.bulk.tensor.3d") >= 4 * (d // 64)  # Q, K 0, K j + 1, V j
        assert ("bar.arrive" in body) == bool(pingpong)  # the consumers hand each other their turn


def test_sass_of_each_instance(compiled: tuple[str, bytes, str]) -> None:
    from oxide_build.inspect import disassemble

    _, cubin, _ = compiled
    try:
        sass = disassemble(cubin)
    except ToolchainError as e:
        pytest.skip(f"no SASS: {e}")
    functions = {f.split("\n", 1)[0].strip(): f for f in re.split(r"\n\s*Function : ", sass)[1:]}
    assert len(functions) == len(INSTANCES)
    for name, body in functions.items():
        ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", body)
        d, causal = int(re.search(r"_D(\d+)_", name)[1]), int(re.search(r"_CAUSAL(\d)_", name)[1])
        assert sum("HGMMA.64x" in op for op in ops) == d // 16 + 2 * block_n(d, causal) // 16, name
        assert sum("WARPGROUP.ARRIVE" in op for op in ops) == 3, name  # S; P V in the loop; the last P V
        assert sum("WARPGROUP.DEPBAR.LE gsb0, 0x1" in op for op in ops) == 1, name
        assert sum("USETMAXREG" in op for op in ops) == 2, name
        assert not any(op.split()[0] in ("LDL", "STL") for op in ops if op.split()), name
