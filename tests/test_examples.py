"""Every example compiles for every supported arch, and ptxas accepts its PTX (CPU only)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oxide_build.compile import SUPPORTED_ARCHS, CompileOptions, compile_module
from oxide_build.toolchain import find_tool

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["saxpy", "reduce", "scan", "histogram", "transpose", "softmax", "stencil", "sgemm", "lltm.kernels"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_compiles_for_every_arch(name: str, tmp_path: Path) -> None:
    compiled = compile_module(ROOT / "examples" / f"{name.replace('.', '/')}.py", f"examples.{name}",
                              CompileOptions(archs=SUPPORTED_ARCHS), root=ROOT)
    assert sorted(compiled.cubins) == sorted(SUPPORTED_ARCHS)
    assert compiled.kernels
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed (pip install nvidia-cuda-nvcc)")
    for arch in SUPPORTED_ARCHS:
        ptx = tmp_path / f"{name}.{arch}.ptx"
        ptx.write_text(compiled.ptx[arch])
        result = subprocess.run([ptxas, f"-arch={arch}", "-o", str(tmp_path / "o.cubin"), str(ptx)],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"{arch}: {result.stderr}"


def test_sgemm_bounds_checks_fold_out_of_the_inner_loop() -> None:
    compiled = compile_module(ROOT / "examples" / "sgemm.py", "examples.sgemm",
                              CompileOptions(archs=("sm_90",), link_cubins=False), root=ROOT)
    ptx = compiled.ptx["sm_90"]
    # 32 unrolled FMAs with no compare (no bounds check) between them
    assert ptx.count("fma.rn.f32") == 32
    first, last = ptx.index("fma.rn.f32"), ptx.rindex("fma.rn.f32")
    assert "setp." not in ptx[first:last]


def test_shared_memory_atomics_and_vector_loads() -> None:
    hist = compile_module(ROOT / "examples" / "histogram.py", "examples.histogram",
                          CompileOptions(archs=("sm_90",), link_cubins=False), root=ROOT)
    assert "atom.shared.add.u32" in hist.ptx["sm_90"]
    red = compile_module(ROOT / "examples" / "reduce.py", "examples.reduce",
                         CompileOptions(archs=("sm_90",), link_cubins=False), root=ROOT)
    assert "ld.global.nc.v4" in red.ptx["sm_90"] and "shfl.sync.bfly" in red.ptx["sm_90"]


def test_lltm_kernels_keep_no_bounds_checks() -> None:
    """Their shape asserts are checked at launch and prove every access: the device code keeps
    no check (the kernels then compile to what the CUDA C++ version does, benchmarks/lltm.py)."""
    from oxide_build.inspect import inspect_module

    _, _, names, checks, *_ = inspect_module(ROOT / "examples" / "lltm" / "kernels.py", "examples.lltm.kernels",
                                            "sm_90", root=ROOT)
    symbols = ["lltm_backward_f32", "lltm_backward_f64", "lltm_forward_f32", "lltm_forward_f64"]
    assert sorted(names) == sorted(symbols + [s + "__index32" for s in symbols])  # docs/runtime.md: index32
    assert checks == []
