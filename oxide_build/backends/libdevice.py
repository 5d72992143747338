"""libdevice, NVIDIA's bitcode library of math functions, read once for both backends (the
NVPTX backend links the subset a module calls; libNVVM takes it as a second module)."""
from __future__ import annotations

import functools

__all__ = ["libdevice_bytes"]


@functools.lru_cache(maxsize=1)
def libdevice_bytes() -> bytes:
    """The bitcode of libdevice (``oxide.ToolchainError`` naming the wheel when it is missing)."""
    from ..toolchain import libdevice_path

    return libdevice_path().read_bytes()
