"""Compile on first use, for development trees that have no precompiled artifacts.

The runtime calls ``jit_manifest`` only when no manifest lies next to a kernel's source (or
the one there is stale) and ``oxide_build`` is importable; installed wheels never get here.

The module is compiled with the project's own configuration, read as the wheel build reads it
(``[tool.oxide]`` of the ``pyproject.toml`` of the source tree), for the device's arch only,
so bounds checks, fast math, include dirs and link inputs are the wheel's. A module whose
kernels need the device's arch-specific target (``sm_90a`` for wgmma on a 9.0 GPU) is compiled
for that target instead.

Results are cached under ``<cache dir>/jit/<key>/<variant>/``. The key covers the source of the
module and of every tree module it imports, the module name, the compile options, the compiler's
own code and the toolchain's versions. Which C++ inputs a module links (its ``.cu`` files and the
headers they include) is known only after a compile: the entry's manifest records each with its
SHA-256 (``sources``), the variant is named after them, and a lookup takes the variant whose
inputs match the files as they are now (so an edited ``.cu`` is compiled again, and two trees
with different C++ keep an entry each). Each entry also stores the SHA-256 of each of its files
(``checksums.json``), checked on every lookup: a damaged entry is discarded and rebuilt. As pip
and ccache do, nothing in the cache is followed through a symbolic link: a key directory, an
entry, a directory or a file in it that is a link (or anything but a plain directory or file), or
a checksum naming a path outside its entry, makes the entry damaged (the link is removed, not
what it points at).

An entry is built in a private temporary directory and renamed into place whole, and a
published entry is never changed, so concurrent processes compiling the same module never see
part of an entry; the loser of the rename race uses the winner's (identical) entry. A cache
directory that is unsafe or read-only is not used: a ``CacheWarning`` says why, and the module
is compiled into a temporary directory of this process instead.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from oxide.runtime.manifest import ModuleManifest, load_manifest, manifest_path

from .cache_location import cache_root
from .compile import ArchRequirementError, CompiledModule, CompileOptions, compile_module
from .package.artifacts import write_module_artifacts

__all__ = ["JIT_FORMAT", "cache_root", "cpu_module", "jit_compile_options", "jit_manifest", "project_dir_of",
           "tree_root"]

JIT_FORMAT = "oxide-jit-3"  # bump when the layout of an entry changes
_CHECKSUMS = "checksums.json"


def project_dir_of(tree_root: Path) -> Path | None:
    """The project whose ``pyproject.toml`` configures the source tree rooted at ``tree_root``:
    the tree root itself (flat layout) or, for a ``src/`` tree, the directory above it."""
    if (tree_root / "pyproject.toml").is_file():
        return tree_root
    if tree_root.name == "src" and (tree_root.parent / "pyproject.toml").is_file():
        return tree_root.parent
    return None


def editable_rebuild_enabled(source_path: Path) -> bool:
    """Whether a stale module of an editable install is compiled again: the project's
    ``[tool.oxide] editable-rebuild`` (``OXIDE_EDITABLE_REBUILD`` overrides it), true when unset
    or when the source belongs to no project. The runtime asks this hook, never the config."""
    from .config import load_config

    project = project_dir_of(tree_root(source_path))
    if project is None:
        return os.environ.get("OXIDE_EDITABLE_REBUILD", "1").strip().lower() not in ("0", "false", "no", "off")
    return load_config(project).editable_rebuild


def jit_compile_options(project_dir: Path | None, arch: str) -> CompileOptions:
    """The options the wheel build would use for this project, for the one arch of the device
    (no PTX fallback, no fatbin: the code is for this machine)."""
    if project_dir is None:
        options = CompileOptions()
    else:
        from .config import load_config

        options = load_config(project_dir).compile_options(project_dir)
    return replace(options, archs=(arch,), embed_ptx=False, fatbin=False)


def jit_manifest(source_path: Path, module_name: str, arch: str) -> Path:
    """Compiles ``source_path`` for ``arch`` (if not cached) and returns its manifest path;
    the code files lie in the same directory as the manifest."""
    from .link.cache import cache_dir_problem, warn_cache_unusable

    source_path = Path(source_path)
    root = tree_root(source_path)
    project = project_dir_of(root)
    options = jit_compile_options(project, arch)
    key = _entry_key(source_path, module_name, root, project, options)
    jit_dir = cache_root() / "jit"
    problem = cache_dir_problem(jit_dir.parent) or cache_dir_problem(jit_dir)
    if problem is not None:
        warn_cache_unusable(jit_dir, problem, _UNCACHED)
        return _write_entry(_private_dir(), _compile_announced(source_path, module_name, options, root, project))
    entries = jit_dir / key
    if entries.is_symlink():  # planted: its entries would be read, and written, through it
        _discard(entries)
    found = _matching_entry(entries, source_path, module_name)
    if found is not None:
        return found
    compiled = _compile_announced(source_path, module_name, options, root, project)
    staging: Path | None = None
    try:
        staging = Path(tempfile.mkdtemp(dir=jit_dir, prefix=f".{key[:8]}."))
        path = _write_entry(staging, compiled)
        return _publish(staging, entries / _variant(load_manifest(path)), source_path, module_name)
    except OSError as exc:  # a read-only or full cache: this process still gets its code
        warn_cache_unusable(jit_dir, f"it cannot be written ({exc.strerror or exc})", _UNCACHED)
        return _write_entry(_private_dir(), compiled)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


_UNCACHED = "compiling into a temporary directory of this process"


def cpu_module(source_path: Path, module_name: str) -> Any:
    """``source_path`` compiled for the CPU device (``oxide_build.backends.cpu``) with the
    project's own options, as :func:`jit_manifest` compiles it for a GPU: the runtime's hook for
    ``OXIDE_DEVICE=cpu`` (``oxide.runtime.artifacts.locate_cpu_module``). The engine caches what
    it compiles."""
    from .cpu_engine import compile_module_for_cpu

    source_path = Path(source_path)
    root = tree_root(source_path)
    options = jit_compile_options(project_dir_of(root), "sm_90")  # the engine sets device="cpu" on them
    return compile_module_for_cpu(source_path, module_name, root, options)


def _editable_verbose(project: Path | None) -> bool:
    """``[tool.oxide] editable-verbose`` (``OXIDE_EDITABLE_VERBOSE``), true when unset or when
    the source belongs to no project."""
    if project is None:
        return os.environ.get("OXIDE_EDITABLE_VERBOSE", "1").strip().lower() not in ("0", "false", "no", "off")
    from .config import load_config

    return load_config(project).editable_verbose


def _compile_announced(source_path: Path, module_name: str, options: CompileOptions, root: Path,
                       project: Path | None) -> CompiledModule:
    """``_compile``; where the module has built code beside it (an editable install, which the
    runtime found stale), one line on stderr before and one after, as scikit-build-core's
    ``editable.verbose`` prints its rebuilds, unless ``editable-verbose = false``."""
    import sys
    import time

    from oxide.runtime.manifest import manifest_path

    if not manifest_path(source_path.parent, module_name).is_file() or not _editable_verbose(project):
        return _compile(source_path, module_name, options, root)
    arch = ",".join(options.archs)
    print(f"oxide: recompiling {module_name} for {arch}: {source_path} (or code it uses) changed since it was "
          "built (editable install)", file=sys.stderr, flush=True)
    started = time.perf_counter()
    compiled = _compile(source_path, module_name, options, root)
    print(f"oxide: recompiled {module_name} in {time.perf_counter() - started:.1f} s (kept in the JIT cache)",
          file=sys.stderr, flush=True)
    return compiled


def _compile(source_path: Path, module_name: str, options: CompileOptions, root: Path) -> CompiledModule:
    """The module compiled for the device's arch; a module whose kernels need the device's
    arch-specific target (wgmma needs sm_90a on a 9.0 GPU) is compiled for that instead, as the
    code is for this one machine (the runtime loads an ``sm_90a`` cubin there)."""
    try:
        return compile_module(source_path, module_name, options, root=root)
    except ArchRequirementError as e:
        if options.archs != (e.required.rstrip("af"),):
            raise
        return compile_module(source_path, module_name, replace(options, archs=(e.required,)), root=root)


def _entry_key(source_path: Path, module_name: str, root: Path, project: Path | None,
               options: CompileOptions) -> str:
    from oxide import __version__

    from .package.module_cache import compiler_digest, imported_tree_modules, location_free_options, toolchain_versions

    digest = hashlib.sha256()
    # the compiler's own code is in the key: a changed compiler never reuses old cubins; so are
    # the tree modules this one imports (its device functions may live there). The C++ inputs
    # are checked against the entry's manifest instead (which files they are is known only
    # after a compile).
    base = project if project is not None else root
    parts = [JIT_FORMAT, module_name, __version__, compiler_digest(), toolchain_versions(),
             json.dumps(location_free_options(options, base), sort_keys=True)]
    for part in parts:
        digest.update(part.encode() + b"\0")
    for name, path in sorted(imported_tree_modules(root, module_name, source_path).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _write_entry(directory: Path, compiled: CompiledModule) -> Path:
    """Writes the manifest and code files of ``compiled`` under ``directory/_oxide/`` and the
    checksum of each; returns the manifest path."""
    path = write_module_artifacts(compiled, directory)
    sums = {f.relative_to(directory).as_posix(): _sha256(f) for f in sorted(directory.rglob("*")) if f.is_file()}
    (directory / _CHECKSUMS).write_text(json.dumps({"format": JIT_FORMAT, "files": sums}, sort_keys=True))
    return path


def _variant(manifest: ModuleManifest) -> str:
    """The name of an entry among those of one key: a digest of the other files its code was
    made from (the C++ inputs and headers, the imported modules), as the manifest records them."""
    return hashlib.sha256(json.dumps(sorted(manifest.sources.items())).encode()).hexdigest()[:16]


def _publish(staging: Path, entry: Path, source_path: Path, module_name: str) -> Path:
    """Renames the finished ``staging`` directory to ``entry``; when another process got there
    first, its entry is used if it is whole, else replaced."""
    entry.parent.mkdir(exist_ok=True, mode=0o700)
    if entry.parent.is_symlink():
        raise OSError(f"{entry.parent} is a symbolic link")
    for _ in range(3):
        try:
            os.rename(staging, entry)
            return manifest_path(entry, module_name)
        except OSError:
            if not entry.exists():
                raise
        found = _valid_entry(entry, source_path, module_name)
        if found is not None:
            return found  # another process published the same entry; ours is dropped
    raise OSError(f"cannot publish the JIT cache entry {entry}")


def _matching_entry(entries: Path, source_path: Path, module_name: str) -> Path | None:
    """The manifest path of the entry under ``entries`` made from the files as they are now."""
    try:
        variants = sorted(p for p in entries.iterdir() if not p.name.startswith("."))
    except OSError:
        return None
    for entry in variants:
        found = _valid_entry(entry, source_path, module_name)
        if found is not None:
            return found
    return None


def _valid_entry(entry: Path, source_path: Path, module_name: str) -> Path | None:
    """The manifest path of ``entry`` when it is whole and made from the files as they are now;
    None otherwise. A damaged entry is removed (a concurrent reader keeps the files it opened);
    one made from other C++ inputs is left for the tree it belongs to."""
    path = manifest_path(entry, module_name)
    if not entry.is_symlink() and not entry.is_dir():
        return None
    manifest = _checked_manifest(entry, path) if _plain_tree(entry) else None
    if manifest is None:
        _discard(entry)
        return None
    from oxide.runtime.manifest import changed_source

    return path if changed_source(source_path, manifest) is None else None


def _checked_manifest(entry: Path, path: Path) -> ModuleManifest | None:
    try:
        sums = json.loads((entry / _CHECKSUMS).read_text())
        if not isinstance(sums, dict) or sums.get("format") != JIT_FORMAT:
            return None
        files = sums["files"]
        for name, digest in files.items():
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or ".." in parts:
                return None  # a file outside the entry
            if _sha256(entry / name) != digest:
                return None
        manifest = load_manifest(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    needed = {f"{path.parent.name}/{n}" for n in (*manifest.cubins.values(), *manifest.ptx.values())}
    needed.add(path.relative_to(entry).as_posix())
    return manifest if needed <= set(files) else None


def _plain_tree(entry: Path) -> bool:
    """Whether ``entry`` and everything under it are plain directories and files: no symbolic
    link (to be followed into someone else's files), no device, FIFO or socket."""
    try:
        if not stat.S_ISDIR(os.lstat(entry).st_mode):
            return False
        for parent, dirs, files in os.walk(entry, followlinks=False, onerror=_raise):
            for name in dirs:
                if not stat.S_ISDIR(os.lstat(os.path.join(parent, name)).st_mode):
                    return False  # a link to a directory (os.walk lists it among the directories)
            for name in files:
                if not stat.S_ISREG(os.lstat(os.path.join(parent, name)).st_mode):
                    return False
    except OSError:
        return False
    return True


def _raise(error: OSError) -> None:
    raise error


def _discard(entry: Path) -> None:
    """Moves ``entry`` aside (atomically: another process may be looking at it) and deletes it
    (a symbolic link itself, never what it points at)."""
    trash = entry.with_name(f".{entry.name}.{uuid.uuid4().hex}.discarded")
    try:
        os.rename(entry, trash)
    except OSError:
        return  # already gone, or replaced by another process
    if trash.is_symlink() or not trash.is_dir():
        trash.unlink(missing_ok=True)
    else:
        shutil.rmtree(trash, ignore_errors=True)


_private: list[Path] = []


def _private_dir() -> Path:
    """A temporary directory of this process, removed at exit (the runtime loads the code
    files from it lazily, once per CUDA context)."""
    path = Path(tempfile.mkdtemp(prefix="oxide-jit-"))
    if not _private:
        atexit.register(_remove_private_dirs)
    _private.append(path)
    return path


def _remove_private_dirs() -> None:
    for path in _private:
        shutil.rmtree(path, ignore_errors=True)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_root(source_path: Path) -> Path:
    """The directory above the outermost package holding ``source_path``."""
    root = source_path.resolve().parent
    while (root / "__init__.py").is_file():
        root = root.parent
    return root

