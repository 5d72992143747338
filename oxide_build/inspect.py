"""``oxide inspect``: what ptxas made of each kernel (registers, shared/local memory, spills),
read from nvJitLink's verbose info log, and the SASS where cuobjdump is installed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from oxide.errors import ToolchainError
from oxide.runtime.manifest import ErrorSite

from .compile import CompileOptions, build_ir, compile_module, ptxas_options
from .ir import nodes as ir
from .toolchain import find_tool

__all__ = ["KernelResources", "inspect_module", "disassemble"]


@dataclass(frozen=True)
class KernelResources:
    symbol: str
    registers: int
    shared_bytes: int
    local_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    barriers: int
    # the parameter block the entry point declares (what a launch copies): its parameters
    # less those its code never reads (lower/entry_params.py); 0 when not known
    param_bytes: int = 0


_PROPS = re.compile(r"Function properties for '?(?P<sym>[\w$.]+)'?:?")
_USED = re.compile(r"used (?P<regs>\d+) registers(?:, used (?P<bars>\d+) barriers)?(?:, (?P<stack>\d+) stack)?"
                   r"(?:, (?P<smem>\d+) bytes smem)?(?:, \d+ bytes cmem\[\d+\])?(?:, (?P<lmem>\d+) bytes lmem)?", re.I)
_SPILL = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")


def parse_info_log(log: str) -> dict[str, KernelResources]:
    """Parses nvJitLink's ``-verbose`` log (ptxas lines and the linker's summary)."""
    found: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        m = _PROPS.search(line)
        if m:
            current = m.group("sym")
            found.setdefault(current, {})
            continue
        if current is None:
            continue
        m = _SPILL.search(line)
        if m:
            found[current].update(stack=int(m["stack"]), spill_st=int(m["st"]), spill_ld=int(m["ld"]))
            continue
        m = _USED.search(line)
        if m:
            entry = found[current]
            entry["regs"] = int(m["regs"])  # the linker's summary comes last and counts callees
            if m["bars"] and (line.lstrip().startswith("ptxas") or "bars" not in entry):
                entry["bars"] = int(m["bars"])  # ptxas's own count; the linker's summary overstates it
            if m["smem"]:
                entry["smem"] = int(m["smem"])
            if m["lmem"]:
                entry["lmem"] = int(m["lmem"])
            if m["stack"]:
                entry["stack"] = int(m["stack"])
    return {
        sym: KernelResources(sym, v.get("regs", 0), v.get("smem", 0), v.get("lmem", 0), v.get("stack", 0),
                             v.get("spill_st", 0), v.get("spill_ld", 0), v.get("bars", 0))
        for sym, v in found.items() if "regs" in v
    }


class Inspection(NamedTuple):
    resources: dict[str, KernelResources]  # entry symbol -> resources
    cubin: bytes
    names: dict[str, str]  # entry symbol -> Python kernel name
    checks: list[ErrorSite]  # the bounds checks and asserts that remain in the device code
    launch_checks: list[ErrorSite]  # asserts the runtime checks at launch (preconditions)
    # a kernel's fast instance (passes/launch_instances.py) -> the error sites its code keeps
    # (those of the device functions it calls included): the checks of ``checks`` it has not
    fast_sites: dict[str, frozenset[int]] = {}


def _sites_of(fn: ir.Function, by_symbol: dict[str, ir.Function], seen: set[str] | None = None) -> set[int]:
    """The error sites ``fn``'s code can report, and those of the functions it calls."""
    seen = set() if seen is None else seen
    seen.add(fn.symbol)
    sites: set[int] = set()
    for st in ir.statements(fn.body):
        for attr in ("check_site", "site"):
            value = getattr(st, attr, None)
            if isinstance(value, int):
                sites.add(value)
        for root in ir.statement_roots(st):
            for e in ir.subexpressions(root):
                site = getattr(e, "check_site", None)
                if isinstance(site, int):
                    sites.add(site)
                if isinstance(e, ir.Call) and e.symbol in by_symbol and e.symbol not in seen:
                    sites |= _sites_of(by_symbol[e.symbol], by_symbol, seen)
    return sites


