"""Compiling every kernel module of a project: what the build backend runs before packaging.

Scans the project (source only, nothing imported), compiles each module that defines a kernel
for each configured arch (a *unit*: one module for one arch), ``jobs`` units at a time, and
writes the artifacts either into a staging directory that mirrors the package layout of the
wheel, or next to the module's source (editable installs).

Units run in forked worker processes (where ``fork`` exists; elsewhere one after another):
the frontend and lowering are Python and nvJitLink holds the GIL, so threads gained nothing
(16 units of the examples on 2 cores: 1.8 s one at a time, 1.9 s on two threads, 1.1 s on two
forked processes). Results are merged in a fixed order, so the artifacts do not depend on
``jobs`` or on which unit finished first. A unit whose inputs did not change
comes from the compile cache (``oxide_build.package.module_cache``).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TextIO

from oxide.errors import OxideError
from oxide_build.config import OxideConfig
from oxide_build.scan import scan_root
from oxide_build.targets import newest_arch

if TYPE_CHECKING:
    from oxide.runtime.manifest import ModuleManifest
    from oxide_build.config import CompileOptions
    from oxide_build.package.module_cache import CompileUnit, UnitResult
    from oxide_build.package.module_parts import ModulePart
    from oxide_build.scan import ScannedModule

__all__ = ["BuiltModule", "OutputNotWritable", "ProjectBuild", "UnitFailed", "compile_project", "needs_compiler", "scan_root",
           "wheel_dir_of"]  # scan_root: oxide_build.scan


class UnitFailed(OxideError):
    """A unit failed in a worker process: the message is its error's diagnostic, as it was."""


class OutputNotWritable(OxideError):
    """Where the compiled kernels go (next to the sources, for an editable install) cannot be
    written."""


def _unwritable_module_dir(module_path: Path) -> str | None:
    """Why the ``_oxide/`` directory beside ``module_path`` cannot be written, or None."""
    import os

    from oxide.runtime.manifest import ARTIFACT_DIR

    out = module_path.parent / ARTIFACT_DIR
    target = out if out.is_dir() else module_path.parent
    if not os.access(target, os.W_OK | os.X_OK):
        return f"{target} is not writable"
    return None


