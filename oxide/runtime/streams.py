"""Streams: any stream object a user may hold, turned into a raw ``CUstream`` handle; and the
stream a launch takes when it is given none (its arguments' framework's current stream).

The rule for a launch without a stream: PyTorch's current stream of the first tensor's device
when any argument is a PyTorch tensor; else CuPy's current stream of the first CuPy array's
device when any is a CuPy array; else the legacy default stream. The launch runs on that device.
The C launcher (``framework_stream`` in ``_launcher_launch.c``) follows the same rule.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

from oxide.runtime.array_kinds import framework_kind

__all__ = ["LEGACY_DEFAULT_STREAM", "stream_handle", "framework_of", "current_stream", "torch_current_stream",
           "cupy_current_stream"]

LEGACY_DEFAULT_STREAM = 0


MAX_STREAM_HANDLE = 2**64 - 1  # a CUstream is a pointer: 64 bits, unsigned


def stream_handle(stream: Any, what: str = "stream") -> int:
    """The ``CUstream`` handle of ``stream`` as an int.

    Accepted: ``None`` (the legacy default stream), an int handle, a
    ``cuda.bindings.driver.CUstream``, anything with ``__cuda_stream__()`` returning
    ``(version, handle)`` (cuda.core), anything with a ``cuda_stream`` attribute
    (``torch.cuda.Stream``, ``cupy.cuda.Stream``). A handle must be an int of 0 to 2**64 - 1;
    anything else is refused (``ValueError`` or ``TypeError``) naming ``what``, the argument
    it was passed as, rather than handed to the driver as a garbage handle.
    """
    if stream is None:
        return LEGACY_DEFAULT_STREAM
    if type(stream) is int:
        return _checked(stream, what, "")
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        if isinstance(value, tuple) and len(value) == 2:
            return _checked(value[1], what, f"the handle {type(stream).__name__}.__cuda_stream__() returned")
        raise TypeError(f"{what}: __cuda_stream__ of {type(stream).__name__} returned {value!r}, "
                        "not (version, handle)")
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return _checked(handle, what, f"the cuda_stream of its {type(stream).__name__}")
    if type(stream).__name__ == "CUstream" or isinstance(stream, int):
        return _checked(int(stream), what, f"its {type(stream).__name__}")
    raise TypeError(
        f"{what}: cannot use a {type(stream).__name__} as a CUDA stream: pass None, an int handle, a "
        "cuda.bindings.driver.CUstream, or an object with __cuda_stream__ or .cuda_stream "
        "(torch.cuda.Stream, cupy.cuda.Stream)"
    )


def _checked(handle: Any, what: str, source: str) -> int:
    """``handle`` if it is a CUstream's value: an int (not a bool) of 0 to 2**64 - 1."""
    of = f" ({source})" if source else ""
    if type(handle) is bool or not isinstance(handle, int):
        raise TypeError(f"{what} is not a CUDA stream: its handle{of} is {handle!r}, not an int")
    if not 0 <= handle <= MAX_STREAM_HANDLE:
        raise ValueError(f"{what} is not a CUDA stream: its handle{of} is {handle}, outside 0 to 2**64 - 1")
    return int(handle)


def framework_of(arrays: Iterable[Any]) -> tuple[str, int] | None:
    """``("torch", ordinal)`` for the first PyTorch CUDA tensor among ``arrays``, else ``("cupy",
    ordinal)`` for the first CuPy array, else None (the legacy default stream)."""
    first_cupy = None
    for a in arrays:
        kind = framework_kind(a)
        if kind == "torch":
            if not getattr(a, "is_cuda", True):
                continue  # a CPU tensor (the CPU device's): no stream of its own
            return "torch", _torch_ordinal(a)
        if first_cupy is None and kind == "cupy":
            first_cupy = a
    if first_cupy is not None:
        return "cupy", _cupy_ordinal(first_cupy)
    return None


def _torch_ordinal(t: Any) -> int:
    get_device = getattr(t, "get_device", None)
    ordinal = get_device() if get_device is not None else getattr(getattr(t, "device", None), "index", 0)
    return int(ordinal) if ordinal is not None and ordinal >= 0 else 0


def _cupy_ordinal(a: Any) -> int:
    ordinal = getattr(getattr(a, "device", None), "id", 0)
    return int(ordinal) if isinstance(ordinal, int) else 0


def torch_current_stream(ordinal: int) -> int:
    """PyTorch's current stream on device ``ordinal`` (``torch.cuda.current_stream(ordinal)``)."""
    torch = sys.modules["torch"]
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(ordinal))
    return stream_handle(torch.cuda.current_stream(ordinal))


def cupy_current_stream(ordinal: int) -> int:
    """CuPy's current stream on device ``ordinal`` (``cupy.cuda.get_current_stream``)."""
    cuda = sys.modules["cupy"].cuda
    try:
        stream = cuda.get_current_stream(ordinal)
    except TypeError:  # CuPy without the device argument: the current device's
        with cuda.Device(ordinal):
            stream = cuda.get_current_stream()
    return int(stream.ptr)


def current_stream(framework: str, ordinal: int) -> int:
    """The current stream of ``framework`` ("torch" or "cupy") on device ``ordinal``."""
    return torch_current_stream(ordinal) if framework == "torch" else cupy_current_stream(ordinal)
