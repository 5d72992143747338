"""Making the host backend's sdist an oxide sdist: the sources in, the build outputs out.

setuptools packs ``.py`` files and what ``MANIFEST.in`` names; a kernel module's CUDA C++
sources and headers (``@extern(sources=...)``, ``[tool.oxide] link``) and CMake files would be
missing, and a wheel built from such an sdist would fail to link. scikit-build-core packs
every file git does not ignore, which can include ``_oxide/`` directories an editable install
wrote. So the archive is rewritten:

- every file of the project tree with a source suffix (``.cu``, ``.cuh``, ``.h``, ``.hpp``,
  ... ``.cmake``, ``CMakeLists.txt``) is added when missing (hidden directories, ``build/``,
  ``dist/``, virtual environments and ``_oxide/`` are not searched);
- every ``_oxide/`` and ``__pycache__/`` entry is dropped;
- the file and its top directory are named as PEP 625 says, ``<name>-<version>``, the name
  normalized (lower case, each run of ``-_.`` one ``_``): setuptools before 69.3 writes the
  project name as declared (``pure-kernel-1.2.3.tar.gz``), so the sdist is the same whatever
  setuptools an environment has (next to PyTorch it may be 65.5);
- members are sorted, owned by root, with normalized permissions, and with
  ``SOURCE_DATE_EPOCH`` set every time stamp (tar and gzip) is that time, so the sdist is
  reproducible.

``SOURCES.txt`` of setuptools is left alone: a wheel built from the sdist then has the same
files as one built from the tree.
"""
from __future__ import annotations

import gzip
import io
import os
import tarfile
from email.parser import HeaderParser
from pathlib import Path

from oxide.errors import OxideError
from oxide.runtime.manifest import ARTIFACT_DIR
from oxide_build.package.wheel import normalized_dist_name

__all__ = [
    "SDIST_SOURCE_NAMES", "SDIST_SOURCE_SUFFIXES", "SourceOutsideProject", "check_extern_sources_inside", "extern_sources",
    "normalized_sdist_prefix", "project_sources", "rewrite_sdist",
]

SDIST_SOURCE_SUFFIXES = frozenset({
    ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl", ".c", ".cc", ".cpp", ".cxx", ".cmake",
})
SDIST_SOURCE_NAMES = frozenset({"CMakeLists.txt"})
_SKIP_DIRS = frozenset({"build", "dist", ARTIFACT_DIR, "__pycache__", "venv", "node_modules", "site-packages"})
_DROP_PARTS = frozenset({ARTIFACT_DIR, "__pycache__"})


class SourceOutsideProject(OxideError):
    """An ``@extern`` / ``@extern_kernel`` names a C++ source outside the project: an sdist
    cannot carry it."""


def extern_sources(root: Path, packages: list[str] | None) -> list[tuple[Path, int, str, Path]]:
    """Every ``sources=`` entry of an ``@ox.extern`` / ``@ox.extern_kernel`` in the kernel
    modules under ``root`` (read from the source, nothing imported): (module file, line, the
    entry as written, the file it names)."""
    import ast

    from oxide_build.frontend.decorator_arguments import module_strings
    from oxide_build.frontend.program import extern_source_path
    from oxide_build.scan import ProjectIndex, _names_oxide, scan_tree

    index = ProjectIndex(root)
    found: list[tuple[Path, int, str, Path]] = []
    for scanned in scan_tree(root, packages, index).modules:
        module = index.module(scanned.name)
        if module is None:
            continue
        for node in module.tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and any(_names_oxide(module, dec.func, w) for w in ("extern", "extern_kernel"))):
                    continue
                for kw in dec.keywords:
                    names = module_strings(module, kw.value) if kw.arg == "sources" else None
                    for name in names or []:
                        found.append((module.path, dec.lineno, name, extern_source_path(module.path, name)))
    return found


def check_extern_sources_inside(project_dir: Path, root: Path, packages: list[str] | None) -> None:
    """Fails when a ``sources=`` entry of an ``@ox.extern`` / ``@ox.extern_kernel`` in a kernel
    module of the project lies outside ``project_dir``: the sdist carries the project's files
    only, so a wheel built from it could not link, while the tree's own build did."""
    base = project_dir.resolve()
    for module_path, line, name, path in extern_sources(root, packages):
        if not path.is_relative_to(base):
            raise SourceOutsideProject(
                f"{module_path}:{line}: sources= names {name!r} ({path}), which lies outside "
                f"the project {base}: an sdist carries only the project's files, so a wheel built "
                "from it could not link. Move the file into the project (sources= paths are "
                "relative to the module's directory, or else to the project root)"
            )


