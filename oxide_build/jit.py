"""Compile on first use, for development trees that have no precompiled artifacts.

The runtime calls ``jit_manifest`` only when no manifest lies next to a kernel's source (or
the one there is stale) and ``oxide_build`` is importable; installed wheels never get here.
Results are cached under the user cache dir, keyed by the source bytes, module, arch and the
oxide version, and written with atomic renames so concurrent processes are safe.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from oxide import __version__
from oxide.runtime.manifest import manifest_path

from .cache_location import cache_root
from .compile import CompileOptions, compile_module
from .package.artifacts import write_module_artifacts

__all__ = ["jit_manifest", "cache_root"]


def jit_manifest(source_path: Path, module_name: str, arch: str) -> Path:
    """Compiles ``source_path`` for ``arch`` (if not cached) and returns its manifest path;
    the code files lie in the same directory as the manifest."""
    source_path = Path(source_path)
    digest = hashlib.sha256()
    from .package.module_cache import compiler_digest, imported_tree_modules

    root = _tree_root(source_path)
    # the compiler's own code is in the key: a changed compiler never reuses old cubins; so are
    # the tree modules this one imports (its device functions may live there)
    for part in (source_path.read_bytes(), module_name.encode(), arch.encode(), __version__.encode(),
                 compiler_digest().encode()):
        digest.update(part)
        digest.update(b"\0")
    for name, path in sorted(imported_tree_modules(root, module_name, source_path).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    entry = cache_root() / "jit" / digest.hexdigest()[:32]
    path = manifest_path(entry, module_name)
    if path.is_file():
        return path
    compiled = compile_module(source_path, module_name, CompileOptions(archs=(arch,)), root=root)
    # write_module_artifacts puts files under entry/_oxide/, next to where the manifest goes
    return write_module_artifacts(compiled, entry)


def _tree_root(source_path: Path) -> Path:
    """The directory above the outermost package holding ``source_path``."""
    root = source_path.resolve().parent
    while (root / "__init__.py").is_file():
        root = root.parent
    return root
