"""setuptools' flat-layout discovery, told about a project's C++ directories.

With no ``packages`` / ``py-modules`` configured, setuptools discovers the top-level packages
of a flat layout itself, and since PEP 420 any directory counts: ``csrc/`` and ``include/``
next to the Python package make it stop with "Multiple top-level packages discovered in a
flat-layout". A directory that holds no Python file at all is never a package a wheel should
ship (its C++ sources go into the sdist through ``oxide_build.package.sdist``), so before the
host backend runs, such directories are added to the names setuptools' flat-layout finder
excludes by default (its ``DEFAULT_EXCLUDE``, which already lists ``tests``, ``docs``,
``examples``...). A project that configures its packages itself is not affected: setuptools
then runs no discovery.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["exclude_python_free_dirs", "python_free_dirs"]


def _holds_python(directory: Path) -> bool:
    return any(True for _ in directory.rglob("*.py"))


def python_free_dirs(project_dir: Path) -> list[str]:
    """The top-level directories of ``project_dir`` with a name setuptools would take for a
    package and no ``.py`` file anywhere under them (``csrc``, ``include``, ``cmake``...)."""
    found: list[str] = []
    for child in sorted(project_dir.iterdir()):
        if child.is_dir() and not child.is_symlink() and child.name.isidentifier() \
                and not child.name.startswith("_") and not _holds_python(child):
            found.append(child.name)
    return found


def exclude_python_free_dirs(project_dir: Path) -> None:
    """Adds ``python_free_dirs(project_dir)`` to setuptools' flat-layout default excludes, in
    this (hook) process."""
    try:
        from setuptools.discovery import FlatLayoutPackageFinder
    except ImportError:  # a setuptools without automatic discovery (before 61) has nothing to fix
        return
    current = tuple(getattr(FlatLayoutPackageFinder, "DEFAULT_EXCLUDE", ()))
    extra = [pattern for name in python_free_dirs(project_dir) for pattern in (name, f"{name}.*")]
    missing = tuple(p for p in extra if p not in current)
    if missing:
        FlatLayoutPackageFinder.DEFAULT_EXCLUDE = current + missing
