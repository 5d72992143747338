"""Ports of public CUDA kernels (tests/packages/ports/port_*.py), each written the way its
author writes CUDA, after reading docs/language.md: they must compile as first written. The
docstring of each says where it comes from. Their results are checked on the GPU in
tests/test_ports_gpu.py."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.toolchain import find_tool

PORTS = Path(__file__).parent / "packages" / "ports"
NAMES = sorted(p.stem for p in PORTS.glob("port_*.py"))

# Ports that do not compile as first written yet, with what they run into. A port that starts
# compiling fails its strict xfail: take it off this list.
NOT_YET: dict[str, str] = {}


@pytest.mark.parametrize("name", NAMES)
def test_port_compiles_as_first_written(name: str, tmp_path: Path) -> None:
    options = CompileOptions(archs=("sm_90",), link_cubins=False)
    if name in NOT_YET:
        with pytest.raises(CompileError):
            compile_module(PORTS / f"{name}.py", name, options, root=PORTS)
        return
    compiled = compile_module(PORTS / f"{name}.py", name, options, root=PORTS)
    assert compiled.kernels
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    ptx = tmp_path / f"{name}.ptx"
    ptx.write_text(compiled.ptx["sm_90"])
    result = subprocess.run([ptxas, "-arch=sm_90", "-o", str(tmp_path / "o.cubin"), str(ptx)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_ports_compile_as_first_written() -> None:
    """Issue 16's bar: at least 13 of every 15 ports compile as first written."""
    assert len(NAMES) >= 15
    assert (len(NAMES) - len(NOT_YET)) * 15 >= 13 * len(NAMES), sorted(NOT_YET)