def _check_in_place_outputs(modules: list[Path]) -> None:
    """An editable install writes next to the sources: a read-only tree fails before anything
    is compiled or written, naming the directory (no half-written ``_oxide/``)."""
    for path in modules:
        problem = _unwritable_module_dir(path)
        if problem is not None:
            raise OutputNotWritable(
                f"cannot write the compiled kernels of {path}: {problem}. An editable install "
                "(pip install -e) compiles them into the source tree, next to each kernel module; "
                "make the tree writable, or install without -e (pip install .)"
            )


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
    jobs: int | None = None,
) -> ProjectBuild:
    """Compiles every kernel module under ``project_dir``.

    With ``staging_dir``, artifacts go to ``staging_dir/<package path>/_oxide/``, ready to be
    added to a wheel; without it, next to each module's source file. Prints one line per unit
    and a summary to ``log`` (stderr by default). ``jobs`` overrides ``config.jobs``. Raises
    ``oxide.OxideError`` subclasses (the first failing unit's; the others are cancelled).
    """
    from oxide_build.link.cache import CompileCache, cache_key
    from oxide_build.package.artifacts import write_artifacts
    from oxide_build.package.module_cache import (
        UnitResult,
        cached_unit,
        compile_unit,
        native_inputs_digest,
        unit_index_key,
    )

    out = sys.stderr if log is None else log
    project_dir = project_dir.resolve()
    started = time.perf_counter()
    root, modules, options, units = _project_units(project_dir, config)
    if staging_dir is None:
        _check_in_place_outputs([Path(m.path) for m in modules])
    archs = ",".join(options.archs)
    cache = CompileCache(enabled=options.cache)
    native = native_inputs_digest(project_dir, options.link_inputs) if units and cache.enabled else ""
    workers = max(1, min(jobs or config.job_count, len(units) or 1))

    results: dict[int, tuple[UnitResult, float]] = {}
    keys: dict[int, str | None] = {}

    progress = _Progress(out, config.shows_debug, config.shows_info)

    def report(index: int, result: UnitResult, seconds: float) -> None:
        results[index] = (result, seconds)
        unit = units[index]
        what = "cached" if result.cached else f"{seconds * 1000:.0f} ms"
        progress.unit(f"[{len(results)}/{len(units)}] {_unit_name(unit)} {unit.arch}", what)
        key = keys.get(index)
        if key is not None and not result.cached:
            cache.put(key, result.to_bytes())
            cache.put(unit_index_key(unit, native, project_dir), key.encode())  # for a build without the compiler

    def report_failure(index: int) -> None:
        unit = units[index]
        progress.failed(f"[{len(results) + 1}/{len(units)}] {_unit_name(unit)} {unit.arch} … failed")

    misses: list[int] = []
    for i, unit in enumerate(units):
        keys[i], hit = cached_unit(unit, cache, native, project_dir)
        if hit is not None:
            report(i, hit, 0.0)
        else:
            misses.append(i)
    if misses:
        _require_toolchain()
    if workers > 1 and len(misses) > 1 and _can_fork():
        # The compiler is imported and initialized once, before the workers are forked, so
        # they start warm; every missing unit (also the two of a module built for two archs)
        # then runs in a worker.
        _warm_compiler()
        _compile_in_processes(units, misses, workers, report, report_failure)
    else:
        for i in misses:
            t0 = time.perf_counter()
            try:
                result = compile_unit(units[i])
            except BaseException:
                report_failure(i)
                raise
            report(i, result, time.perf_counter() - t0)

    built: list[BuiltModule] = []
    for module in modules:
        indices = [i for i, u in enumerate(units) if u.module == module.name]
        unit_keys = [keys.get(i) for i in indices]
        # the module's files (its parts, the fatbins) kept too, under its units' keys: a build
        # with every unit cached then needs no toolchain at all (nvFatbin included)
        whole_key = (cache_key("module-artifacts", str(options.fatbin), *(k for k in unit_keys if k))
                     if cache.enabled and all(unit_keys) else None)
        # (taken only when every unit came from the cache: a unit compiled again under its key, as
        # when a C++ input outside the project changed, makes new files)
        every_cached = all(results[i][0].cached for i in indices)
        stored = cache.get(whole_key) if whole_key is not None and every_cached else None
        kept = UnitResult.from_bytes(stored) if stored is not None else None
        if kept is not None:
            manifest, files = kept.manifest, kept.files
        else:
            manifest, files = _module_artifacts(module.name, [(units[i], results[i][0]) for i in indices], options.fatbin)
            if whole_key is not None:
                cache.put(whole_key, UnitResult(manifest, files).to_bytes())
        if staging_dir is None:
            module_dir = Path(module.path).parent
        else:
            module_dir = staging_dir.joinpath(*wheel_dir_of(module.name, Path(module.path)).parts)
        try:
            path = write_artifacts(manifest, files, module_dir)
        except OSError as exc:
            raise OutputNotWritable(
                f"cannot write the compiled kernels of {module.path} into {module_dir}: "
                f"{exc.strerror or exc}" + ("" if staging_dir is not None else
                "; make the source tree writable, or install without -e (pip install .)")
            ) from None
        seconds = sum(results[i][1] for i in indices)
        built.append(BuiltModule(module.name, tuple(module.kernels), path, seconds))
    progress.done()
    cached = sum(1 for r, _ in results.values() if r.cached)
    build = ProjectBuild(tuple(built), options.archs, time.perf_counter() - started, len(units), cached, workers)
    if config.shows_info:
        if built:
            out.write(
                f"oxide: compiled {_plural(build.kernel_count, 'kernel')} in "
                f"{_plural(len(built), 'module')} for {archs} in {build.seconds:.1f} s "
                f"({_plural(len(units), 'unit')}, {cached} from cache, {_plural(workers, 'job')})\n"
            )
        else:
            out.write(f"oxide: no kernels found under {root}\n")
    out.flush()
    return build


def _project_units(project_dir: Path, config: OxideConfig) -> tuple[Path, list[ScannedModule], CompileOptions,
                                                                    list[CompileUnit]]:
    """The source root, the kernel modules, the compile options and the units of a build."""
    from oxide_build.package.module_cache import CompileUnit
    from oxide_build.scan import scan_tree

    if config.cache_dir is not None:  # the key means OXIDE_CACHE_DIR, for every cache this build opens
        import os

        os.environ["OXIDE_CACHE_DIR"] = str((project_dir / config.cache_dir).resolve())
    root = scan_root(project_dir)
    scanned = scan_tree(root, list(config.packages) if config.packages is not None else None)
    modules = sorted(scanned.modules, key=lambda m: m.name)
    options = config.compile_options(project_dir)
    newest = newest_arch(options.archs)
    units = [
        CompileUnit(
            module=m.name, source=Path(m.path), root=root, arch=arch,
            options=replace(options, archs=(arch,), embed_ptx=options.embed_ptx and arch == newest, fatbin=False),
            part=part,
        )
        for m in modules
        for part in _module_parts(m, root, options)
        for arch in options.archs
    ]
    return root, modules, options, units


