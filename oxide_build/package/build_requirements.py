"""What a build environment must add for one project: the CUDA C++ toolchain only for projects
that have C++.

The ``[build]`` extra is the compiler of Python kernels: llvmlite, cuda-bindings, nvJitLink,
libNVVM and libdevice, nvFatbin and ptxas. NVRTC, the CCCL and CUDA runtime headers and cuRAND
(the ``[cpp]`` extra, about a third of the toolchain's size and most of its files) are needed
only to compile CUDA C++: a project whose tree holds ``.cu`` / ``.cuh`` files, that names
``[tool.oxide] link`` inputs or a ``sources=`` of an ``@ox.extern``, or that builds with CMake.
``get_requires_for_build_wheel`` / ``_editable`` return them for such a project, so an isolated
build (pip, build, uv) installs them then and only then, pinned to the release of the
environment's nvJitLink (a producer of LTO-IR must not be newer than the linker).
"""
from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from pathlib import Path

from oxide_build.config import OxideConfig

__all__ = [
    "CPP_EXTRA", "CPP_TOOLCHAIN", "PACKAGING_PIECES", "cpp_toolchain_requirements", "extra_requirements",
    "missing_build_extra", "missing_cpp_toolchain", "needs_cpp_toolchain", "project_has_cpp", "importable",
]

# the [build] extra's pieces that package rather than compile: requirement name -> its module
PACKAGING_PIECES = {"setuptools": "setuptools", "wheel": "wheel", "packaging": "packaging"}

CPP_EXTRA = "cpp"
# the [cpp] extra of oxide-cuda, as pyproject.toml spells it (a test keeps the two equal)
CPP_TOOLCHAIN: tuple[str, ...] = (
    "cuda-toolkit[nvrtc,cccl,cudart,curand]>=13.0.2,<14",
    "nvidia-cuda-nvrtc>=13.0,<14",
    "nvidia-cuda-cccl>=13.0,<14",
    "nvidia-cuda-runtime>=13.0,<14",
    "nvidia-curand>=10.4,<11",
)
_CPP_SOURCE_SUFFIXES = frozenset({".cu", ".cuh"})
_SKIP_DIRS = frozenset({"build", "dist", "_oxide", "__pycache__", "node_modules", "venv", "site-packages"})


def project_has_cpp(project_dir: Path) -> bool:
    """A ``.cu`` or ``.cuh`` file in the project tree (hidden directories, build outputs and
    virtual environments not searched), or a CMake build."""
    if (project_dir / "CMakeLists.txt").is_file():
        return True
    for dirpath, dirnames, filenames in os.walk(project_dir):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS]
        if any(os.path.splitext(f)[1].lower() in _CPP_SOURCE_SUFFIXES for f in filenames):
            return True
    return False


def _names_extern_sources(root: Path, config: OxideConfig) -> bool:
    from oxide_build.package.sdist import extern_sources

    packages = list(config.packages) if config.packages is not None else None
    return bool(extern_sources(root, packages))


def needs_cpp_toolchain(project_dir: Path, config: OxideConfig, root: Path) -> bool:
    """Whether building the project compiles CUDA C++ (NVRTC, CCCL, cuRAND); ``root``: where
    its top-level packages are (``oxide_build.scan.scan_root``)."""
    return (bool(config.link) or config.cmake_kernels or project_has_cpp(project_dir)
            or _names_extern_sources(root, config))


def cpp_toolchain_requirements() -> list[str]:
    """``CPP_TOOLCHAIN`` with NVRTC pinned to the CUDA release of the environment's nvJitLink
    (``nvidia-cuda-nvrtc==13.0.*`` next to nvJitLink 13.0), and cuda-toolkit to the version
    there, so that the pieces installed now match the ones installed before."""
    from importlib.metadata import PackageNotFoundError, version

    out = list(CPP_TOOLCHAIN)
    try:
        major, minor = version("nvidia-nvjitlink").split(".")[:2]
        out[1] = f"nvidia-cuda-nvrtc=={major}.{minor}.*"
    except (PackageNotFoundError, ValueError):
        pass
    try:
        out[0] = f"cuda-toolkit[nvrtc,cccl,cudart,curand]=={version('cuda-toolkit')}"
    except PackageNotFoundError:
        pass
    return out


def missing_cpp_toolchain(project_dir: Path, config: OxideConfig, root: Path) -> list[str]:
    """What to add to this build environment for this project: nothing when it compiles no C++,
    when NVRTC and the CCCL headers are there already, or when the environment's toolchain is
    CUDA 12's (whose packages are named otherwise: docs/toolchain.md)."""
    from oxide_build.toolchain.discovery import environment_cuda_major, locate

    if not needs_cpp_toolchain(project_dir, config, root):
        return []
    if locate("NVRTC") is not None and locate("CCCL headers") is not None:
        return []
    if environment_cuda_major() == 12:
        return []
    return cpp_toolchain_requirements()


def extra_requirements(extra: str) -> list[str]:
    """The requirements of oxide-cuda's extra ``extra``, as its installed metadata lists them
    (the marker ``extra == "..."`` dropped); ``oxide-cuda[extra]`` itself where there is no
    metadata to read."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        lines = requires("oxide-cuda") or []
    except PackageNotFoundError:
        from oxide import __version__

        return [f"oxide-cuda[{extra}]=={__version__}"]
    marker = re.compile(r"\s*extra\s*==\s*[\"']%s[\"']\s*" % re.escape(extra))
    out: list[str] = []
    for line in lines:
        requirement, _, condition = line.partition(";")
        if marker.fullmatch(condition):
            out.append(requirement.strip())
    return out


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    return (match.group(0) if match else requirement).lower().replace("_", "-")


def missing_build_extra(needs_compiler: Callable[[], bool]) -> list[str]:
    """What an environment with oxide-cuda but without its ``[build]`` extra
    (``requires = ["oxide-cuda"]``) must add for this build: the extra's packaging pieces it
    lacks (setuptools, wheel, packaging), and its compiler toolchain (llvmlite, nvJitLink,
    libNVVM, ptxas, nvFatbin) only when ``needs_compiler()`` says that a unit is not in the
    compile cache; nothing where the compiler is installed."""
    from oxide_build.package.module_cache import compiler_installed

    if compiler_installed():
        return []
    requirements = extra_requirements("build")
    out = [r for r in requirements
           if _name(r) in PACKAGING_PIECES and not importable(PACKAGING_PIECES[_name(r)])]
    if needs_compiler():
        out += [r for r in requirements if _name(r) not in PACKAGING_PIECES]
    return out


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here: already imported (whatever its ``__spec__``; a
    module made at run time has none, and find_spec raises ValueError for it) or found."""
    import sys

    return module in sys.modules or importlib.util.find_spec(module) is not None
