"""A content-addressed cache for compile steps (NVRTC, libNVVM, nvJitLink results).

An entry's key is the SHA-256 of everything that decides its bytes: the inputs, the options
and the versions of the tools. Entries live under ``<user cache dir>/compile/<2 hex>/<key>``
(``oxide_build.cache_location.cache_root()``: ``$OXIDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/oxide``, else
``~/.cache/oxide``). Writers write a uniquely named temporary file in the same directory and
rename it, so concurrent builds never see half an entry and the last writer wins with identical
bytes. Each entry starts with the SHA-256 of its payload, checked on every read: a damaged entry
(a full disk, a crash, a bad copy) is deleted and counts as a miss, so it is rebuilt.

The cache directory is checked before use, the way pip and ccache check theirs (see
``cache_dir_problem``): one that is not a directory, not writable, owned by another user, or
writable by group or others is not used; a ``CacheWarning`` says why and what to do, and the
build goes on without the cache (anyone who can write there could swap the code you run).

The cache is bounded: after a write that takes it over ``max_bytes`` the least recently used
entries (by modification time, refreshed on every hit) are deleted down to 80% of the bound.
``OXIDE_CACHE_MAX_BYTES`` sets the bound (default 2 GiB); ``OXIDE_NO_CACHE=1`` turns it off.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CacheInfo",
    "CacheWarning",
    "CompileCache",
    "cache_dir_problem",
    "cache_info",
    "cache_key",
    "clear_cache",
    "default_cache",
    "usable_cache_dir",
    "warn_cache_unusable",
    "write_file_atomic",
]

DEFAULT_MAX_BYTES = 2 << 30
_SUBDIR = "compile"
_MAGIC = b"oxide-cache-2\n"  # then the payload's SHA-256 (32 bytes), then the payload


class CacheWarning(UserWarning):
    """A cache directory cannot be used safely; oxide compiles without it."""


def cache_dir_problem(path: Path) -> str | None:
    """Why ``path`` must not hold cached compiler output, or None when it may (it is created,
    mode 0700, when missing). Like pip and ccache: it must be a directory, writable, owned by
    the current user and not writable by group or others, because whatever is found there is
    loaded onto the GPU as it is. A directory writable by the user's private group (the
    user's primary group with no other member) counts as private."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        for above in path.parents:
            if above.exists():
                if not above.is_dir():
                    return f"{above} is a file, not a directory: remove it, or point OXIDE_CACHE_DIR at a directory"
                break
        return f"it cannot be created ({exc.strerror or exc})"
    try:
        st = path.stat()
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is a file, not a directory: remove it, or point OXIDE_CACHE_DIR at a directory"
    if hasattr(os, "geteuid"):
        uid = os.geteuid()
        if st.st_uid != uid:
            return (f"it is owned by another user (uid {st.st_uid}, you are uid {uid}): use a directory "
                    "of your own (OXIDE_CACHE_DIR)")
        group_writable = bool(st.st_mode & stat.S_IWGRP) and not _private_group(st.st_gid, uid)
        if st.st_mode & stat.S_IWOTH or group_writable:
            return (f"it is writable by {'group and others' if st.st_mode & stat.S_IWOTH else 'its group'} "
                    f"(mode {stat.S_IMODE(st.st_mode):o}), so others could replace the code you run: "
                    f"chmod go-w {path}, or use a private directory (OXIDE_CACHE_DIR)")
    if not os.access(path, os.W_OK | os.X_OK):
        return "it is not writable: make it writable, or point OXIDE_CACHE_DIR at a writable directory"
    return None


def _private_group(gid: int, uid: int) -> bool:
    """Is ``gid`` the user's own group (a user private group: the default on Debian and
    Ubuntu, whose umask 002 makes directories group-writable) with no other member?"""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return user.pw_gid == gid and set(group.gr_mem) <= {user.pw_name}


_warned: set[tuple[str, str]] = set()


def warn_cache_unusable(path: Path, problem: str, what: str = "compiling without the cache") -> None:
    """One ``CacheWarning`` per directory and problem per process."""
    if (str(path), problem) in _warned:
        return
    _warned.add((str(path), problem))
    warnings.warn(f"oxide: not using the cache directory {path}: {problem}; {what}", CacheWarning, stacklevel=3)


def usable_cache_dir(path: Path) -> bool:
    """True when ``path`` passes ``cache_dir_problem``; otherwise warns once and returns False."""
    problem = cache_dir_problem(path)
    if problem is None:
        return True
    warn_cache_unusable(path, problem)
    return False


def write_file_atomic(path: Path, data: bytes) -> None:
    """Writes ``path`` through a uniquely named temporary file in its directory and an atomic
    rename: a reader sees the old file or the new one, never a part, and concurrent writers
    (several processes building or JIT-compiling the same module) never share a temporary."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
        checked: tuple[Path, ...] = ()
        if root is None:
            from oxide_build.cache_location import cache_root

            root = cache_root() / _SUBDIR
            checked = (root.parent,)  # whoever may write the cache root may swap compile/
        self.root = Path(root)
        if max_bytes is None:
            env = os.environ.get("OXIDE_CACHE_MAX_BYTES")
            max_bytes = int(env) if env and env.isdigit() else DEFAULT_MAX_BYTES
        self.max_bytes = max_bytes
        self.enabled = enabled and os.environ.get("OXIDE_NO_CACHE", "") in ("", "0")
        if self.enabled and not all(usable_cache_dir(p) for p in (*checked, self.root)):
            self.enabled = False
        self.hits = 0
        self.misses = 0
        self._write_failed = False

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            entry = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        data = _payload(entry)
        if data is None:  # damaged (or of an older format): rebuilt and rewritten
            try:
                path.unlink()
            except OSError:
                pass
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
        if self._write_failed:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_file_atomic(path, _MAGIC + hashlib.sha256(data).digest() + data)
        except OSError as exc:
            # a full (or read-only) cache dir only costs speed, but every later build would
            # silently recompile everything: say so, once, and stop trying in this process
            self._write_failed = True
            warn_cache_unusable(
                self.root, f"cannot store a compiled module there ({exc.strerror or exc})",
                "this build goes on without storing its results, so the next build compiles them again; "
                "free space there (oxide cache clear), or choose another directory with OXIDE_CACHE_DIR",
            )
            return
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


def _payload(entry: bytes) -> bytes | None:
    """The payload of a stored entry, or None when its checksum does not match."""
    head = len(_MAGIC) + 32
    if len(entry) < head or not entry.startswith(_MAGIC):
        return None
    data = entry[head:]
    return data if hashlib.sha256(data).digest() == entry[len(_MAGIC):head] else None


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
            if entry.is_dir() and not entry.name.startswith("."):  # not a writer's staging dir
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
