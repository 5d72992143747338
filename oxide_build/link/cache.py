"""A content-addressed cache for compile steps (NVRTC, libNVVM, nvJitLink results).

An entry's key is the SHA-256 of everything that decides its bytes: the inputs, the options
and the versions of the tools. Entries live under ``<user cache dir>/compile/<2 hex>/<key>``
(``oxide_build.cache_location.cache_root()``: ``$OXIDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/oxide``, else
``~/.cache/oxide``). Writers write a temporary file in the same directory and rename it, so
concurrent builds never see half an entry and the last writer wins with identical bytes.

The cache is bounded: after a write that takes it over ``max_bytes`` the least recently used
entries (by modification time, refreshed on every hit) are deleted down to 80% of the bound.
``OXIDE_CACHE_MAX_BYTES`` sets the bound (default 2 GiB); ``OXIDE_NO_CACHE=1`` turns it off.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CompileCache", "CacheInfo", "cache_key", "default_cache", "cache_info", "clear_cache"]

DEFAULT_MAX_BYTES = 2 << 30
_SUBDIR = "compile"


def cache_key(*parts: bytes | str) -> str:
    """SHA-256 over ``parts``, each length-prefixed so that no two part lists collide."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheInfo:
    path: Path
    entries: int
    size_bytes: int
    max_bytes: int
    jit_path: Path
    jit_entries: int
    jit_size_bytes: int

    def render(self) -> str:
        return (
            f"compile cache: {self.path}\n"
            f"  {self.entries} entr{'y' if self.entries == 1 else 'ies'}, {_human(self.size_bytes)} "
            f"(bound {_human(self.max_bytes)})\n"
            f"jit cache: {self.jit_path}\n"
            f"  {self.jit_entries} module{'' if self.jit_entries == 1 else 's'}, {_human(self.jit_size_bytes)}"
        )


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


class CompileCache:
    def __init__(self, root: Path | None = None, max_bytes: int | None = None, enabled: bool = True) -> None:
        if root is None:
            from oxide_build.cache_location import cache_root

            root = cache_root() / _SUBDIR
        self.root = Path(root)
        if max_bytes is None:
            env = os.environ.get("OXIDE_CACHE_MAX_BYTES")
            max_bytes = int(env) if env and env.isdigit() else DEFAULT_MAX_BYTES
        self.max_bytes = max_bytes
        self.enabled = enabled and os.environ.get("OXIDE_NO_CACHE", "") in ("", "0")
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        self.hits += 1
        return data

    def put(self, key: str, data: bytes) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return  # a read-only or full cache dir only costs speed
        self._evict_if_needed()

    def _entries(self) -> list[tuple[float, int, Path]]:
        out: list[tuple[float, int, Path]] = []
        if not self.root.is_dir():
            return out
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for entry in sub.iterdir():
                if entry.name.startswith("."):
                    # a writer's temporary file; one older than an hour was abandoned
                    try:
                        if time.time() - entry.stat().st_mtime > 3600:
                            entry.unlink()
                    except OSError:
                        pass
                    continue
                try:
                    st = entry.stat()
                except OSError:
                    continue
                out.append((st.st_mtime, st.st_size, entry))
        return out

    def _evict_if_needed(self) -> None:
        entries = self._entries()
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return
        target = int(self.max_bytes * 0.8)
        for _, size, entry in sorted(entries, key=lambda e: e[0]):
            if total <= target:
                break
            try:
                entry.unlink()
                total -= size
            except OSError:
                pass

    def size(self) -> tuple[int, int]:
        entries = self._entries()
        return len(entries), sum(size for _, size, _ in entries)

    def clear(self) -> int:
        """Deletes every entry; returns how many there were."""
        count, _ = self.size()
        shutil.rmtree(self.root, ignore_errors=True)
        return count


def default_cache(enabled: bool = True) -> CompileCache:
    return CompileCache(enabled=enabled)


def _jit_dir() -> Path:
    from oxide_build.cache_location import cache_root

    return cache_root() / "jit"


def cache_info() -> CacheInfo:
    cache = CompileCache()
    entries, size = cache.size()
    jit = _jit_dir()
    jit_entries = 0
    jit_size = 0
    if jit.is_dir():
        for entry in jit.iterdir():
            if entry.is_dir():
                jit_entries += 1
                for f in entry.rglob("*"):
                    try:
                        jit_size += f.stat().st_size if f.is_file() else 0
                    except OSError:
                        pass
    return CacheInfo(cache.root, entries, size, cache.max_bytes, jit, jit_entries, jit_size)


def clear_cache(jit: bool = True) -> int:
    """Empties the compile cache (and the JIT cache); returns the number of entries removed."""
    removed = CompileCache().clear()
    if jit:
        d = _jit_dir()
        if d.is_dir():
            removed += sum(1 for e in d.iterdir() if e.is_dir())
            shutil.rmtree(d, ignore_errors=True)
    return removed