def needs_compiler(project_dir: Path, config: OxideConfig) -> bool:
    """Whether a build of the project compiles anything: a unit that is not in the compile
    cache (or the cache is off), or kernels that CMake compiles. A build that needs nothing
    compiled takes every unit from the cache and needs no toolchain (an isolated rebuild)."""
    from oxide_build.link.cache import CompileCache
    from oxide_build.package.module_cache import cached_unit, native_inputs_digest

    if config.cmake_kernels:
        return True
    project_dir = project_dir.resolve()
    _, _, options, units = _project_units(project_dir, config)
    if not units:
        return False
    cache = CompileCache(enabled=options.cache)
    if not cache.enabled:
        return True
    native = native_inputs_digest(project_dir, options.link_inputs)
    return any(cached_unit(unit, cache, native, project_dir)[1] is None for unit in units)


def _module_parts(module: ScannedModule, root: Path, options: CompileOptions) -> list[ModulePart | None]:
    """The parts a module's kernels are compiled in (``oxide_build.package.module_parts``);
    ``[None]``: the module compiles whole."""
    from oxide_build.package.module_cache import imported_tree_modules
    from oxide_build.package.module_parts import split_module
    from oxide_build.scan import read_source

    source = Path(module.path)
    tree = imported_tree_modules(root, module.name, source)
    texts = [read_source(path) for name, path in sorted(tree.items()) if name != module.name]
    parts = split_module(source, list(module.kernels), texts, bool(options.link_inputs))
    return list(parts) if parts is not None else [None]


def _unit_name(unit: CompileUnit) -> str:
    return unit.module if unit.part is None else f"{unit.module}[{unit.part.kernels[0]}..{unit.part.kernels[-1]}]"


def _module_artifacts(module: str, done: list[tuple[CompileUnit, UnitResult]],
                      fatbin: bool) -> tuple[ModuleManifest, dict[str, bytes]]:
    """One module's manifest and code files from its units' results (each part for each arch):
    the first part's code under the module's names, each other part's under its own
    (``part_file_name``) and in ``ModuleManifest.parts``; the kernels of every part, in source
    order."""
    from oxide.abi.manifest import ModulePart as ManifestPart
    from oxide_build.package.artifacts import as_fatbin, merge_manifests
    from oxide_build.package.module_parts import part_file_name

    numbers = sorted({u.part.number if u.part is not None else 0 for u, _ in done})
    merged: list[tuple[ModuleManifest, dict[str, bytes]]] = []
    for number in numbers:
        mine = [r for u, r in done if (u.part.number if u.part is not None else 0) == number]
        manifest = merge_manifests([r.manifest for r in mine])
        files: dict[str, bytes] = {}
        for r in mine:
            files.update(r.files)
        if fatbin:
            manifest, files = as_fatbin(manifest, files)
        if number:
            rename = {name: part_file_name(name, module, number) for name in files}
            files = {rename[name]: data for name, data in files.items()}
            manifest = manifest._replace(cubins={a: rename[f] for a, f in manifest.cubins.items()},
                                         ptx={a: rename[f] for a, f in manifest.ptx.items()})
        merged.append((manifest, files))
    first, files = merged[0]
    if len(merged) == 1:
        return first, files
    # a part taken from the cache was compiled from an earlier text of the module: the manifest
    # records the text now (the kept texts of the parts, which their keys cover, make it up)
    source = next(u.source for u, _ in done)
    first = first._replace(source_sha256=hashlib.sha256(source.read_bytes()).hexdigest())
    sources: dict[str, str] = {}
    for manifest, part_files in merged:
        sources.update(manifest.sources)
        files.update(part_files)
    parts = tuple(ManifestPart(tuple(dict.fromkeys(k.name for k in m.kernels)), m.cubins, m.ptx, m.error_sites)
                  for m, _ in merged[1:])
    return first._replace(kernels=tuple(k for m, _ in merged for k in m.kernels), sources=dict(sorted(sources.items())),
                          parts=parts), files


