"""Finds kernels and the functions they reach by reading source files — never importing them.

A module is parsed with ``ast``; its imports and top-level definitions become a symbol table
(``ModuleSource.symbols``) that the frontend resolves names against. Kernels are functions
decorated with ``oxide.kernel``; device functions are the plain functions a kernel reaches
through calls, in the same module or another module of the tree.
"""
from __future__ import annotations

import ast
import operator
import io
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from oxide.errors import CompileError, OxideError, SourceLocation

from .ir.ops import BINARY_OPS_OF_AST
from .project_imports import dotted_name, importing_package, module_file, resolve_relative

__all__ = [
    "scan_root",
    "Symbol",
    "ModuleSource",
    "ScannedModule",
    "ScanResult",
    "PackageNotFound",
    "ProjectIndex",
    "scan_tree",
    "module_name_for",
    "read_source",
]

SKIP_DIRS = frozenset({"build", "dist", "tests", "test", "__pycache__", "node_modules", "venv"})


@dataclass(frozen=True)
class Symbol:
    """What a module-level name refers to, as far as reading the source tells.

    kind: "oxide" (a name from the oxide package: ``target`` is its name, e.g. "f32", or "" for
    the package itself), "module" (a module of the tree: ``target`` is its dotted name),
    "function" (``target`` = "module:function"), "typevar", "constant", "struct" (an ``@oxide.struct``
    class: ``target`` = "module:Class"), "unknown".
    """

    kind: str
    target: str = ""
    node: ast.AST | None = None
    value: int | float | bool | None = None  # a "constant"'s value (folded at scan time)


