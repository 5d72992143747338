"""Compile on first use, for development trees that have no precompiled artifacts.

The runtime calls ``jit_manifest`` only when no manifest lies next to a kernel's source (or
the one there is stale) and ``oxide_build`` is importable; installed wheels never get here.

The module is compiled with the project's own configuration, read as the wheel build reads it
(``[tool.oxide]`` of the ``pyproject.toml`` above the source tree, then ``OXIDE_ARCH``... except
that the arch is the device's), so bounds checks, fast math, include dirs and link inputs are
the wheel's.

Results are cached under ``<cache dir>/jit/<key>/`` where the key covers the source of the
module and of every tree module it imports, the module name, the arch, the compile options, the
compiler's own code and the toolchain's versions. The C++ inputs a module links (its ``.cu``
files and the headers they include) are recorded with their SHA-256 in the entry's manifest
(``sources``): an entry whose C++ inputs changed since is compiled again. Each entry also
stores the SHA-256 of each of its files (``checksums.json``), checked on every lookup: a
damaged entry is discarded and rebuilt.

An entry is built in a private temporary directory and renamed into place whole, so concurrent
processes compiling the same module never see part of an entry; the loser of the rename race
uses the winner's (identical) entry. A cache directory that is unsafe or read-only is not used:
a ``CacheWarning`` says why, and the module is compiled into a temporary directory of this
process instead.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path

from oxide.runtime.manifest import ModuleManifest, load_manifest, manifest_path

from .cache_location import cache_root
from .compile import CompileOptions, compile_module
from .package.artifacts import write_module_artifacts

__all__ = ["JIT_FORMAT", "cache_root", "jit_compile_options", "jit_manifest", "project_dir_of"]

JIT_FORMAT = "oxide-jit-2"  # bump when the layout of an entry changes
_CHECKSUMS = "checksums.json"


def project_dir_of(tree_root: Path) -> Path | None:
    """The project whose ``pyproject.toml`` configures the source tree rooted at ``tree_root``:
    the tree root itself (flat layout) or, for a ``src/`` tree, the directory above it."""
    if (tree_root / "pyproject.toml").is_file():
        return tree_root
    if tree_root.name == "src" and (tree_root.parent / "pyproject.toml").is_file():
        return tree_root.parent
    return None


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
    root = _tree_root(source_path)
    project = project_dir_of(root)
    options = jit_compile_options(project, arch)
    key = _entry_key(source_path, module_name, root, project, options)
    jit_dir = cache_root() / "jit"
    problem = cache_dir_problem(jit_dir.parent) or cache_dir_problem(jit_dir)
    if problem is not None:
        warn_cache_unusable(jit_dir, problem, "compiling into a temporary directory of this process")
        return _compile_into(_private_dir(), source_path, module_name, root, options)
    entry = jit_dir / key
    found = _valid_entry(entry, source_path, module_name)
    if found is not None:
        return found
    try:
        staging = Path(tempfile.mkdtemp(dir=jit_dir, prefix=f".{key[:8]}."))
    except OSError as exc:
        warn_cache_unusable(jit_dir, f"it is not writable ({exc.strerror or exc})",
                            "compiling into a temporary directory of this process")
        return _compile_into(_private_dir(), source_path, module_name, root, options)
    try:
        _compile_into(staging, source_path, module_name, root, options)
        return _publish(staging, entry, source_path, module_name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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


def _compile_into(directory: Path, source_path: Path, module_name: str, root: Path, options: CompileOptions) -> Path:
    compiled = compile_module(source_path, module_name, options, root=root)
    # write_module_artifacts puts files under directory/_oxide/, next to where the manifest goes
    path = write_module_artifacts(compiled, directory)
    sums = {f.relative_to(directory).as_posix(): _sha256(f) for f in sorted(directory.rglob("*")) if f.is_file()}
    (directory / _CHECKSUMS).write_text(json.dumps({"format": JIT_FORMAT, "files": sums}, sort_keys=True))
    return path


def _publish(staging: Path, entry: Path, source_path: Path, module_name: str) -> Path:
    """Renames the finished ``staging`` directory to ``entry``; when another process got there
    first, its entry is used if it is whole, else replaced."""
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


def _valid_entry(entry: Path, source_path: Path, module_name: str) -> Path | None:
    """The manifest path of ``entry`` when it is whole and its C++ inputs have not changed;
    None when it is missing. A damaged or outdated entry is removed (a concurrent reader keeps
    the files it opened)."""
    path = manifest_path(entry, module_name)
    if not entry.is_dir():
        return None
    manifest = _checked_manifest(entry, path)
    if manifest is not None:
        from oxide.runtime.manifest import changed_source

        if changed_source(source_path, manifest) is None:
            return path
    _discard(entry)
    return None


def _checked_manifest(entry: Path, path: Path) -> ModuleManifest | None:
    try:
        sums = json.loads((entry / _CHECKSUMS).read_text())
        if not isinstance(sums, dict) or sums.get("format") != JIT_FORMAT:
            return None
        files = sums["files"]
        for name, digest in files.items():
            if _sha256(entry / name) != digest:
                return None
        manifest = load_manifest(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    needed = {f"{path.parent.name}/{n}" for n in (*manifest.cubins.values(), *manifest.ptx.values())}
    needed.add(path.relative_to(entry).as_posix())
    return manifest if needed <= set(files) else None


def _discard(entry: Path) -> None:
    """Moves ``entry`` aside (atomically: another process may be looking at it) and deletes it."""
    trash = entry.with_name(f".{entry.name}.{uuid.uuid4().hex}.discarded")
    try:
        os.rename(entry, trash)
    except OSError:
        return  # already gone, or replaced by another process
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


def _tree_root(source_path: Path) -> Path:
    """The directory above the outermost package holding ``source_path``."""
    root = source_path.resolve().parent
    while (root / "__init__.py").is_file():
        root = root.parent
    return root

