"""The CUDA toolchain the compiler uses: nvJitLink, libNVVM and libdevice, NVRTC, nvFatbin, the
CUDA and CCCL headers, libcudadevrt, ptxas and cuobjdump.

Every other module gets them from here, never from ``cuda.pathfinder`` or a path of its own:
``discovery`` says where each piece lies (only in the environment the build runs in, see there),
``versions`` whether the pieces can work together. ``bindings("nvJitLink")`` is the one way to
the ``cuda.bindings`` module of a library.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from oxide.errors import ToolchainError

from .discovery import COMPONENTS, find_tool, install_hint, load_library, locate, require
from .versions import check_link_compatibility, component_version

__all__ = [
    "bindings",
    "check_link_compatibility",
    "cuda_include_dirs",
    "cudadevrt_path",
    "find_tool",
    "libdevice_path",
    "toolchain_report",
]

_BINDINGS = {"nvJitLink": "nvjitlink", "NVVM": "nvvm", "NVRTC": "nvrtc", "nvFatbin": "nvfatbin"}
_linker_checked: list[bool] = []  # once per process: the versions do not change under it


def bindings(name: str) -> ModuleType:
    """``cuda.bindings.<module>`` for the library ``name`` ("nvJitLink", "NVVM", "NVRTC",
    "nvFatbin"), with the library loaded from this environment. Loading nvJitLink first checks
    that no LTO-IR producer of the environment is newer than it."""
    try:
        module = importlib.import_module(f"cuda.bindings.{_BINDINGS[name]}")
    except ImportError:
        raise ToolchainError("cuda-bindings is not installed: pip install 'oxide-cuda[build]'") from None
    loaded = load_library(name)
    if name == "nvJitLink" and not _linker_checked:
        check_link_compatibility(loaded.path)
        _linker_checked.append(True)
    return module


def libdevice_path() -> Path:
    return require("libdevice").path


def cudadevrt_path() -> Path:
    return require("libcudadevrt").path


def cuda_include_dirs() -> list[str]:
    """The CCCL headers (CUB, Thrust, libcu++) and the CUDA runtime headers, for NVRTC. CCCL
    comes first: NVRTC's own bundled headers may carry an older libcu++. A missing CCCL is
    an error only when a source includes it (NVRTC then names the header)."""
    dirs: list[str] = []
    for name in ("CCCL headers", "CUDA runtime headers"):
        found = locate(name)
        if found is not None and str(found.path) not in dirs:
            dirs.append(str(found.path))
    return dirs


def toolchain_report() -> list[str]:
    """One line per piece: where it is and which version, for the build log."""
    lines = []
    for name, component in COMPONENTS.items():
        found = locate(name)
        if found is None:
            lines.append(f"{name}: not found (pip install {install_hint(name)})")
            continue
        version = component_version(name)
        via = "" if found.origin == "environment" else f" (from {found.origin})"
        lines.append(f"{name}: {found.path}{via}" + (f" [{version.distribution} {version.version}]" if version else ""))
    return lines