def project_sources(project_dir: Path) -> list[str]:
    """The C++, header and CMake files of the project, relative to it (``/``-separated)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(project_dir):
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            if name in SDIST_SOURCE_NAMES or os.path.splitext(name)[1].lower() in SDIST_SOURCE_SUFFIXES:
                found.append((Path(dirpath) / name).relative_to(project_dir).as_posix())
    return found


def _source_date() -> int | None:
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return int(value) if value.isdigit() else None


def normalized_sdist_prefix(prefix: str, pkg_info: bytes | None) -> str:
    """PEP 625's ``<name>-<version>`` for an sdist whose top directory is ``prefix``: the
    name from ``PKG-INFO`` (else the part of ``prefix`` before its last ``-``), normalized; the
    version as the host backend wrote it (setuptools and scikit-build-core both write it
    normalized, and a PEP 440 version has no ``-`` once normalized)."""
    name, sep, version = prefix.rpartition("-")
    if not sep:
        return prefix
    if pkg_info is not None:
        name = HeaderParser().parsestr(pkg_info.decode("utf-8", "replace")).get("Name") or name
    return f"{normalized_dist_name(name.strip())}-{version}"


def _renamed(name: str, prefix: str, new_prefix: str) -> str:
    return new_prefix + name[len(prefix):] if name == prefix or name.startswith(prefix + "/") else name


def rewrite_sdist(sdist: Path, project_dir: Path) -> Path:
    """Rewrites the ``.tar.gz`` sdist ``sdist`` of the project in ``project_dir`` (see above)
    and returns its path: the same, or the PEP 625 name in the same directory (the file
    ``sdist`` is then gone)."""
    members: dict[str, tuple[tarfile.TarInfo, bytes | None]] = {}
    with tarfile.open(sdist, "r:gz") as tf:
        names = tf.getnames()
        old_prefix = names[0].split("/", 1)[0] if names else sdist.name[: -len(".tar.gz")]
        pkg_info = tf.extractfile(f"{old_prefix}/PKG-INFO") if f"{old_prefix}/PKG-INFO" in names else None
        prefix = normalized_sdist_prefix(old_prefix, pkg_info.read() if pkg_info is not None else None)
        for info in tf.getmembers():
            parts = info.name.split("/")
            if _DROP_PARTS.intersection(parts[1:]):
                continue
            data = tf.extractfile(info).read() if info.isfile() else None  # type: ignore[union-attr]
            info.name = _renamed(info.name, old_prefix, prefix)
            if info.islnk():  # a hard link names its target by its path in the archive
                info.linkname = _renamed(info.linkname, old_prefix, prefix)
            members[info.name] = (info, data)
    for rel in project_sources(project_dir):
        name = f"{prefix}/{rel}"
        if name in members:
            continue
        data = (project_dir / rel).read_bytes()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        info.mtime = int((project_dir / rel).stat().st_mtime)
        members[name] = (info, data)
        # parent directories, where the archive lists directories at all
        parent = name.rsplit("/", 1)[0]
        while parent != prefix and any(m.isdir() for m, _ in members.values()) and parent not in members:
            d = tarfile.TarInfo(parent)
            d.type = tarfile.DIRTYPE
            d.mode = 0o755
            members[parent] = (d, None)
            parent = parent.rsplit("/", 1)[0]

    epoch = _source_date()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name in sorted(members):
            info, data = members[name]
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isdir():
                info.mode = 0o755
            elif info.isfile():
                info.mode = 0o755 if info.mode & 0o111 else 0o644
            if epoch is not None:
                info.mtime = epoch
            info.pax_headers = {}
            out.addfile(info, io.BytesIO(data) if data is not None else None)
    target = sdist.with_name(f"{prefix}.tar.gz")
    tmp = sdist.with_name(f".{sdist.name}.{os.getpid()}.tmp")  # concurrent builds never share it
    with open(tmp, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=epoch or 0, compresslevel=9) as gz:
            gz.write(raw.getvalue())
    tmp.replace(target)
    if target != sdist:
        sdist.unlink()
    return target
