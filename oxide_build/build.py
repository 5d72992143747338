"""Compiling every kernel module of a project: what the build backend runs before packaging.

Scans the project (source only, nothing imported), compiles each module that defines a kernel
for each configured arch (a *unit*: one module for one arch), ``jobs`` units at a time, and
writes the artifacts either into a staging directory that mirrors the package layout of the
wheel, or next to the module's source (editable installs).

Units run in a thread pool: lowering is Python, but the LLVM, NVRTC, libNVVM and nvJitLink
calls release the GIL, and threads start instantly, where a process pool pays an interpreter
start and the compiler's imports per worker (measured on the sample project and a 6-module
project: see ``docs/configuration.md``). Results are merged in a fixed order, so the artifacts
do not depend on ``jobs`` or on which unit finished first. A unit whose inputs did not change
comes from the compile cache (``oxide_build.package.module_cache``).
"""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TextIO

from oxide_build.config import OxideConfig

__all__ = ["BuiltModule", "ProjectBuild", "compile_project", "scan_root", "wheel_dir_of"]


@dataclass(frozen=True)
class BuiltModule:
    module: str
    kernels: tuple[str, ...]
    manifest: Path  # where write_artifacts put the manifest
    seconds: float  # compile time summed over its units


@dataclass(frozen=True)
class ProjectBuild:
    modules: tuple[BuiltModule, ...]
    archs: tuple[str, ...]
    seconds: float
    units: int = 0
    cached: int = 0
    jobs: int = 1

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


def _newest(archs: tuple[str, ...]) -> str:
    return max(archs, key=lambda a: int(a.split("_")[1]))


def compile_project(
    project_dir: Path,
    config: OxideConfig,
    staging_dir: Path | None,
    log: TextIO | None = None,
    jobs: int | None = None,
) -> ProjectBuild:
    """Compiles every kernel module under ``project_dir``.

    With ``staging_dir``, artifacts go to ``staging_dir/<package path>/_oxide/``, ready to be
    added to a wheel; without it, next to each module's source file. Prints one line per unit
    and a summary to ``log`` (stderr by default). ``jobs`` overrides ``config.jobs``. Raises
    ``oxide.OxideError`` subclasses (the first failing unit's; the others are cancelled).
    """
    from oxide_build.link.cache import CompileCache
    from oxide_build.package.artifacts import merge_manifests, write_artifacts
    from oxide_build.package.module_cache import CompileUnit, UnitResult, compile_unit, native_inputs_digest
    from oxide_build.scan import scan_tree

    out = sys.stderr if log is None else log
    project_dir = project_dir.resolve()
    root = scan_root(project_dir)
    started = time.perf_counter()
    scanned = scan_tree(root, list(config.packages) if config.packages is not None else None)
    modules = sorted(scanned.modules, key=lambda m: m.name)
    options = config.compile_options(project_dir)
    archs = ",".join(options.archs)
    newest = _newest(options.archs)
    units = [
        CompileUnit(
            module=m.name, source=Path(m.path), root=root, arch=arch,
            options=replace(options, archs=(arch,), embed_ptx=options.embed_ptx and arch == newest),
        )
        for m in modules
        for arch in options.archs
    ]
    cache = CompileCache(enabled=options.cache)
    native = native_inputs_digest(project_dir, options.link_inputs) if units and cache.enabled else ""
    workers = max(1, min(jobs or config.job_count, len(units) or 1))

    results: dict[int, tuple[UnitResult, float]] = {}
    done_count = 0
    lock = threading.Lock()

    def run(index: int) -> None:
        nonlocal done_count
        unit = units[index]
        t0 = time.perf_counter()
        result = compile_unit(unit, cache, native)
        seconds = time.perf_counter() - t0
        with lock:
            results[index] = (result, seconds)
            done_count += 1
            what = "cached" if result.cached else f"{seconds * 1000:.0f} ms"
            out.write(f"[{done_count}/{len(units)}] {unit.module} {unit.arch} … {what}\n")
            out.flush()

    if workers == 1:
        for i in range(len(units)):
            try:
                run(i)
            except BaseException:
                out.write(f"[{done_count + 1}/{len(units)}] {units[i].module} {units[i].arch} … failed\n")
                out.flush()
                raise
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oxide-compile") as pool:
            futures: dict[Future[None], int] = {pool.submit(run, i): i for i in range(len(units))}
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in finished and f.exception() is not None]
            if failed:
                for f in futures:
                    f.cancel()
                first = min(failed, key=lambda f: futures[f])  # the same error whatever the timing
                unit = units[futures[first]]
                out.write(f"[{done_count + 1}/{len(units)}] {unit.module} {unit.arch} … failed\n")
                out.flush()
                exc = first.exception()
                assert exc is not None
                raise exc

    built: list[BuiltModule] = []
    for module in modules:
        indices = [i for i, u in enumerate(units) if u.module == module.name]
        manifest = merge_manifests([results[i][0].manifest for i in indices])
        files: dict[str, bytes] = {}
        for i in indices:
            files.update(results[i][0].files)
        if staging_dir is None:
            module_dir = Path(module.path).parent
        else:
            module_dir = staging_dir.joinpath(*wheel_dir_of(module.name, Path(module.path)).parts)
        path = write_artifacts(manifest, files, module_dir)
        seconds = sum(results[i][1] for i in indices)
        built.append(BuiltModule(module.name, tuple(module.kernels), path, seconds))
    cached = sum(1 for r, _ in results.values() if r.cached)
    result = ProjectBuild(tuple(built), options.archs, time.perf_counter() - started, len(units), cached, workers)
    if built:
        out.write(
            f"oxide: compiled {_plural(result.kernel_count, 'kernel')} in "
            f"{_plural(len(built), 'module')} for {archs} in {result.seconds:.1f} s "
            f"({_plural(len(units), 'unit')}, {cached} from cache, {_plural(workers, 'job')})\n"
        )
    else:
        out.write(f"oxide: no kernels found under {root}\n")
    out.flush()
    return result
