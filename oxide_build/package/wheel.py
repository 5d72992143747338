"""Adding compiled artifacts to a wheel that setuptools built.

The wheel is rewritten whole: new files added, ``RECORD`` recomputed (``METADATA`` is the host
backend's: the runtime requirement is the project's to declare, see ``requirement.py``). Entries are sorted (the
``.dist-info`` directory last, ``RECORD`` at the very end) with normalized permissions, and
with ``SOURCE_DATE_EPOCH`` set every timestamp is that time, so two builds of the same sources
give byte-identical wheels. The file, its ``.dist-info`` and ``.data`` directories are named
with the normalized project name (lower case, each run of ``-_.`` one ``_``), as the
binary distribution format says and current setuptools does: older ones (with ``bdist_wheel``
of the wheel package) keep upper-case letters and dots (``My.Pkg-1.0.dist-info``), and a PyTorch environment may have them.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path

from oxide.runtime.manifest import ARTIFACT_DIR

__all__ = ["collect_files", "normalized_dist_name", "rewrite_wheel", "wheel_metadata"]

# zip cannot store times before 1980
_ZIP_EPOCH = 315532800


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _source_date() -> tuple[int, int, int, int, int, int] | None:
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not value:
        return None
    try:
        epoch = int(value)
    except ValueError:
        return None
    t = time.gmtime(max(epoch, _ZIP_EPOCH))
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def collect_files(staging_dir: Path) -> dict[str, bytes]:
    """Every file under ``staging_dir``, keyed by its path relative to it (``/``-separated)."""
    files: dict[str, bytes] = {}
    for path in sorted(staging_dir.rglob("*")):
        if path.is_file():
            files[path.relative_to(staging_dir).as_posix()] = path.read_bytes()
    return files


def wheel_metadata(wheel: Path) -> str:
    """The text of the wheel's ``.dist-info/METADATA``."""
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(f"{_dist_info_dir(zf.namelist())}/METADATA").decode("utf-8")


def _dist_info_dir(names: list[str]) -> str:
    candidates = sorted(
        {n.split("/", 1)[0] for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")}
    )
    if len(candidates) != 1:
        raise ValueError(f"wheel has {len(candidates)} .dist-info directories with a METADATA, expected 1")
    return candidates[0]


def normalized_dist_name(name: str) -> str:
    """A distribution name as wheel and sdist file names spell it: ``My.Pkg`` → ``my_pkg``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _normalized_top_dir(top: str, dist_info: str) -> str:
    """``top`` (a ``<name>-<version>.dist-info`` or ``.data`` directory of the wheel whose
    ``.dist-info`` is ``dist_info``) with the name normalized; anything else unchanged."""
    stem = dist_info[: -len(".dist-info")]
    name, dash, version = stem.rpartition("-")
    if not dash:  # not <name>-<version> (setuptools 61.0 prepares pure_kernel.dist-info): left alone
        return top
    for suffix in (".dist-info", ".data"):
        if top == stem + suffix:
            return f"{normalized_dist_name(name)}-{version}{suffix}"
    return top


def _artifact_owner(name: str) -> str | None:
    """The package directory whose ``_oxide/`` holds ``name`` ("" at the top), else None."""
    parts = name.split("/")
    if ARTIFACT_DIR not in parts[:-1]:
        return None
    return "/".join(parts[:parts.index(ARTIFACT_DIR)])


def rewrite_wheel(
    wheel: Path,
    add: Mapping[str, bytes] | None = None,
    drop_artifact_dirs: bool = False,
) -> Path:
    """Adds ``add`` (archive name → contents; replacing entries of the same name) to ``wheel``,
    recomputes RECORD and
    writes the archive back in a reproducible form, under the normalized name (see above): its
    path is returned, and ``wheel`` is gone when that differs. ``drop_artifact_dirs`` removes the
    ``_oxide/`` entries the host backend copied from the source tree (left there by an
    editable install, perhaps for other archs) in each directory ``add`` writes artifacts to:
    those artifacts are then the ones of ``add``."""
    # only the artifact directories oxide writes are replaced: CMake (oxide_add_kernels) may
    # have installed others
    replaced = {_artifact_owner(name) for name in (add or {})} - {None}
    with zipfile.ZipFile(wheel) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        old_dist_info = _dist_info_dir([i.filename for i in infos])
        dist_info = _normalized_top_dir(old_dist_info, old_dist_info)
        record_name = f"{dist_info}/RECORD"
        entries: dict[str, tuple[bytes, bool, tuple[int, int, int, int, int, int]]] = {}
        for info in infos:
            if info.filename == f"{old_dist_info}/RECORD" or info.filename.startswith(f"{old_dist_info}/RECORD."):
                continue  # RECORD is rewritten; signatures (RECORD.jws/.p7s) would be stale
            if drop_artifact_dirs and _artifact_owner(info.filename) in replaced:
                continue
            executable = bool((info.external_attr >> 16) & 0o111)
            top, sep, rest = info.filename.partition("/")
            name = _normalized_top_dir(top, old_dist_info) + sep + rest if sep else info.filename
            entries[name] = (zf.read(info), executable, info.date_time)

    now = time.localtime()[:6]
    for name, data in (add or {}).items():
        entries[name] = (data, False, (now[0], now[1], now[2], now[3], now[4], now[5]))

    def order(name: str) -> tuple[int, str]:
        return (1 if name.startswith(f"{dist_info}/") else 0, name)

    names = sorted(entries, key=order)
    record = io.StringIO()
    writer = csv.writer(record, delimiter=",", quotechar='"', lineterminator="\n")
    for name in names:
        data = entries[name][0]
        writer.writerow((name, _record_hash(data), len(data)))
    writer.writerow((record_name, "", ""))
    entries[record_name] = (record.getvalue().encode("utf-8"), False, now)
    names.append(record_name)

    fixed_date = _source_date()
    tmp = wheel.with_name(f".{wheel.name}.{os.getpid()}.tmp")  # concurrent builds never share it
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as out:
        for name in names:
            data, executable, stamp = entries[name]
            info = zipfile.ZipInfo(name, date_time=fixed_date or stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so the permission bits below are read
            info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
            out.writestr(info, data, compresslevel=6)
    name, _, tags = wheel.name.partition("-")
    target = wheel.with_name(f"{normalized_dist_name(name)}-{tags}")
    tmp.replace(target)
    if target != wheel:
        wheel.unlink()
    return target
