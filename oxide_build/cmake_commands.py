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

A device library made by ``device-lib`` has a sidecar ``<library>.json`` naming its sources,
include directories and defines; ``build-kernels`` compiles those sources once more against the
prototypes of each kernel module (``oxide_build.link.boundary``), so a C++ signature that
disagrees with an ``@extern`` stub (or an export) fails the build naming both sides, as it does
for a ``.cu`` a module names itself. Other prebuilt inputs (nvcc's static libraries) carry no
types: only their symbols are checked, by the link.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from oxide.errors import LinkError

__all__ = ["build_device_library", "build_kernel_packages", "check_device_libraries", "project_archs"]


def project_archs(project_dir: Path) -> tuple[str, ...]:
    """The archs a build of ``project_dir`` compiles for (``[tool.oxide] arch``, ``OXIDE_ARCH``)."""
    from oxide_build.config import load_config

    return tuple(load_config(project_dir).arch)


def build_device_library(
    sources: list[Path], output: Path, archs: tuple[str, ...],
    include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (), depfile: Path | None = None,
) -> Path:
    """Compiles each ``.cu`` of ``sources`` for each arch with NVRTC (``-dlto``) and writes one
    fatbin of their LTO-IR to ``output``; ``depfile``: a Makefile rule naming the sources and
    the user headers they include (CMake's DEPFILE), so an edited header rebuilds it. A compile
    error is a ``LinkError`` with NVRTC's log."""
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
    if depfile is not None:
        from oxide_build.link.nvrtc import source_dependencies

        deps: dict[str, None] = {}
        for source in sources:
            deps.setdefault(str(source.resolve()), None)
            for dep in source_dependencies(source.resolve(), include_dirs):
                deps.setdefault(str(dep), None)
        escaped = [d.replace(" ", "\\ ") for d in [str(output), *deps]]
        depfile.write_text(f"{escaped[0]}: " + " \\\n  ".join(escaped[1:]) + "\n", encoding="utf-8")
    _sidecar(output).write_text(json.dumps({
        "sources": [str(s.resolve()) for s in sources], "include_dirs": list(include_dirs), "defines": list(defines),
    }, indent=1) + "\n", encoding="utf-8")
    return output


def _sidecar(library: Path) -> Path:
    return library.with_name(library.name + ".json")


def check_device_libraries(project_dir: Path, packages: tuple[str, ...], libraries: tuple[str, ...]) -> None:
    """Compiles the sources of each ``device-lib`` library in ``libraries`` against the
    prototypes of each kernel module of ``packages``; a mismatch is a ``LinkError`` naming the
    Python declaration and the C++ line."""
    from oxide_build.scan import scan_root
    from oxide_build.compile import build_ir
    from oxide_build.config import load_config
    from oxide_build.link.boundary import BOUNDARY_HEADER, boundary_decls
    from oxide_build.link.cache import CompileCache
    from oxide_build.link.lto import boundary_headers, cuda_ltoir
    from oxide_build.link.nvrtc import CudaSource
    from oxide_build.scan import scan_tree
    from oxide_build.targets import newest_arch

    specs = []
    for library in libraries:
        sidecar = _sidecar(Path(library))
        if sidecar.is_file():
            specs.append(json.loads(sidecar.read_text(encoding="utf-8")))
    if not specs:
        return
    config = load_config(project_dir)
    options = config.compile_options(project_dir)
    arch = newest_arch(options.archs)
    cache = CompileCache(enabled=options.cache)
    root = scan_root(project_dir.resolve())
    for module in sorted(scan_tree(root, list(packages)).modules, key=lambda m: m.name):
        _, frontend = build_ir(Path(module.path), module.name, options, root)
        decls = boundary_decls(frontend.program)
        if not decls:
            continue
        headers = boundary_headers(decls, module.name)
        for spec in specs:
            for source in spec["sources"]:
                cuda = CudaSource(Path(source), tuple(spec["include_dirs"]), tuple(spec["defines"]), (),
                                  headers, BOUNDARY_HEADER)
                cuda_ltoir(cuda, arch, cache, decls)


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
    check_device_libraries(project_dir, packages, tuple(str(Path(p).resolve()) for p in link_inputs))
    build = compile_project(project_dir, config, output, log=sys.stderr)
    _drop_outside_sources(project_dir, [(m.module, m.manifest) for m in build.modules])
    return len(build.modules)


def _drop_outside_sources(project_dir: Path, manifests: list[tuple[str, Path]]) -> None:
    """Forgets the hashes of inputs outside the project (CMake's build tree: device libraries):
    an installed wheel has none of them to compare, and their paths would make every wheel
    differ."""
    from oxide.abi.manifest import ModuleManifest
    from oxide_build.scan import scan_root

    project = project_dir.resolve()
    root = scan_root(project)
    for module, path in manifests:
        manifest = ModuleManifest.from_json(path.read_text(encoding="utf-8"))
        module_dir = root.joinpath(*module.split(".")[:-1])
        kept = {relative: digest for relative, digest in manifest.sources.items()
                if (module_dir / relative).resolve().is_relative_to(project)}
        if kept != manifest.sources:
            path.write_text(manifest._replace(sources=kept).to_json(), encoding="utf-8")
