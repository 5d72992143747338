"""The CPU device's entry point: a kernel module compiled for the host, ready to launch
(``backends/cpu/``: the ``cpu`` stage's host code, JIT-compiled, and the scheduler that runs it).

``compile_module_for_cpu(source_path, module_name, root, options) -> CpuModule`` runs the
compiler's stages with ``device="cpu"`` (``compile.STAGES``' ``cpu`` stage) and JIT-compiles the
host code; modules are cached in this process by the source text, the options and llvmlite's
version. ``CpuModule.function(symbol).launch(grid, block, dynamic_shared_bytes, kernel_params,
sanitize)`` takes what ``cuLaunchKernel`` takes (``backends/cpu/engine.py``). The runtime's CPU
driver (``oxide/runtime/cpu_driver.py``) calls it through ``oxide_build.jit.cpu_module``.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import replace
from pathlib import Path

from .backends.cpu.engine import CpuFunction, CpuModule
from .compile import compile_module
from .config import CompileOptions

__all__ = ["CpuFunction", "CpuModule", "compile_module_for_cpu"]

# key -> the module, and the other files it was compiled from with their SHA-256 (a hit is
# taken only while they are unchanged)
_cache: dict[str, tuple[CpuModule, dict[Path, str]]] = {}
_cache_lock = threading.Lock()


def _cache_key(source_path: Path, module_name: str, root: Path | None, options: CompileOptions) -> str:
    import llvmlite

    h = hashlib.sha256()
    h.update(Path(source_path).read_bytes())
    for part in (str(Path(source_path).resolve()), module_name, str(root), repr(options), llvmlite.__version__):
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def compile_module_for_cpu(source_path: Path, module_name: str, root: Path | None = None,
                           options: CompileOptions | None = None) -> CpuModule:
    """Compiles every kernel of ``source_path`` for the CPU device (see the module's docstring).
    Raises ``oxide.CompileError`` for bad source and for what has no CPU form."""
    # the CPU device is an sm_90 device (docs/runtime.md): what sm_90a adds is left to the CPU
    # lowering, which refuses what it has no form of by name
    options = replace(options or CompileOptions(), device="cpu", link_cubins=False, archs=("sm_90a",))
    key = _cache_key(source_path, module_name, root, options)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and all(_sha256(p) == sha for p, sha in cached[1].items()):
        return cached[0]
    compiled = compile_module(Path(source_path), module_name, options, root)
    assert compiled.host is not None
    module = CpuModule(module_name, compiled.kernels, compiled.error_sites, compiled.arrays, compiled.host)
    if not options.sanitize:
        module.make_sanitized = lambda: compile_module_for_cpu(source_path, module_name, root,
                                                                replace(options, sanitize=True))
    with _cache_lock:
        _cache[key] = (module, dict(compiled.dependencies))
    return module


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""

