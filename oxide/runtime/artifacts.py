"""Finding a kernel module's compiled code: the manifest next to the source, or a JIT build.

A module ``M`` whose source is ``<dir>/<file>.py`` has its manifest at ``<dir>/_oxide/M.json``
(written by ``oxide_build`` into the wheel). Without one, or when the source changed since the
build (its sha256, or that of any other module of the tree the kernels' code came from, differs
from the manifest's), and with the compiler installed (the ``oxide-cuda[build]`` extra:
``oxide_build`` always ships in the distribution, so its compiler dependency ``llvmlite`` is
what tells) and ``OXIDE_JIT`` not ``"0"``, ``oxide_build.jit.jit_manifest`` compiles the module
into a cache and returns that manifest's path. A stale manifest without a compiler, or whose
recompile fails for want of a toolchain piece, is still used, with one warning per module that
says why.
"""

# Annotations evaluated (no ``from __future__ import annotations``), as typing.NamedTuple wants them.
import importlib
import importlib.util
import os
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from oxide.errors import CudaError
from oxide.runtime import device_choice
from oxide.abi.manifest import ModuleManifest, changed_source, file_sha256, load_manifest, manifest_path

if TYPE_CHECKING:  # type checkers see NamedTuple; oxide.abi.records_base says why not at run time
    from typing import NamedTuple as Record
else:
    from oxide.abi.records_base import Record

__all__ = [
    "StaleCodeWarning",
    "LocatedManifest",
    "kernel_source",
    "file_sha256",
    "jit_enabled",
    "kernel_part",
    "locate_manifest",
    "locate_cpu_module",
    "changed_source",
]


class StaleCodeWarning(RuntimeWarning):
    """The precompiled kernels were built from a different version of their source."""


class LocatedManifest(Record):
    manifest: ModuleManifest
    path: Path  # the manifest file (on the CPU device: the source's path and "#cpu", a key)
    directory: Path  # where its code files are (the manifest's directory)
    jit: bool  # compiled on this machine rather than shipped
    # on the CPU device: the module compiled for the host (what cpu_driver.CpuDriver loads), whose
    # own kernel specs and error sites ``manifest`` holds; None on the GPU
    cpu: Any = None


_lock = _thread.RLock()
_located: dict[tuple[str, str], LocatedManifest] = {}
_warned: set[str] = set()


def kernel_part(located: LocatedManifest, kernel: str) -> LocatedManifest:
    """Where ``kernel``'s code is: ``located`` itself, or, for a kernel of one of the module's
    other parts (``ModuleManifest.parts``: a build compiles a module of many kernels in parts),
    that part's cubins, PTX and error sites. Its ``path`` then ends in ``#part<N>``: the key
    that tells the loaded code of the parts apart (error records, grid barriers)."""
    for number, part in enumerate(located.manifest.parts, 1):
        if kernel in part.kernels:
            manifest = located.manifest._replace(cubins=part.cubins, ptx=part.ptx, error_sites=part.error_sites,
                                                 parts=())
            return located._replace(manifest=manifest, path=Path(f"{located.path}#part{number}"))
    return located


def kernel_source(func: Callable[..., Any]) -> tuple[Path | None, str]:
    """The source file of ``func`` (None if it has none, e.g. a REPL) and its module name."""
    filename = func.__code__.co_filename
    path: Path | None = Path(filename)
    if filename.startswith("<") or not filename:
        path = None
    module = func.__module__ or ""
    if module == "__main__" or not module:
        module = path.stem if path is not None else "__main__"
    return path, module


# What the [build] extra adds that JIT compiling needs at once: oxide_build itself ships in every
# install of oxide-cuda, its compiler backend (llvmlite) only with the extra.
COMPILER_MODULES = ("oxide_build", "llvmlite")


def jit_enabled() -> bool:
    """JIT compiling is allowed (``OXIDE_JIT`` is not ``"0"``) and the compiler (the
    ``oxide-cuda[build]`` extra) is installed."""
    if os.environ.get("OXIDE_JIT", "1").strip() == "0":
        return False
    return _build_installed()


def _build_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in COMPILER_MODULES)


def _jit(source: Path, module: str, arch: Callable[[], str]) -> LocatedManifest:
    jit = importlib.import_module("oxide_build.jit")
    path = Path(jit.jit_manifest(source, module, arch()))
    return LocatedManifest(_read(path, module), path, path.parent, jit=True)


def _read(path: Path, module: str) -> ModuleManifest:
    try:
        return load_manifest(path)
    except (OSError, ValueError) as e:  # ValueError: broken JSON, not UTF-8, not the schema
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise CudaError(
            f"cannot read the kernel manifest of module {module} ({path}): {reason}; rebuild the package "
            "with this version of oxide"
        ) from None


def _no_code_message(source: Path, module: str, expected: Path) -> str:
    if os.environ.get("OXIDE_JIT", "1").strip() == "0" and _build_installed():
        how = "or unset OXIDE_JIT=0 to let oxide_build compile it on first launch"
    else:
        how = "or install oxide-cuda[build] to compile kernels on first launch"
    return (
        f"no precompiled code for module {module}: {expected} does not exist. Build the package "
        f"with its oxide_build backend (pip install . installs it with its kernels compiled), {how}"
    )


