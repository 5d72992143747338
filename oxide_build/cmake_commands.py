"""What the functions of oxide's CMake package (``cmake/oxideFunctions.cmake``) run at build
time, through ``python -m oxide_build <command>``:

- ``device-lib``: CUDA C++ → one fatbin holding NVRTC's LTO-IR for every arch, the device
  library of ``oxide_add_device_library`` where CMake's CUDA language is off (a pip-only
  machine: NVRTC and the headers come from the wheels). nvJitLink takes it as a link input and
  picks the arch it links for.
- ``build-kernels``: the kernel modules of packages of a project, compiled with the project's
  ``[tool.oxide]`` plus extra link inputs (the device libraries CMake built), into a directory
  laid out as the wheel is (``<package>/_oxide/<module>.json`` and the code), which
  ``oxide_add_kernels`` installs.
- ``archs``: the project's ``[tool.oxide] arch``, for ``nvcc -gencode``.
"""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from oxide.errors import LinkError

__all__ = ["build_device_library", "build_kernel_packages", "project_archs"]


def project_archs(project_dir: Path) -> tuple[str, ...]:
    """The archs a build of ``project_dir`` compiles for (``[tool.oxide] arch``, ``OXIDE_ARCH``)."""
    from oxide_build.config import load_config

    return tuple(load_config(project_dir).arch)


def build_device_library(
    sources: list[Path], output: Path, archs: tuple[str, ...],
    include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (),
) -> Path:
    """Compiles each ``.cu`` of ``sources`` for each arch with NVRTC (``-dlto``) and writes one
    fatbin of their LTO-IR to ``output``. A compile error is a ``LinkError`` with NVRTC's log."""
    from oxide_build.link.fatbin import add_ltoir_fatbin
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    entries: list[tuple[str, str, bytes]] = []
    for source in sources:
        if source.suffix not in (".cu", ".cuh"):
            raise LinkError(f"{source}: a device library's sources are CUDA C++ files (.cu)")
        for arch in archs:
            data = compile_cuda(CudaSource(source.resolve(), include_dirs, defines), arch, "ltoir")
            entries.append((arch, f"{source.stem}.{arch}", data))
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.{os.getpid()}")
    temporary.write_bytes(add_ltoir_fatbin(entries))
    os.replace(temporary, output)
    return output


def build_kernel_packages(
    project_dir: Path, packages: tuple[str, ...], output: Path,
    link_inputs: tuple[str, ...] = (), include_dirs: tuple[str, ...] = (),
) -> int:
    """Compiles the kernel modules of ``packages`` with the project's ``[tool.oxide]`` and the
    extra ``link_inputs`` into ``output`` (wheel layout). Returns the number of modules."""
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    config = load_config(project_dir)
    config = replace(
        config, packages=packages,
        link=(*config.link, *(str(Path(p).resolve()) for p in link_inputs)),
        include_dirs=(*config.include_dirs, *(str(Path(d).resolve()) for d in include_dirs)),
    )
    output.mkdir(parents=True, exist_ok=True)
    return len(compile_project(project_dir, config, output, log=sys.stderr).modules)