@dataclass
class ModuleSource:
    name: str
    path: Path
    text: str
    tree: ast.Module
    symbols: dict[str, Symbol] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)  # @kernel and @extern_kernel stubs
    extern_kernels: list[str] = field(default_factory=list)
    exports: dict[str, str] = field(default_factory=dict)  # function name -> C symbol (@device(export=))

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def location(self, node: ast.AST) -> SourceLocation:
        line = getattr(node, "lineno", 0)
        offset = getattr(node, "col_offset", -1)
        lines = self.lines
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        if offset > 0 and not src.isascii():  # ast counts UTF-8 bytes; the caret counts characters
            offset = len(src.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
        return SourceLocation(str(self.path), line, offset + 1, src)

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return CompileError(message, self.location(node), hint)


@dataclass(frozen=True)
class ScannedModule:
    name: str
    path: Path
    kernels: list[str]


@dataclass
class ScanResult:
    root: Path
    modules: list[ScannedModule]


def module_name_for(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` under ``root``: from the path as it is found
    under the root (a module symlinked into the tree from elsewhere is named by its place in the
    tree), else from the resolved paths."""
    try:
        rel = path.absolute().relative_to(root.absolute()).with_suffix("")
    except ValueError:
        rel = path.resolve().relative_to(root.resolve()).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_source(path: Path) -> str:
    """The text of a Python source file, decoded as Python decodes it: UTF-8 unless a BOM or a
    PEP 263 declaration (``# -*- coding: latin-1 -*-``) says otherwise."""
    data = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown encoding, or a declaration that contradicts the BOM
        first_lines = data.split(b"\n", 2)
        line = 1 if b"coding" in first_lines[0] or len(first_lines) < 2 else 2
        text = first_lines[line - 1].decode("utf-8", errors="replace").lstrip("\ufeff").rstrip()
        raise CompileError(f"cannot read the source: {exc}", SourceLocation(str(path), line, 1, text),
                           "declare an encoding Python knows, e.g. `# -*- coding: utf-8 -*-`") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line_end = data.find(b"\n", exc.start)
        source_line = data[line_start:line_end if line_end >= 0 else len(data)].decode(encoding, errors="replace")
        raise CompileError(
            f"the source is not valid {encoding}: byte 0x{data[exc.start]:02x} cannot be decoded",
            SourceLocation(str(path), data.count(b"\n", 0, exc.start) + 1, exc.start - line_start + 1, source_line),
            "save the file as UTF-8, or declare its encoding on the first or second line "
            "(`# -*- coding: latin-1 -*-`, PEP 263)",
        ) from None


class ProjectIndex:
    """The modules of one source tree, parsed on demand and cached by dotted name."""

    def __init__(self, root: Path, texts: Mapping[Path, str] | None = None) -> None:
        self.root = root.resolve()
        self._modules: dict[str, ModuleSource] = {}
        # resolved path -> the text to read for it instead of the file's (a part of a module
        # compiled on its own: oxide_build.package.module_parts)
        self._texts = dict(texts or {})

    def add_file(self, path: Path, name: str) -> ModuleSource:
        if name in self._modules:
            return self._modules[name]
        given = self._texts.get(path.resolve()) if self._texts else None
        text = given if given is not None else read_source(path)
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            line = exc.lineno or 0
            lines = text.splitlines()
            src = lines[line - 1] if 0 < line <= len(lines) else ""
            raise CompileError(
                f"invalid Python syntax: {exc.msg}",
                SourceLocation(str(path), line, exc.offset or 1, src),
                "fix the syntax error; oxide reads the source with Python's own parser",
            ) from None
        module = ModuleSource(name=name, path=path, text=text, tree=tree)
        _collect_symbols(module)
        self._modules[name] = module
        return module

    def find_module_file(self, name: str) -> Path | None:
        return module_file(self.root, name)

    def module(self, name: str) -> ModuleSource | None:
        if name in self._modules:
            return self._modules[name]
        path = self.find_module_file(name)
        if path is None:
            return None
        return self.add_file(path, name)

    def modules(self) -> list[ModuleSource]:
        """Every module parsed so far."""
        return list(self._modules.values())

    def parsed_files(self) -> list[Path]:
        """Every source file parsed so far: the modules a compile read names and code from."""
        return [m.path for m in self._modules.values()]

    def is_tree_module(self, name: str) -> bool:
        return name in self._modules or self.find_module_file(name) is not None


def _is_oxide_module(name: str) -> bool:
    return name == "oxide" or name.startswith("oxide.")


def _collect_symbols(module: ModuleSource) -> None:
    symbols = module.symbols
    for node in module.tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_oxide_module(alias.name):
                    if alias.asname:
                        symbols[alias.asname] = Symbol("oxide", "", node)
                    else:
                        symbols["oxide"] = Symbol("oxide", "", node)
                else:
                    local = alias.asname or alias.name.split(".")[0]
                    module_target = alias.name if alias.asname else alias.name.split(".")[0]
                    symbols[local] = Symbol("module", module_target, node)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                source = resolve_relative(importing_package(module.name, module.path), node.level, node.module)
            for alias in node.names:
                local = alias.asname or alias.name
                if _is_oxide_module(source):
                    symbols[local] = Symbol("oxide", alias.name, node)
                else:
                    # either a submodule or a name defined in `source`; the frontend decides
                    symbols[local] = Symbol("from", f"{source}:{alias.name}", node)
        elif isinstance(node, ast.FunctionDef):
            first = module.functions.get(node.name)
            if first is not None and (node.name in module.kernels or node.name in module.exports
                                      or any(_is_kernel_decorator(module, d) or _is_kernel_decorator(module, d, "extern_kernel")
                                             for d in node.decorator_list)):
                raise module.error(node, f"{node.name!r} is defined twice in this module (first at line {first.lineno}); "
                                         "Python keeps only the last definition",
                                   "rename one of them")
            module.functions[node.name] = node
            symbols[node.name] = Symbol("function", f"{module.name}:{node.name}", node)
            if any(_is_kernel_decorator(module, d) for d in node.decorator_list):
                module.kernels.append(node.name)
            elif any(_is_kernel_decorator(module, d, "extern_kernel") for d in node.decorator_list):
                module.kernels.append(node.name)
                module.extern_kernels.append(node.name)
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and _names_oxide(module, d.func, "device"):
                    for kw in d.keywords:
                        if kw.arg == "export" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                            module.exports[node.name] = kw.value.value
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            assigned = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            # constants defined above this one: `C = A * B`, `NEG = -R`
            known = {n: s.value for n, s in symbols.items() if s.kind == "constant" and s.value is not None}
            for target in assigned:
                if not isinstance(target, ast.Name) or value is None:
                    continue
                folded = constant_value(value, known)
                if isinstance(value, ast.Call) and _names_oxide(module, value.func, "TypeVar"):
                    symbols[target.id] = Symbol("typevar", target.id, node)
                elif folded is not None:
                    symbols[target.id] = Symbol("constant", target.id, node, folded)
                else:
                    symbols[target.id] = Symbol("unknown", target.id, node)
        elif isinstance(node, ast.ClassDef):
            is_struct = any(_names_oxide(module, d, "struct") for d in node.decorator_list)
            symbols[node.name] = Symbol("struct" if is_struct else "unknown", f"{module.name}:{node.name}", node)


# the builtins a constant expression may call (`N = int(1e6)`, `TILE = max(A, B)`)
_CONSTANT_CALLS: dict[str, Any] = {"int": int, "float": float, "min": min, "max": max, "abs": abs}


_CONSTANT_COMPARISONS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def constant_value(node: ast.AST | None, names: Mapping[str, int | float | bool] | None = None
                   ) -> int | float | bool | None:
    """The value of a module-level number constant (``N = 1 << 20``), or None if it is not one.
    ``names``: the values of the constants it may use (``C = A * B``)."""
    try:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Name) and names is not None:
            return names.get(node.id)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONSTANT_CALLS
                and not node.keywords and node.args and (names is None or node.func.id not in names)):
            values = [constant_value(a, names) for a in node.args]
            if any(v is None for v in values):
                return None
            result = _CONSTANT_CALLS[node.func.id](*values)
            return result if isinstance(result, (int, float)) and abs(result) < 1 << 64 else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = constant_value(node.operand, names)
            return None if v is None else not v
        if isinstance(node, ast.BoolOp):  # Python's value: the first falsy (and) / truthy (or) operand
            last: int | float | bool | None = None
            for operand in node.values:
                last = constant_value(operand, names)
                if last is None:
                    return None
                if bool(last) == isinstance(node.op, ast.Or):
                    return last
            return last
        if isinstance(node, ast.Compare) and all(type(op) in _CONSTANT_COMPARISONS for op in node.ops):
            left = constant_value(node.left, names)
            for op, right_node in zip(node.ops, node.comparators):
                right = constant_value(right_node, names)
                if left is None or right is None:
                    return None
                if not _CONSTANT_COMPARISONS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = constant_value(node.test, names)
            return None if test is None else constant_value(node.body if test else node.orelse, names)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = constant_value(node.operand, names)
            if v is None:
                return None
            return -v if isinstance(node.op, ast.USub) else (+v if isinstance(node.op, ast.UAdd) else ~int(v))
        if isinstance(node, ast.BinOp) and (type(node.op) in BINARY_OPS_OF_AST or isinstance(node.op, ast.Pow)):
            a, b = constant_value(node.left, names), constant_value(node.right, names)
            if a is None or b is None:
                return None
            if (isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(b, (int, float)) and b > 64
                    and abs(a) > (1 if isinstance(node.op, ast.Pow) else 0)):
                return None  # past 64 bits anyway; computing 10 ** 10 ** 10 would not end
            result = a ** b if isinstance(node.op, ast.Pow) else BINARY_OPS_OF_AST[type(node.op)].evaluate(a, b)
            return result if isinstance(result, (int, float)) and abs(result) < 1 << 64 else None
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        return None
    return None


