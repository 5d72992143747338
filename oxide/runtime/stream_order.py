"""The stream order of a launch's arrays: which other streams their data is ordered on (a
stream-ordered ``DeviceArray``'s, a ``__cuda_array_interface__``'s ``stream``), which the launch
waits for. The launch's own stream, a framework's current one, is read in ``streams.py``.
``kernel.py`` imports this module on the first launch.
"""
from __future__ import annotations

from typing import Any

from oxide.runtime.array_kinds import CAI, DEVICE_ARRAY, array_kind

__all__ = ["same_stream", "producer_streams"]


def same_stream(s: int) -> int:
    """0 and 1 both name the legacy default stream (1 in the CUDA array interface)."""
    return 0 if s == 1 else s


def producer_streams(views: list[Any], stream: int) -> set[int]:
    """The streams other than the launch's that the arrays' data is ordered on: a stream-ordered
    DeviceArray's, or the ``stream`` of a ``__cuda_array_interface__`` (1: the legacy default
    stream, which a launch on stream 0 is on already)."""
    out: set[int] = set()
    for view in views:
        owner = view.owner
        kind = array_kind(owner)
        if kind == DEVICE_ARRAY:
            producer = owner._stream
        elif kind == CAI:  # a torch tensor or a CuPy array is read through its own attributes: no stream
            cai = getattr(owner, "__cuda_array_interface__", None)
            producer = cai.get("stream") if isinstance(cai, dict) else None
        else:
            continue
        if isinstance(producer, int) and not isinstance(producer, bool) and same_stream(producer) != same_stream(stream):
            out.add(producer)
    return out
