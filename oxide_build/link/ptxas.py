"""ptxas: the PTX of a module without C++ → its cubin, compiled as a whole program (what nvcc
does without ``-rdc``).

nvJitLink compiles PTX inputs as relocatable code, so that they can be linked with others; in
that mode ptxas ignores ``setmaxnreg`` ("ignored to maintain compatibility across compilation
units") and allocates every warpgroup's registers under the kernel's entry cap, and a
warp-specialized kernel whose consumers need more than that spills and has its ``wgmma``
serialized. A module whose PTX is complete (no C++, no extern functions) needs no link: the
``ptxas`` of the build's toolchain (pip ``nvidia-cuda-nvcc``, or a CUDA toolkit) compiles it
whole. Where no ``ptxas`` is found, nvJitLink does it as before.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from oxide.errors import LinkError

from ..toolchain.discovery import find_tool
from .nvjitlink import LinkInput, link_cubin, link_cubin_with_log

__all__ = ["ptx_cubin", "ptx_cubin_with_log", "ptxas_arguments"]


def ptxas_arguments(options: tuple[str, ...]) -> list[str]:
    """ptxas's spelling of the nvJitLink options ``compile.ptxas_options`` makes."""
    out: list[str] = []
    for opt in options:
        if opt in ("-O0", "-O3", "-lineinfo"):
            out.append(opt)
        elif opt.startswith("-maxrregcount="):
            out.append("--maxrregcount=" + opt.partition("=")[2])
        elif opt == "-fma=0":
            out.append("--fmad=false")
        else:
            raise ValueError(f"no ptxas spelling for the link option {opt!r}")
    return out


def ptx_cubin(ptx: str, arch: str, options: tuple[str, ...], name: str) -> bytes:
    """The cubin of the complete PTX module ``ptx`` for ``arch``."""
    return _compile(ptx, arch, options, name, verbose=False)[0]


def ptx_cubin_with_log(ptx: str, arch: str, options: tuple[str, ...], name: str) -> tuple[bytes, str]:
    """``ptx_cubin`` and ptxas's verbose log (registers, shared and local memory, spills per kernel)."""
    return _compile(ptx, arch, options, name, verbose=True)


def _compile(ptx: str, arch: str, options: tuple[str, ...], name: str, verbose: bool) -> tuple[bytes, str]:
    tool = find_tool("ptxas")
    if tool is None:
        inputs = [LinkInput(f"{name}.ptx", "ptx", ptx.encode())]
        if verbose:
            return link_cubin_with_log(inputs, arch, options)
        return link_cubin(inputs, arch, options), ""
    with tempfile.TemporaryDirectory(prefix="oxide-ptxas-") as tmp:
        source = Path(tmp) / f"{name}.ptx"
        target = Path(tmp) / f"{name}.cubin"
        source.write_text(ptx)
        command = [str(tool), f"-arch={arch}", *ptxas_arguments(options), *(["-v"] if verbose else []),
                   str(source), "-o", str(target)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            log = (done.stderr + done.stdout).replace(str(source), f"{name}.ptx").strip()
            raise LinkError(f"ptxas ({tool}) failed for {arch} compiling {name}.ptx:\n{log}")
        return target.read_bytes(), done.stderr + done.stdout
