"""Writes a compiled module's artifacts (manifest + code per arch) where the runtime finds them."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from oxide.runtime.manifest import ARTIFACT_DIR, ModuleManifest, manifest_path

if TYPE_CHECKING:
    from oxide_build.compile import CompiledModule

__all__ = ["merge_manifests", "module_files", "module_manifest", "as_fatbin", "write_artifacts", "write_module_artifacts"]


def module_manifest(compiled: CompiledModule) -> ModuleManifest:
    return ModuleManifest(
        module=compiled.module_name,
        source=compiled.source_path.name,
        source_sha256=compiled.source_sha256,
        kernels=compiled.kernels,
        cubins={arch: f"{compiled.module_name}.{arch}.cubin" for arch in sorted(compiled.cubins)},
        ptx={arch: f"{compiled.module_name}.{arch}.ptx" for arch in sorted(compiled.ptx_fallback)},
        error_sites=compiled.error_sites,
        sources=_relative_sources(compiled),
        arrays=compiled.arrays,
        cuda_driver=_needed_driver(compiled),
    )


def _needed_driver(compiled: CompiledModule) -> int:
    """The oldest driver the cubins load on, in cuDriverGetVersion's numbering: that of the
    CUDA major release of the nvJitLink that linked them (minor version compatibility: a
    cubin of any CUDA 13.x loads on every 13.x driver); 0 without cubins."""
    if not compiled.cubins:
        return 0
    from oxide_build.link.nvjitlink import nvjitlink_version

    major = int(nvjitlink_version().split(".")[0])
    return 1000 * major


def _relative_sources(compiled: CompiledModule) -> dict[str, str]:
    """The dependencies' hashes keyed by their path relative to the module's directory, which
    is where the manifest and its source lie in the tree and in the installed wheel alike."""
    base = compiled.source_path.resolve().parent
    return {
        Path(os.path.relpath(path.resolve(), base)).as_posix(): digest
        for path, digest in sorted(compiled.dependencies.items())
    }


def module_files(compiled: CompiledModule) -> tuple[ModuleManifest, dict[str, bytes]]:
    """The manifest and the code files (name inside ``_oxide/`` -> bytes) of a module."""
    manifest = module_manifest(compiled)
    files = {name: compiled.cubins[arch] for arch, name in manifest.cubins.items()}
    files.update({name: compiled.ptx_fallback[arch].encode() for arch, name in manifest.ptx.items()})
    return manifest, files


def merge_manifests(parts: list[ModuleManifest]) -> ModuleManifest:
    """One module's manifests, each for some archs, as one (kernels and error sites do not
    depend on the arch: the first part's are kept)."""
    first = parts[0]
    cubins: dict[str, str] = {}
    ptx: dict[str, str] = {}
    for part in parts:
        cubins.update(part.cubins)
        ptx.update(part.ptx)
    return first._replace(cubins=dict(sorted(cubins.items())), ptx=dict(sorted(ptx.items())))


def as_fatbin(manifest: ModuleManifest, files: dict[str, bytes]) -> tuple[ModuleManifest, dict[str, bytes]]:
    """One fatbin per module (nvFatbin): every cubin, plus the PTX that was to ship; every arch
    of the manifest then names that one file, and the driver picks the code for the device
    when it loads it (exact cubin, else a compatible one, else it JIT-compiles the PTX)."""
    from oxide_build.link.fatbin import make_fatbin
    from oxide_build.targets import is_arch_specific

    if not manifest.cubins and not manifest.ptx:
        return manifest, files
    name = f"{manifest.module}.fatbin"
    # an arch-specific cubin (sm_90a) stays a file of its own, which the runtime chooses by
    # its rule (before sm_90, on that exact arch only) rather than leaving the choice between
    # two cubins of one compute capability to the driver
    own_files = {arch: file for arch, file in manifest.cubins.items() if is_arch_specific(arch)}
    cubins = {arch: files[file] for arch, file in manifest.cubins.items() if arch not in own_files}
    ptx = {arch: files[file].decode() for arch, file in manifest.ptx.items()}
    out = {file: files[file] for file in own_files.values()}
    if cubins or ptx:
        out[name] = make_fatbin(cubins, ptx, manifest.module)
    return (manifest._replace(cubins={a: own_files.get(a, name) for a in manifest.cubins},
                              ptx={a: name for a in manifest.ptx}), out)


def write_artifacts(manifest: ModuleManifest, files: dict[str, bytes], module_dir: Path) -> Path:
    """Writes ``module_dir/_oxide/<module>.json`` and ``files`` beside it; returns the manifest
    path. Each file is written to a temporary file of a unique name and renamed, so a reader
    never sees half a file (the runtime may read them while an editable install rebuilds) and
    concurrent writers (builds, JIT compiles) never trip over each other's temporaries."""
    from oxide_build.link.cache import write_file_atomic

    out = module_dir / ARTIFACT_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        write_file_atomic(out / name, files[name])
    path = manifest_path(module_dir, manifest.module)
    write_file_atomic(path, manifest.to_json().encode())
    return path


def write_module_artifacts(compiled: CompiledModule, module_dir: Path) -> Path:
    """Writes ``module_dir/_oxide/<module>.json`` and its code files; returns the manifest path."""
    manifest, files = module_files(compiled)
    return write_artifacts(manifest, files, module_dir)
