"""oxide_build/link/ptxas.py: the PTX of a module without C++ becomes its cubin through ptxas as
a whole program, so ``setmaxnreg`` holds (nvJitLink compiles PTX as relocatable code and drops
it); the options are ptxas's spelling of the build's; without a ptxas nvJitLink does it; a PTX
ptxas refuses is a LinkError naming the module."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import LinkError
from oxide_build.compile import CompileOptions, compile_module, ptxas_options
from oxide_build.link import ptxas
from oxide_build.link.ptxas import ptx_cubin, ptx_cubin_with_log, ptxas_arguments
from oxide_build.toolchain.discovery import find_tool

pytestmark = pytest.mark.skipif(find_tool("ptxas") is None, reason="no ptxas (pip install nvidia-cuda-nvcc)")

SPECIALIZED = """
import oxide as ox
from oxide import MutSlice, f32, thread

@ox.kernel(launch_bounds=384, max_registers=168)
def k(c: MutSlice[f32]) -> None:
    if ox.warpgroup.id() == 0:
        ox.warpgroup.setmaxnreg_dec(40)
    else:
        ox.warpgroup.setmaxnreg_inc(232)
        with ox.unsafe():
            c[thread.idx.x] = 1.0
"""


def test_options_in_ptxas_spelling() -> None:
    assert ptxas_arguments(("-O3", "-lineinfo", "-maxrregcount=64", "-fma=0")) == [
        "-O3", "-lineinfo", "--maxrregcount=64", "--fmad=false"]
    assert ptxas_arguments(ptxas_options(CompileOptions(opt_level=0))) == ["-O0"]
    with pytest.raises(ValueError, match="no ptxas spelling"):
        ptxas_arguments(("-lto",))


def test_setmaxnreg_holds_in_the_built_cubin(tmp_path: Path) -> None:
    src = tmp_path / "spec.py"
    src.write_text(textwrap.dedent(SPECIALIZED))
    options = CompileOptions(archs=("sm_90a",), link_cubins=False, cache=False)
    ptx = compile_module(src, "spec", options).ptx["sm_90a"]
    cubin, log = ptx_cubin_with_log(ptx, "sm_90a", ptxas_options(options), "spec")
    assert "setmaxnreg" in ptx and "C7504" not in log and "ignored" not in log, log
    built = compile_module(src, "spec", CompileOptions(archs=("sm_90a",), cache=False)).cubins["sm_90a"]
    assert built[:4] == b"\x7fELF" and cubin[:4] == b"\x7fELF"


def test_without_ptxas_nvjitlink_compiles_the_ptx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "spec.py"
    src.write_text(textwrap.dedent(SPECIALIZED))
    options = CompileOptions(archs=("sm_90a",), link_cubins=False, cache=False)
    ptx = compile_module(src, "spec", options).ptx["sm_90a"]
    monkeypatch.setattr(ptxas, "find_tool", lambda name: None)
    _, log = ptx_cubin_with_log(ptx, "sm_90a", ptxas_options(options), "spec")
    assert "C7504" in log  # nvJitLink's relocatable compile: setmaxnreg ignored


def test_ptx_that_ptxas_refuses_is_a_link_error_naming_the_module() -> None:
    bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { not_an_instruction; }\n"
    with pytest.raises(LinkError) as info:
        ptx_cubin(bad, "sm_90", ("-O3",), "mymodule")
    assert "ptxas" in str(info.value) and "mymodule.ptx" in str(info.value) and "sm_90" in str(info.value)