def _names_oxide(module: ModuleSource, node: ast.AST, name: str) -> bool:
    """True when ``node`` is a reference to ``oxide.<name>`` (through any import form)."""
    if isinstance(node, ast.Name):
        sym = module.symbols.get(node.id)
        return sym is not None and sym.kind == "oxide" and sym.target == name
    if isinstance(node, ast.Attribute) and node.attr == name:
        dotted = dotted_name(node.value)
        if dotted is None:
            return False
        head = dotted.split(".")[0]
        sym = module.symbols.get(head)
        return sym is not None and sym.kind == "oxide" and sym.target == ""
    return False


def _is_kernel_decorator(module: ModuleSource, node: ast.expr, name: str = "kernel") -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    return _names_oxide(module, node, name)


class PackageNotFound(OxideError):
    """A package named by ``[tool.oxide] packages`` is not under the scan root."""


_DECORATORS = ("kernel", "extern_kernel", "device")


def _reject_nested_kernels(module: ModuleSource) -> None:
    """A ``@kernel`` (or ``@extern_kernel``, ``@device``) on a method or a nested function: the
    build compiles the functions of a module's top level only, so it would be left out of the
    wheel and fail at its first launch; it is an error here instead."""
    def visit(node: ast.AST, outer: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and outer is not None:
                for d in child.decorator_list:
                    for what in _DECORATORS:
                        if _is_kernel_decorator(module, d, what):
                            raise module.error(
                                d, f"@{what} {child.name!r} is defined inside {outer}: oxide compiles the "
                                   "functions of a module's top level only, so it would not be built",
                                f"move {child.name!r} to the top level of {module.path.name}")
            if isinstance(child, ast.ClassDef):
                visit(child, f"class {child.name!r}")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, f"function {child.name!r}")
            elif not isinstance(child, (ast.Lambda, ast.expr)):
                visit(child, outer)

    visit(module.tree, None)


