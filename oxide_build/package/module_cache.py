"""The whole-module step of a build, cached: one kernel module compiled for one arch.

A build compiles each kernel module once per arch (a *unit*). A unit's result (its manifest
and code files) is stored in the compile cache (``oxide_build.link.cache``) under a key made
of everything that decides its bytes:

- the source bytes of the module and of every module of the tree it imports, transitively
  (device functions may live in other modules);
- every CUDA C++ / binary input the project could link (all ``.cu``, header, ``.ltoir``,
  ``.o``, ``.a``, ... files under the project root, and the ``link`` inputs);
- the compile options and the arch;

Paths inside the project enter the key relative to the project directory, so the key does not
depend on where the project lies: a moved checkout, a CI clone or a build from the sdist hits
the entries of an earlier build. (Code that embeds its own path, such as a C++ ``assert`` with
``__FILE__``, then keeps the path of the build that filled the cache, as with ccache's
``base_dir``.)
- the compiler itself (a digest of the ``oxide`` and ``oxide_build`` sources, so a changed
  compiler never reuses old code even at the same version) and the versions of the toolchain
  distributions (llvmlite, cuda-bindings, nvidia-*).

A hit skips the compiler entirely (nothing heavy is even imported), which is what makes a
rebuild with no source change fast.
"""
from __future__ import annotations

import ast
import base64
import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oxide.runtime.manifest import ModuleManifest

from ..project_imports import importing_package, module_file, resolve_relative
from .artifacts import module_files

if TYPE_CHECKING:
    from oxide_build.compile import CompileOptions
    from oxide_build.link.cache import CompileCache
    from oxide_build.package.module_parts import ModulePart

__all__ = [
    "CPP_SUFFIXES",
    "CompileUnit",
    "UnitResult",
    "cached_unit",
    "compile_unit",
    "compiler_digest",
    "compiler_installed",
    "imported_tree_modules",
    "location_free_options",
    "native_inputs_digest",
    "toolchain_versions",
    "unit_cache_key",
    "unit_index_key",
]

_FORMAT = "oxide-unit-2"

# what C++ or binary input a kernel module may link or include
CPP_SUFFIXES = frozenset({
    ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl",
    ".ltoir", ".ptx", ".cubin", ".fatbin", ".o", ".obj", ".a", ".lib",
})
_SKIP_DIRS = frozenset({"build", "dist", "_oxide", "__pycache__", "node_modules", "venv", "site-packages"})
_TOOL_DISTS = (
    "llvmlite", "cuda-bindings", "cuda-pathfinder", "nvidia-nvjitlink", "nvidia-nvvm", "nvidia-cuda-nvrtc",
    "nvidia-cuda-nvcc", "nvidia-cuda-cccl", "nvidia-cuda-runtime", "nvidia-nvfatbin",
)


@dataclass(frozen=True)
class CompileUnit:
    """One kernel module (or one part of its kernels) for one arch; plain data, so a process
    pool can carry it."""

    module: str
    source: Path
    root: Path
    arch: str
    options: CompileOptions  # archs == (arch,); embed_ptx only for the newest arch
    part: ModulePart | None = None  # the part of a split module (package/module_parts.py); None: whole