def locate_manifest(source: Path | None, module: str, arch: Callable[[], str]) -> LocatedManifest:
    """The manifest to run ``module`` from, found once per module and cached.

    ``arch`` gives the device's arch (e.g. ``"sm_90"``); it is called only to JIT compile,
    because it initializes CUDA. On the CPU device (``device_choice``), the module compiled
    for the host (:func:`locate_cpu_module`), whatever the package ships.
    """
    if device_choice.ON_CPU:
        return locate_cpu_module(source, module)
    key = (str(source), module)
    located = _located.get(key)
    if located is not None:
        return located
    return _cached(_located, key, lambda: _locate(source, module, arch))


def _cached(cache: dict[tuple[str, str], LocatedManifest], key: tuple[str, str],
            make: Callable[[], LocatedManifest]) -> LocatedManifest:
    """``cache[key]``, made by ``make()`` under the lock if no other thread has made it (the
    callers' lock-free ``cache.get`` took every hit: this runs once per module)."""
    with _lock:
        located = cache.get(key)
        if located is None:
            located = make()
            cache[key] = located
        return located


def _locate(source: Path | None, module: str, arch: Callable[[], str]) -> LocatedManifest:
    if source is None:
        raise CudaError(
            f"kernels of module {module} have no source file (defined in a REPL or exec?): oxide "
            "compiles kernels from their source file; put them in a .py file"
        )
    path = manifest_path(source.parent, module)
    if not path.is_file():
        if jit_enabled():
            return _jit(source, module, arch)
        raise CudaError(_no_code_message(source, module, path))
    manifest = _read(path, module)
    built_from = source.parent / manifest.source if manifest.source else source
    changed = changed_source(built_from, manifest)
    if changed is not None:
        how = "install oxide-cuda[build] to recompile on first launch"
        if jit_enabled() and not _rebuild_disabled(built_from):
            from oxide.errors import ToolchainError

            try:
                return _jit(built_from, module, arch)
            except ToolchainError as e:  # a toolchain piece is missing: the old code still runs
                how = f"install what the compiler lacks to recompile on first launch ({e})"
        elif jit_enabled():
            how = "set [tool.oxide] editable-rebuild = true (it is false) to recompile on first launch"
        if module not in _warned:
            _warned.add(module)
            warnings.warn(
                f"oxide: the precompiled kernels of module {module} ({path}) were built from a "
                f"different version of {changed}; running the old code. Rebuild the package "
                f"(pip install .) or {how}.",
                StaleCodeWarning,
                stacklevel=4,
            )
    return LocatedManifest(manifest, path, path.parent, jit=False)


_cpu_located: dict[tuple[str, str], LocatedManifest] = {}


def locate_cpu_module(source: Path | None, module: str) -> LocatedManifest:
    """``module`` compiled for the CPU device from its Python source (``oxide_build.jit.cpu_module``:
    the project's options, cached), once per process: its kernels, error sites and module arrays
    as a manifest without code files, and the compiled module in ``cpu``. The CPU device runs
    no shipped code, so it needs the compiler (``oxide-cuda[build]``) whatever ``OXIDE_JIT`` says."""
    key = (str(source), module)
    located = _cpu_located.get(key)
    if located is not None:
        return located
    return _cached(_cpu_located, key, lambda: _compile_for_cpu(source, module))


def _compile_for_cpu(source: Path | None, module: str) -> LocatedManifest:
    if source is None:
        raise CudaError(
            f"kernels of module {module} have no source file (defined in a REPL or exec?): the CPU device "
            "compiles kernels from their source file; put them in a .py file"
        )
    if not _build_installed():
        raise CudaError(
            f"the CPU device (OXIDE_DEVICE=cpu) compiles module {module} from its Python source, and the "
            "compiler is not installed: pip install oxide-cuda[build]"
        )
    jit = importlib.import_module("oxide_build.jit")
    compiled = jit.cpu_module(source, module)
    manifest = ModuleManifest(
        module=module,
        source=source.name,
        source_sha256=file_sha256(source),
        kernels=tuple(compiled.kernels),
        cubins={},
        error_sites=tuple(compiled.error_sites),
        arrays=tuple(getattr(compiled, "arrays", ())),
    )
    path = Path(f"{source}#cpu")
    return LocatedManifest(manifest, path, source.parent, jit=True, cpu=compiled)


def _rebuild_disabled(source: Path) -> bool:
    """The project of ``source`` sets ``[tool.oxide] editable-rebuild = false`` (or
    ``OXIDE_EDITABLE_REBUILD=0``). Read only for a stale module with the compiler installed."""
    jit = importlib.import_module("oxide_build.jit")
    return not jit.editable_rebuild_enabled(source)


def _reset_for_tests() -> None:
    with _lock:
        _located.clear()
        _cpu_located.clear()
        _warned.clear()
