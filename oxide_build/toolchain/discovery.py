"""Where each piece of the CUDA toolchain lies, and loading its libraries.

Every piece comes from the Python environment the build runs in: the entries of ``sys.path``.
That is the only definition of "this environment" that holds under every frontend: pip's
default build isolation installs the build requirements on overlay prefixes that are on
``sys.path`` but not in ``site.getsitepackages()``, and it takes the outer environment's
site-packages *off* ``sys.path`` (where ``site.getsitepackages()`` still names them). So a
toolchain installed next to the frontend, or in ``/usr/local/cuda``, is never picked up by an
isolated build.

A CUDA toolkit is used only when ``CUDA_HOME`` or ``CUDA_PATH`` names one, and only for the
pieces the environment lacks; nothing is looked up in ``/usr/local/cuda``, ``PATH`` (except the
command-line tools, last) or the dynamic loader's search path. A missing piece is a
``ToolchainError`` that names the pip package providing it.

Libraries are loaded here, by absolute path, before ``cuda.bindings`` first uses them:
``cuda.bindings`` loads them through ``cuda.pathfinder``, which takes a library that is already
loaded (by soname) before searching, and would otherwise search ``site.getsitepackages()``,
``CUDA_HOME`` and the system loader. A library some other package loaded first (PyTorch loads
its own libnvJitLink) is used as it is; ``LoadedLibrary.path`` then says which file that is.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from oxide.errors import ToolchainError

__all__ = [
    "COMPONENTS",
    "CPP_COMPONENTS",
    "Component",
    "LoadedLibrary",
    "Located",
    "cuda_toolkit_root",
    "environment_cuda_major",
    "install_hint",
    "locate",
    "load_library",
    "find_tool",
    "missing_message",
    "require",
    "search_roots",
]


@dataclass(frozen=True)
class Component:
    """One piece of the toolchain: where it lies in the nvidia-* wheels and in a CUDA toolkit."""

    name: str  # what messages call it, and the key of COMPONENTS
    distribution: str  # the pip package that provides it
    wheel_paths: tuple[str, ...]  # relative to a sys.path entry, newest layout first
    toolkit_paths: tuple[str, ...]  # relative to CUDA_HOME / CUDA_PATH
    pathfinder_name: str = ""  # the name cuda.pathfinder (and so cuda.bindings) loads it by
    sonames: tuple[str, ...] = ()
    cu12_distribution: str = ""  # the CUDA 12 wheel that provides it (nvidia-nvjitlink-cu12)

    def distributions(self) -> tuple[str, ...]:
        """The pip packages that may have installed it: CUDA 13's, then CUDA 12's."""
        return (self.distribution, self.cu12_distribution) if self.cu12_distribution else (self.distribution,)


def _lib(name: str, distribution: str, stem: str, sonames: tuple[str, ...], wheel_dirs: tuple[str, ...],
         toolkit_dirs: tuple[str, ...] = ("lib64", "lib"), pathfinder_name: str = "",
         cu12_distribution: str = "") -> Component:
    return Component(
        name, distribution,
        tuple(f"{d}/{s}" for d in wheel_dirs for s in sonames),
        tuple(f"{d}/{s}" for d in toolkit_dirs for s in sonames),
        pathfinder_name or stem, sonames, cu12_distribution,
    )


# Wheel layouts: CUDA 13's nvidia-* wheels share nvidia/cu13/; CUDA 12's -cu12 wheels have a
# directory each (nvidia/nvjitlink/, nvidia/cuda_nvrtc/, ...), and NVVM, libdevice and ptxas come
# in nvidia-cuda-nvcc-cu12, whose libNVVM is a plain libnvvm.so.
COMPONENTS: dict[str, Component] = {c.name: c for c in (
    _lib("nvJitLink", "nvidia-nvjitlink", "nvJitLink", ("libnvJitLink.so.13", "libnvJitLink.so.12"),
         ("nvidia/cu13/lib", "nvidia/nvjitlink/lib"), cu12_distribution="nvidia-nvjitlink-cu12"),
    _lib("NVVM", "nvidia-nvvm", "nvvm", ("libnvvm.so.4", "libnvvm.so"),
         ("nvidia/cu13/lib", "nvidia/cuda_nvcc/nvvm/lib64"), ("nvvm/lib64",), cu12_distribution="nvidia-cuda-nvcc-cu12"),
    _lib("NVRTC", "nvidia-cuda-nvrtc", "nvrtc", ("libnvrtc.so.13", "libnvrtc.so.12"),
         ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"), cu12_distribution="nvidia-cuda-nvrtc-cu12"),
    _lib("nvFatbin", "nvidia-nvfatbin", "nvfatbin", ("libnvfatbin.so.13", "libnvfatbin.so.12"),
         ("nvidia/cu13/lib", "nvidia/nvfatbin/lib"), cu12_distribution="nvidia-nvfatbin-cu12"),
    Component("libdevice", "nvidia-nvvm",
              ("nvidia/cu13/nvvm/libdevice/libdevice.10.bc", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"),
              ("nvvm/libdevice/libdevice.10.bc",), cu12_distribution="nvidia-cuda-nvcc-cu12"),
    Component("libcudadevrt", "nvidia-cuda-runtime",
              ("nvidia/cu13/lib/libcudadevrt.a", "nvidia/cuda_runtime/lib/libcudadevrt.a"),
              ("lib64/libcudadevrt.a", "lib/libcudadevrt.a"), cu12_distribution="nvidia-cuda-runtime-cu12"),
    # CUB, Thrust and libcu++: a directory that holds cub/
    Component("CCCL headers", "nvidia-cuda-cccl",
              ("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include"), ("include/cccl", "include"),
              cu12_distribution="nvidia-cuda-cccl-cu12"),
    # the CUDA runtime headers: a directory that holds cuda_runtime.h
    Component("CUDA runtime headers", "nvidia-cuda-runtime",
              ("nvidia/cu13/include", "nvidia/cuda_runtime/include"), ("include",),
              cu12_distribution="nvidia-cuda-runtime-cu12"),
    Component("ptxas", "nvidia-cuda-nvcc", ("nvidia/cu13/bin/ptxas", "nvidia/cuda_nvcc/bin/ptxas"), ("bin/ptxas",),
              cu12_distribution="nvidia-cuda-nvcc-cu12"),
    Component("cuobjdump", "nvidia-cuda-cuobjdump",
              ("nvidia/cu13/bin/cuobjdump", "nvidia/cuda_cuobjdump/bin/cuobjdump"), ("bin/cuobjdump",),
              cu12_distribution="nvidia-cuda-cuobjdump-cu12"),
    Component("nvcc", "nvidia-cuda-nvcc", ("nvidia/cu13/bin/nvcc", "nvidia/cuda_nvcc/bin/nvcc"), ("bin/nvcc",),
              cu12_distribution="nvidia-cuda-nvcc-cu12"),
)}


# what the [cpp] extra provides, not the [build] extra: compiling CUDA C++
CPP_COMPONENTS = frozenset({"NVRTC", "CCCL headers", "CUDA runtime headers", "libcudadevrt"})


def environment_cuda_major() -> int:
    """The CUDA major release of this environment's toolchain: 12 when its nvJitLink is CUDA
    12's (``libnvJitLink.so.12`` of nvidia-nvjitlink-cu12), else 13 (also when there is none:
    the [build] extra's default)."""
    found = locate("nvJitLink")
    return 12 if found is not None and found.path.name.endswith(".so.12") else 13


