"""Which kind of array an object is: the one classifier of the launch path.

The order is the readers' (``arrays.view_of``): an oxide ``DeviceArray``, a PyTorch tensor, a
CuPy array (each by type, never importing its library: a module not imported yet has no
instances), then anything with ``__cuda_array_interface__``, then host arrays with
``__array_interface__`` (NumPy: the CPU device's arrays), then DLPack. ``arrays.view_of``
picks its adapter by it, ``launcher.learn_array`` the C launcher's reader, ``streams`` the
framework whose current stream a launch takes, ``stream_order`` whose stream an array's data is
ordered on. A new kind is added here once.
"""
from __future__ import annotations

import sys
from typing import Any, Literal

__all__ = ["ArrayKind", "array_kind", "framework_kind", "DEVICE_ARRAY", "TORCH", "CUPY", "CAI", "HOST", "DLPACK"]

ArrayKind = Literal["device_array", "torch", "cupy", "cai", "host", "dlpack"]
DEVICE_ARRAY: ArrayKind = "device_array"
TORCH: ArrayKind = "torch"
CUPY: ArrayKind = "cupy"
CAI: ArrayKind = "cai"
HOST: ArrayKind = "host"
DLPACK: ArrayKind = "dlpack"


def framework_kind(obj: Any) -> Literal["torch", "cupy"] | None:
    """"torch" for a PyTorch tensor, "cupy" for a CuPy array, None otherwise: the frameworks
    that have a current stream (the cheap part of :func:`array_kind`, no attribute read)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        tensor = getattr(torch, "Tensor", None)
        if isinstance(tensor, type) and isinstance(obj, tensor):
            return "torch"
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        ndarray = getattr(cupy, "ndarray", None)
        if isinstance(ndarray, type) and isinstance(obj, ndarray):
            return "cupy"
    return None


def array_kind(obj: Any) -> ArrayKind | None:
    """The kind of ``obj``, None when it is no array kernels take."""
    device_array = sys.modules.get("oxide.runtime.device_array")
    if device_array is not None and type(obj) is device_array.DeviceArray:
        return DEVICE_ARRAY
    framework = framework_kind(obj)
    if framework is not None:
        return framework
    if _has_cuda_array_interface(obj):
        return CAI
    if hasattr(obj, "__array_interface__"):
        return HOST
    if getattr(obj, "__dlpack_device__", None) is not None and hasattr(obj, "__dlpack__"):
        return DLPACK
    return None


def _has_cuda_array_interface(obj: Any) -> bool:
    try:
        obj.__cuda_array_interface__
    except AttributeError:
        return False
    except Exception:  # there, but failing to export: its reader says why (arrays_cai)
        return True
    return True
