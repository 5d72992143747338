"""Compiling every kernel module of a project: what the build backend runs before packaging.

Scans the project (source only, nothing imported), compiles each module that defines a kernel
for the configured archs and writes its artifacts either into a staging directory that mirrors
the package layout of the wheel, or next to the module's source (editable installs).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

from oxide_build.config import OxideConfig

__all__ = ["BuiltModule", "ProjectBuild", "compile_project", "scan_root", "wheel_dir_of"]


@dataclass(frozen=True)
class BuiltModule:
    module: str
    kernels: tuple[str, ...]
    manifest: Path  # where write_module_artifacts put the manifest
    seconds: float


@dataclass(frozen=True)
class ProjectBuild:
    modules: tuple[BuiltModule, ...]
    archs: tuple[str, ...]
    seconds: float

    @property
    def kernel_count(self) -> int:
        return sum(len(m.kernels) for m in self.modules)


def scan_root(project_dir: Path) -> Path:
    """The directory that holds the project's top-level packages: ``src/`` in a src layout."""
    src = project_dir / "src"
    if src.is_dir() and not (src / "__init__.py").exists():
        return src
    return project_dir


def wheel_dir_of(module_name: str, source_path: Path) -> PurePosixPath:
    """The directory, inside a wheel (or site-packages), of the module's source file."""
    parts = module_name.split(".")
    if source_path.name != "__init__.py":
        parts = parts[:-1]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def compile_project(
    project_dir: Path,
    config: OxideConfig,
    staging_dir: Path | None,
    log: TextIO | None = None,
) -> ProjectBuild:
    """Compiles every kernel module under ``project_dir``.

    With ``staging_dir``, artifacts go to ``staging_dir/<package path>/_oxide/``, ready to be
    added to a wheel; without it, next to each module's source file. Prints one line per module
    and a summary to ``log`` (stderr by default). Raises ``oxide.OxideError`` subclasses.
    """
    from oxide_build.compile import compile_module
    from oxide_build.package.artifacts import write_module_artifacts
    from oxide_build.scan import scan_tree

    out = sys.stderr if log is None else log
    root = scan_root(project_dir.resolve())
    started = time.perf_counter()
    scanned = scan_tree(root, list(config.packages) if config.packages is not None else None)
    modules = sorted(scanned.modules, key=lambda m: m.name)
    options = config.compile_options()
    archs = ",".join(options.archs)
    built: list[BuiltModule] = []
    for index, module in enumerate(modules, start=1):
        out.write(f"[{index}/{len(modules)}] {module.name} {archs} … ")
        out.flush()
        t0 = time.perf_counter()
        try:
            compiled = compile_module(Path(module.path), module.name, options, root=root)
        except BaseException:
            out.write("failed\n")
            out.flush()
            raise
        if staging_dir is None:
            module_dir = Path(module.path).parent
        else:
            module_dir = staging_dir.joinpath(*wheel_dir_of(module.name, Path(module.path)).parts)
        manifest = write_module_artifacts(compiled, module_dir)
        seconds = time.perf_counter() - t0
        out.write(f"{seconds * 1000:.0f} ms\n")
        out.flush()
        built.append(BuiltModule(module.name, tuple(module.kernels), manifest, seconds))
    result = ProjectBuild(tuple(built), options.archs, time.perf_counter() - started)
    if built:
        out.write(
            f"oxide: compiled {_plural(result.kernel_count, 'kernel')} in "
            f"{_plural(len(built), 'module')} for {archs} in {result.seconds:.1f} s\n"
        )
    else:
        out.write(f"oxide: no kernels found under {root}\n")
    out.flush()
    return result