def install_hint(name: str) -> str:
    """The pip package to install for component ``name``, of the environment's CUDA release."""
    component = COMPONENTS[name]
    if component.cu12_distribution and environment_cuda_major() == 12:
        return component.cu12_distribution
    return component.distribution

# what must lie in a directory for it to be the component (a bare include/ is not CCCL)
_MARKERS = {"CCCL headers": "cub/cub.cuh", "CUDA runtime headers": "cuda_runtime.h"}
_TOOLS = frozenset({"ptxas", "cuobjdump", "nvcc"})


@dataclass(frozen=True)
class Located:
    """Where a component was found. ``root`` is the sys.path entry (or toolkit root) it lies
    under; ``origin`` is "environment" or the variable that named the toolkit ("CUDA_HOME")."""

    component: Component
    path: Path
    root: Path
    origin: str


@dataclass(frozen=True)
class LoadedLibrary:
    """A library as the process uses it: ``path`` is the file actually loaded, which differs
    from ``located.path`` when another package loaded its own copy first."""

    located: Located | None
    path: Path


def search_roots() -> list[Path]:
    """The ``sys.path`` directories, in order, each once."""
    roots: list[Path] = []
    seen: set[str] = set()
    for entry in sys.path:
        if not entry:
            continue
        path = Path(entry).resolve()
        if str(path) not in seen and path.is_dir():
            seen.add(str(path))
            roots.append(path)
    return roots


