"""Writes a compiled module's artifacts (manifest + code per arch) where the runtime finds them."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oxide.runtime.manifest import ARTIFACT_DIR, ModuleManifest, manifest_path

if TYPE_CHECKING:
    from oxide_build.compile import CompiledModule

__all__ = ["module_manifest", "write_module_artifacts"]


def module_manifest(compiled: CompiledModule) -> ModuleManifest:
    return ModuleManifest(
        module=compiled.module_name,
        source=compiled.source_path.name,
        source_sha256=compiled.source_sha256,
        kernels=compiled.kernels,
        cubins={arch: f"{compiled.module_name}.{arch}.cubin" for arch in sorted(compiled.cubins)},
        ptx={arch: f"{compiled.module_name}.{arch}.ptx" for arch in sorted(compiled.ptx_fallback)},
        error_sites=compiled.error_sites,
    )


def write_module_artifacts(compiled: CompiledModule, module_dir: Path) -> Path:
    """Writes ``module_dir/_oxide/<module>.json`` and its code files; returns the manifest path.

    Files are written to a temporary name and renamed, so a reader never sees half a file.
    """
    out = module_dir / ARTIFACT_DIR
    out.mkdir(parents=True, exist_ok=True)
    manifest = module_manifest(compiled)
    for arch, name in manifest.cubins.items():
        _write_atomic(out / name, compiled.cubins[arch])
    for arch, name in manifest.ptx.items():
        _write_atomic(out / name, compiled.ptx_fallback[arch].encode())
    path = manifest_path(module_dir, compiled.module_name)
    _write_atomic(path, manifest.to_json().encode())
    return path


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