def inspect_module(source: Path, module_name: str, arch: str, options: CompileOptions | None = None,
                   root: Path | None = None) -> Inspection:
    """Compiles ``source`` for ``arch``; returns each kernel entry's resources, the cubin, the
    Python kernel name of each entry symbol and the checks left in the code.

    The cubin is linked as the build links it: a module without C++ from its PTX; a module
    that calls (or is called by) CUDA C++ from its LTO-IR (or its PTX: bf16) and its C++
    inputs, with ``-lto`` (its PTX alone has undefined externs, which nvJitLink cannot finish).
    """
    from .link.cache import CompileCache
    from .link.inputs import input_file
    from .link.lto import LinkSettings, inputs_from_files, lto_link_options
    from .link.nvjitlink import link_cubin_with_log
    from .link.ptxas import ptx_cubin_with_log

    base = options or CompileOptions()
    opts = replace(base, archs=(arch,), link_cubins=False, embed_ptx=False, fatbin=False)
    compiled = compile_module(source, module_name, opts, root=root)
    if compiled.lto:
        settings = LinkSettings(
            include_dirs=opts.include_dirs, defines=opts.defines, nvrtc_options=opts.nvrtc_options,
            link_inputs=opts.link_inputs, cudadevrt=opts.cudadevrt, opt_level=opts.opt_level,
            link_options=ptxas_options(opts), cache=CompileCache(enabled=opts.cache),
        )
        files = [input_file(name) for name in compiled.link_inputs]
        inputs = inputs_from_files(files, compiled.ltoir.get(arch), module_name, arch, settings,
                                   compiled.boundary, compiled.ptx[arch] if compiled.lto_from_ptx else None)
        link_opts = lto_link_options(settings)
        cubin, log = link_cubin_with_log(inputs, arch, link_opts)
    else:  # as the build compiles it: a whole program
        cubin, log = ptx_cubin_with_log(compiled.ptx[arch], arch, ptxas_options(opts), module_name)
    resources = parse_info_log(log)
    # every entry point of each kernel: as written, index32, fast (docs/runtime.md)
    names = {symbol: k.name for k in compiled.kernels for symbol in k.instances()}
    at_launch = {c.site for k in compiled.kernels for c in k.preconditions}
    resources = {s: replace(r, param_bytes=compiled.param_bytes.get(s, 0)) for s, r in resources.items()}
    fast_sites: dict[str, frozenset[int]] = {}
    if any(k.fast_symbol for k in compiled.kernels):  # which checks each fast instance keeps
        _, frontend = build_ir(source, module_name, opts, root=root)
        by_symbol = {fn.symbol: fn for fn in frontend.program.functions}
        fast_sites = {fn.symbol: frozenset(_sites_of(fn, by_symbol)) for fn in frontend.program.functions
                      if fn.fast_of}
    return Inspection({s: r for s, r in resources.items() if s in names}, cubin, names,
                      [s for s in compiled.error_sites if s.id not in at_launch],
                      [s for s in compiled.error_sites if s.id in at_launch], fast_sites)


def disassemble(cubin: bytes) -> str:
    """SASS of ``cubin`` through cuobjdump, which runs nvidia's nvdisasm (pip install
    nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, or a CUDA toolkit). cuobjdump looks for nvdisasm
    on PATH only: the pip wheels' and the toolkit's bin directories are put before it."""
    tool = find_tool("cuobjdump")
    if tool is None:
        raise ToolchainError("cuobjdump was not found: pip install nvidia-cuda-cuobjdump")
    places = [str(tool.parent), *(str(Path(os.environ[v]) / "bin") for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ),
              "/usr/local/cuda/bin", os.environ.get("PATH", "")]
    search = os.pathsep.join(places)
    if shutil.which("nvdisasm", path=search) is None:
        raise ToolchainError("nvdisasm (which cuobjdump runs for SASS) was not found: pip install nvidia-cuda-nvdisasm")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.cubin"
        path.write_bytes(cubin)
        result = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True,
                                env={**os.environ, "PATH": search})
    if result.returncode != 0:
        raise ToolchainError(f"cuobjdump failed: {result.stderr.strip()}")
    return result.stdout
