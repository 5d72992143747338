"""How a module of the project's source tree is found and how its imports resolve: one answer
for the scanner (which reads device functions from imported modules) and for the compile
cache (whose key holds the bytes of every module a compile may read). A leaf module."""
from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["module_file", "importing_package", "resolve_relative", "dotted_name"]


def module_file(root: Path, name: str) -> Path | None:
    """The file of module ``name`` (``a.b``: ``root/a/b.py`` or ``root/a/b/__init__.py``)."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def importing_package(name: str, path: Path) -> list[str]:
    """The package a relative import in module ``name`` (file ``path``) starts from."""
    parts = name.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def resolve_relative(package: list[str], level: int, target: str | None) -> str:
    """``from ..x import y`` (level 2, target "x") in ``package``: the absolute module name."""
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, target] if target else base)


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None