class _Progress:
    """What a build prints per unit: with ``verbose``, a line per unit and its time; else, on a
    terminal and with ``live`` (``logging-level`` INFO or more), one line rewritten in place
    (``[3/40] pkg.mod sm_90``) and erased at the end, and in a log (not a terminal: pip, CI)
    nothing, so that a log holds the summary line only. A failed unit is always named."""

    def __init__(self, out: TextIO, verbose: bool, live: bool = True) -> None:
        self.out = out
        self.verbose = verbose
        isatty = getattr(out, "isatty", None)
        self.live = live and not verbose and callable(isatty) and bool(isatty())
        self.shown = False

    def unit(self, what: str, result: str) -> None:
        if self.verbose:
            self.out.write(f"{what} … {result}\n")
        elif self.live:
            self.out.write(f"\r\033[K{what}")
            self.shown = True
        else:
            return
        self.out.flush()

    def failed(self, line: str) -> None:
        self.done()
        self.out.write(line + "\n")
        self.out.flush()

    def done(self) -> None:
        if self.shown:
            self.out.write("\r\033[K")
            self.out.flush()
            self.shown = False


def _warm_compiler() -> None:
    """Imports the compiler's stages and loads LLVM's NVPTX target and nvJitLink, what every
    unit needs first (NVRTC and libNVVM load in the workers that need them)."""
    import oxide_build.compile  # noqa: F401
    import oxide_build.frontend  # noqa: F401
    import oxide_build.lower.llvm  # noqa: F401
    from oxide_build.backends.nvptx import llvm_version
    from oxide_build.link.nvjitlink import nvjitlink_version

    llvm_version()
    try:
        nvjitlink_version()
    except OxideError:
        pass  # a missing nvJitLink is reported by the unit that needs it


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _compile_unit_timed(unit: CompileUnit) -> tuple[UnitResult | None, float, str | None]:
    """``compile_unit`` for a worker: an ``OxideError`` comes back as its text (a
    ``CompileError`` does not survive pickling with its source location)."""
    from oxide_build.package.module_cache import compile_unit

    t0 = time.perf_counter()
    try:
        result = compile_unit(unit)
    except OxideError as exc:
        return None, time.perf_counter() - t0, str(exc)
    return result, time.perf_counter() - t0, None


def _compile_in_processes(
    units: list[CompileUnit],
    indices: list[int],
    workers: int,
    report: Callable[[int, UnitResult, float], None],
    report_failure: Callable[[int], None],
    compile_timed: Callable[[CompileUnit], tuple[UnitResult | None, float, str | None]] | None = None,
) -> None:
    """Compiles ``units[i]`` for ``i`` in ``indices`` in forked worker processes, calling
    ``report`` for each unit as soon as it is done (the progress line follows the workers).

    Processes, not threads: the frontend and lowering are Python, and nvJitLink holds the GIL;
    with threads two jobs took as long as one. Forked from a parent that has initialized the
    compiler (``_warm_compiler``), the workers start at once. ``compile_timed``:
    ``_compile_unit_timed`` unless a test gives its own (a module-level function).
    """
    compile_timed = compile_timed or _compile_unit_timed
    context = multiprocessing.get_context("fork")
    failures: dict[int, str] = {}
    with ProcessPoolExecutor(max_workers=min(workers, len(indices)), mp_context=context) as pool:
        pending: dict[Future[tuple[UnitResult | None, float, str | None]], int] = {
            pool.submit(compile_timed, units[i]): i for i in indices
        }
        while pending:
            # FIRST_COMPLETED: a worker returns its error as a value, so waiting for the first
            # exception waited for every unit, and the progress came all at once at the end
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                result, seconds, error = future.result()
                if error is not None or result is None:
                    failures[index] = error or "compile failed"
                else:
                    report(index, result, seconds)
            if failures:
                for future in pending:
                    future.cancel()
                pool.shutdown(wait=True, cancel_futures=True)
                break
    if failures:
        first = min(failures)  # the same error whichever worker finished first
        report_failure(first)
        raise UnitFailed(failures[first])


def _require_toolchain() -> None:
    """A missing compiler fails with the pip package to install, not an ImportError deep in
    the compiler."""
    from oxide.errors import ToolchainError

    try:
        import llvmlite.binding  # noqa: F401
    except ImportError as exc:
        raise ToolchainError(
            f"llvmlite is not installed: pip install 'oxide-cuda[build]' (or pip install llvmlite) ({exc})"
        ) from None
    try:
        import cuda.bindings  # noqa: F401
    except ImportError as exc:
        raise ToolchainError(
            f"cuda-bindings is not installed: pip install 'oxide-cuda[build]' (or pip install cuda-bindings) ({exc})"
        ) from None