def _iter_sources(root: Path, packages: Sequence[str] | None) -> list[Path]:
    if packages:
        dirs = [root / p.replace(".", "/") for p in packages]
        files: list[Path] = []
        for package, d in zip(packages, dirs):
            if d.is_dir():
                files.extend(sorted(d.rglob("*.py")))
            elif d.with_suffix(".py").is_file():
                files.append(d.with_suffix(".py"))
            else:
                present = sorted(c.name for c in root.iterdir()
                                 if c.is_dir() and (c / "__init__.py").is_file() and not c.name.startswith("."))
                raise PackageNotFound(
                    f"[tool.oxide] packages = {list(packages)!r}: {package!r} is neither a "
                    f"package directory nor a module under {root}; packages there: "
                    + (", ".join(present) if present else "none")
                    + ". Name top-level packages (directories with an __init__.py), or leave packages unset "
                    "to scan them all"
                )
        return files
    result: list[Path] = []
    for child in sorted(root.iterdir()):
        if child.name.startswith(".") or child.name in SKIP_DIRS:
            continue
        if child.is_dir() and (child / "__init__.py").is_file():
            result.extend(
                p for p in sorted(child.rglob("*.py"))
                if not any(part.startswith(".") or part in SKIP_DIRS for part in p.relative_to(root).parts[:-1])
            )
    return result


def scan_tree(root: Path, packages: Sequence[str] | None = None, index: ProjectIndex | None = None) -> ScanResult:
    """Lists the modules under ``root`` that define kernels (read with ``ast``, never imported)."""
    root = root.resolve()
    index = index or ProjectIndex(root)
    modules: list[ScannedModule] = []
    for path in _iter_sources(root, packages):
        if b"@" not in path.read_bytes():
            continue  # no decorator at all: cannot hold a kernel; skip parsing
        name = module_name_for(path, root)
        source = index.add_file(path, name)
        _reject_nested_kernels(source)
        if source.kernels or source.exports:
            modules.append(ScannedModule(name, path, list(source.kernels)))
    return ScanResult(root, modules)


def scan_root(project_dir: Path) -> Path:
    """The directory that holds the project's top-level packages: ``src/`` in a src layout
    (a ``src/`` that holds a Python package; in a CMake project it often holds C++ only)."""
    src = project_dir / "src"
    if src.is_dir() and not (src / "__init__.py").exists():
        if any(child.is_dir() and (child / "__init__.py").is_file() for child in src.iterdir()):
            return src
    return project_dir
