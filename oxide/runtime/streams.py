"""Streams: any stream object a user may hold, turned into a raw ``CUstream`` handle."""
from __future__ import annotations

from typing import Any

__all__ = ["LEGACY_DEFAULT_STREAM", "stream_handle"]

LEGACY_DEFAULT_STREAM = 0


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` handle of ``stream`` as an int.

    Accepted: ``None`` (the legacy default stream), an int handle, a
    ``cuda.bindings.driver.CUstream``, anything with ``__cuda_stream__()`` returning
    ``(version, handle)`` (cuda.core), anything with a ``cuda_stream`` attribute
    (``torch.cuda.Stream``, ``cupy.cuda.Stream``).
    """
    if stream is None:
        return LEGACY_DEFAULT_STREAM
    if type(stream) is int:
        if stream < 0:
            raise ValueError(f"a stream handle cannot be negative; got {stream}")
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        if isinstance(value, tuple) and len(value) == 2:
            return int(value[1])
        raise TypeError(f"__cuda_stream__ of {type(stream).__name__} returned {value!r}, not (version, handle)")
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return int(handle)
    if type(stream).__name__ == "CUstream" or isinstance(stream, int):
        return int(stream)
    raise TypeError(
        f"cannot use a {type(stream).__name__} as a CUDA stream: pass None, an int handle, a "
        "cuda.bindings.driver.CUstream, or an object with __cuda_stream__ or .cuda_stream "
        "(torch.cuda.Stream, cupy.cuda.Stream)"
    )