@dataclass(frozen=True)
class UnitResult:
    manifest: ModuleManifest
    files: dict[str, bytes] = field(default_factory=dict)  # name inside _oxide/ -> bytes
    cached: bool = False
    # a part's: the module's line of each of its kept lines when it was compiled, so that a
    # result taken from the cache has its lines moved to where they are now (module_parts.relocate)
    kept_lines: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        data: dict[str, object] = {
            "format": _FORMAT,
            "manifest": self.manifest.to_json(),
            "files": {name: base64.b64encode(self.files[name]).decode("ascii") for name in sorted(self.files)},
        }
        if self.kept_lines:
            data["kept_lines"] = list(self.kept_lines)
        return json.dumps(data, sort_keys=True).encode()

    @staticmethod
    def from_bytes(data: bytes) -> UnitResult | None:
        try:
            obj = json.loads(data)
            if obj.get("format") != _FORMAT:
                return None
            files = {name: base64.b64decode(text) for name, text in obj["files"].items()}
            kept = tuple(map(int, obj.get("kept_lines", ())))
            return UnitResult(ModuleManifest.from_json(obj["manifest"]), files, cached=True, kept_lines=kept)
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    """SHA-256 over the sources of the ``oxide`` and ``oxide_build`` packages."""
    import oxide
    import oxide_build

    digest = hashlib.sha256()
    for package in (oxide, oxide_build):
        base = Path(str(package.__file__)).resolve().parent
        for path in sorted(base.rglob("*.py")):
            digest.update(path.relative_to(base).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def toolchain_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in _TOOL_DISTS:
        try:
            parts.append(f"{dist}={version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist}=-")
    return ";".join(parts)


def _statements(tree: ast.Module) -> list[ast.stmt]:
    """Every statement of ``tree``, nested ones included (imports are statements: the
    expressions, most of a module's nodes, need no visit)."""
    out: list[ast.stmt] = []
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        out.append(node)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                for child in reversed(children):
                    if isinstance(child, ast.stmt):
                        stack.append(child)
                    else:  # an except handler, a match case: their bodies
                        stack.extend(reversed([c for c in getattr(child, "body", []) if isinstance(c, ast.stmt)]))
    return out


# (path, name, source bytes) -> what it imports: a build asks once per unit, and a module of many
# kernels is split into many units (package/module_parts.py)
_IMPORTS: dict[tuple[str, str, bytes], list[str]] = {}


def _imports(path: Path, name: str) -> list[str]:
    """Dotted names a module imports (``from a import b`` gives ``a`` and ``a.b``)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    key = (str(path), name, hashlib.sha256(data).digest())
    found = _IMPORTS.get(key)
    if found is None:
        found = _IMPORTS[key] = _read_imports(data, path, name)
        if len(_IMPORTS) > 4096:
            _IMPORTS.clear()
    return list(found)


def _read_imports(data: bytes, path: Path, name: str) -> list[str]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return []  # the compiler reports it; the key still has the bytes
    package = importing_package(name, path)
    out: list[str] = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                out += [".".join(parts[: i + 1]) for i in range(len(parts))]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = resolve_relative(package, node.level, node.module)
            else:
                target = node.module or ""
            if target:
                out.append(target)
            out += [f"{target}.{alias.name}" if target else alias.name for alias in node.names]
    return out


def imported_tree_modules(root: Path, module: str, source: Path) -> dict[str, Path]:
    """``module`` and every module under ``root`` it imports, transitively: name -> file."""
    found: dict[str, Path] = {module: source}
    stack = [(module, source)]
    while stack:
        name, path = stack.pop()
        for target in _imports(path, name):
            if target in found or target == "oxide" or target.startswith("oxide."):
                continue
            file = module_file(root, target)
            if file is not None:
                found[target] = file
                stack.append((target, file))
    return found


def _key_path(path: Path | str, base: Path) -> str:
    """``path`` relative to ``base`` when it lies inside it (then the key does not depend on
    where the project is), else as it is."""
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)


def location_free_options(options: CompileOptions, base: Path) -> dict[str, object]:
    """The compile options as plain data for a cache key, with the paths inside ``base`` (the
    project) made relative to it."""
    data = asdict(options)
    for name in ("include_dirs", "link_inputs"):
        data[name] = [_key_path(p, base) for p in data[name]]
    return data


def native_inputs_digest(project_dir: Path, extra: tuple[str, ...] = ()) -> str:
    """SHA-256 over every C++ / binary file under ``project_dir`` and the files ``extra``, each
    named by its path relative to ``project_dir`` (absolute when outside it)."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(project_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for fname in sorted(filenames):
            if os.path.splitext(fname)[1].lower() in CPP_SUFFIXES:
                files.append(Path(dirpath) / fname)
    files += [Path(e) for e in extra]
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            data = b"<missing>"
        digest.update(_key_path(path, project_dir).encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def compiler_installed() -> bool:
    """Whether this environment can compile (llvmlite, of the ``[build]`` extra, is there). An
    isolated build whose units are all in the cache needs no compiler: its frontend is asked
    for the toolchain only when something must be compiled (``oxide_build.package.build_requirements``)."""
    import importlib.util

    return importlib.util.find_spec("llvmlite") is not None


def unit_cache_key(unit: CompileUnit, native_digest: str, project_dir: Path) -> str:
    return _unit_key(unit, native_digest, project_dir, toolchain_versions())


def unit_index_key(unit: CompileUnit, native_digest: str, project_dir: Path) -> str:
    """The key of the unit's entry that names its last compiled result's ``unit_cache_key``:
    the same inputs without the toolchain's versions, which an environment without the
    toolchain cannot know. Such an environment takes the result the toolchain made last."""
    return _unit_key(unit, native_digest, project_dir, "index")


def _unit_key(unit: CompileUnit, native_digest: str, project_dir: Path, toolchain: str) -> str:
    from oxide_build.link.cache import cache_key

    parts: list[bytes | str] = [
        _FORMAT, compiler_digest(), toolchain, native_digest,
        unit.module, unit.arch, json.dumps(location_free_options(unit.options, project_dir), sort_keys=True, default=str),
        unit.source.name,
    ]
    for name, path in sorted(imported_tree_modules(unit.root, unit.module, unit.source).items()):
        if name == unit.module and unit.part is not None:
            # a part: its kept text (the other parts' kernels left out), so an edit there, even
            # one that moves lines, leaves the key alone; with lineinfo the code holds the lines
            part = unit.part
            parts += [name, "part", ",".join(part.kernels), part.kept_text]
            if unit.options.lineinfo:
                parts.append(",".join(map(str, part.kept_lines)))
        else:
            parts += [name, path.read_bytes()]
    return cache_key(*parts)


def cached_unit(
    unit: CompileUnit, cache: CompileCache, native_digest: str, project_dir: Path,
) -> tuple[str | None, UnitResult | None]:
    """The unit's cache key (None when the cache is off) and its cached result, if any. Without
    the compiler (``compiler_installed``), the result the index entry names (``unit_index_key``)."""
    if not cache.enabled:
        return None, None
    if compiler_installed():
        key = unit_cache_key(unit, native_digest, project_dir)
    else:
        named = cache.get(unit_index_key(unit, native_digest, project_dir))
        if named is None:
            return None, None
        key = named.decode("ascii", "replace")
    data = cache.get(key)
    result = UnitResult.from_bytes(data) if data is not None else None
    if result is not None and _outside_input_changed(result.manifest, unit.source, project_dir):
        return key, None  # compiled again, and stored again under the same key
    if result is not None and unit.part is not None:
        from oxide_build.package.module_parts import relocate

        try:  # as the frontend names the module in error sites
            site_file = unit.source.resolve().relative_to(unit.root.resolve()).as_posix()
        except ValueError:
            site_file = unit.source.name
        moved = relocate(result.manifest, site_file, result.kept_lines, unit.part.kept_lines)
        result = UnitResult(moved, result.files, cached=True, kept_lines=unit.part.kept_lines)
    return key, result


def _outside_input_changed(manifest: ModuleManifest, source: Path, project_dir: Path) -> bool:
    """A file the cached code was compiled from that lies outside the project (a ``.cu`` named
    by ``sources=`` with ``..`` or an absolute path, or a header it includes from there) and
    differs now. The key covers the files inside the project only (``native_inputs_digest``);
    the manifest records every input with its SHA-256."""
    base = project_dir.resolve()
    for relative, digest in manifest.sources.items():
        path = (source.parent / relative).resolve()
        if path.is_relative_to(base):
            continue
        try:
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                return True
        except OSError:
            return True
    return False


def compile_unit(unit: CompileUnit) -> UnitResult:
    """Compiles one unit. Raises ``oxide.OxideError``s."""
    from oxide_build.compile import compile_module

    text = unit.part.text if unit.part is not None else None
    compiled = compile_module(unit.source, unit.module, unit.options, root=unit.root, source_text=text)
    manifest, files = module_files(compiled)
    return UnitResult(manifest, files, kept_lines=unit.part.kept_lines if unit.part is not None else ())