def cuda_toolkit_root() -> tuple[str, Path] | None:
    """(variable, directory) of the CUDA toolkit named by ``CUDA_HOME`` or ``CUDA_PATH``."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(variable, "").strip()
        if value:
            return variable, Path(value)
    return None


def _is_the_component(component: Component, path: Path) -> bool:
    marker = _MARKERS.get(component.name)
    if marker is not None:
        return (path / marker).is_file()
    if component.name in _TOOLS:
        return path.is_file() and os.access(path, os.X_OK)
    return path.is_file()


def locate(name: str) -> Located | None:
    """Where the component ``name`` (a key of ``COMPONENTS``) lies: the first ``sys.path``
    entry that holds it, else the toolkit of ``CUDA_HOME``/``CUDA_PATH``; ``None`` if neither."""
    return _locate(name, tuple(str(r) for r in search_roots()), cuda_toolkit_root())


@functools.lru_cache(maxsize=None)
def _locate(name: str, roots: tuple[str, ...], toolkit: tuple[str, Path] | None) -> Located | None:
    component = COMPONENTS[name]
    for root in roots:
        for rel in component.wheel_paths:
            candidate = Path(root) / rel
            if _is_the_component(component, candidate):
                return Located(component, candidate, Path(root), "environment")
    if toolkit is not None:
        variable, base = toolkit
        for rel in component.toolkit_paths:
            candidate = base / rel
            if _is_the_component(component, candidate):
                return Located(component, candidate, base, variable)
    return None


def require(name: str) -> Located:
    """``locate(name)``, or a ``ToolchainError`` saying which package to install."""
    found = locate(name)
    if found is None:
        raise ToolchainError(missing_message(name))
    return found


def missing_message(name: str) -> str:
    component = COMPONENTS[name]
    toolkit = cuda_toolkit_root()
    where = f"this Python environment ({sys.prefix})"
    if toolkit is not None:
        where += f" or the CUDA toolkit of {toolkit[0]}={toolkit[1]}"
    if name != "nvJitLink" and install_hint(name) != component.distribution:
        return (f"{name} was not found in {where}: pip install {install_hint(name)} (this environment's "
                "toolchain is CUDA 12's: docs/toolchain.md, \"Building for CUDA 12 drivers\", lists its packages)")
    if name in CPP_COMPONENTS:
        return (f"{name} was not found in {where}: pip install {component.distribution} "
                "(or pip install 'oxide-cuda[cpp]'; an isolated build of a project with CUDA C++ installs it "
                "by itself, through get_requires_for_build_wheel)")
    return (f"{name} was not found in {where}: pip install {component.distribution} "
            f"(or pip install 'oxide-cuda[build]'; in an isolated build, list \"oxide-cuda[build]\" "
            f"in [build-system] requires)")


def find_tool(name: str) -> Path | None:
    """A command-line tool (``ptxas``, ``cuobjdump``, ``nvcc``): from the environment or the toolkit,
    else from ``PATH``. Tools run as subprocesses and only read what they are given, so one
    from ``PATH`` cannot mix with the libraries of the build."""
    found = locate(name) if name in _TOOLS else None
    if found is not None:
        return found.path
    on_path = shutil.which(name)
    return Path(on_path) if on_path else None


def _already_loaded(soname: str) -> Path | None:
    """The file of the library with ``soname`` when the process has loaded it already."""
    try:
        ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    except OSError:
        return None
    try:  # the file behind it: /proc/self/maps names every mapped file
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and Path(parts[5].strip()).name.startswith(soname):
                    return Path(parts[5].strip())
    except OSError:
        pass
    return Path(soname)


_loaded: dict[str, LoadedLibrary] = {}


def load_library(name: str) -> LoadedLibrary:
    """Loads the library component ``name`` ("nvJitLink", "NVVM", "NVRTC", "nvFatbin") for
    ``cuda.bindings`` to use; ``ToolchainError`` when it is not there or does not load."""
    if name in _loaded:
        return _loaded[name]
    component = COMPONENTS[name]
    located = locate(name)
    for soname in component.sonames:
        already = _already_loaded(soname)
        if already is not None:
            result = LoadedLibrary(located, already)
            break
    else:
        if located is None:
            raise ToolchainError(missing_message(name))
        try:
            ctypes.CDLL(str(located.path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            if name == "NVRTC":
                # NVRTC dlopens its builtins by soname at the first compile; load the sibling now
                for builtins in sorted(located.path.parent.glob("libnvrtc-builtins.so.*")):
                    ctypes.CDLL(str(builtins), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as exc:
            raise ToolchainError(
                f"{name} at {located.path} could not be loaded ({exc}): reinstall {install_hint(name)}"
            ) from None
        result = LoadedLibrary(located, located.path)
    _loaded[name] = result
    return result
