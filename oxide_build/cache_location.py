"""Where oxide keeps what it caches on this machine: compile steps, JIT-compiled modules and
libdevice subsets. A leaf module, so that every stage can ask without importing the driver."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """``$OXIDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/oxide``, else ``~/.cache/oxide``."""
    env = os.environ.get("OXIDE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oxide"
