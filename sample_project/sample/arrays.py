"""The GPU arrays sample's operations accept — PyTorch tensors, CuPy arrays and
``oxide.runtime.DeviceArray`` (anything else with ``__cuda_array_interface__`` too) — read
through ``__cuda_array_interface__``, and new arrays made with the caller's own library.

On oxide's CPU device (``OXIDE_DEVICE=cpu``) the kernels run on host memory: the operations take
NumPy arrays, PyTorch CPU tensors and DeviceArrays made there (``__array_interface__``) instead."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ArrayInfo", "describe", "empty_like", "zeros_like", "flat", "on_cpu_device"]


@dataclass(frozen=True)
class ArrayInfo:
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    library: str  # "torch", "cupy" or "oxide" (any other CUDA array library: "oxide")


def _library(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return "numpy"
    module = type(a).__module__.split(".")[0]
    return module if module in ("torch", "cupy") else "oxide"


def on_cpu_device() -> bool:
    """Whether oxide runs kernels on the CPU device (host memory)."""
    from oxide.runtime import device_kind

    return device_kind() == "cpu"


def _describe_host(a: Any, name: str) -> ArrayInfo:
    """``describe`` on the CPU device: a host array (NumPy, a CPU tensor, a DeviceArray made there)."""
    if _library(a) == "torch":
        if a.device.type != "cpu":
            raise TypeError(f"{name} is a torch.Tensor on {a.device}, but oxide runs on the CPU device here: "
                            "pass a CPU tensor or a NumPy array")
        if not a.is_contiguous():
            raise ValueError(f"{name} must be C-contiguous")
        return ArrayInfo(tuple(int(s) for s in a.shape), np.dtype(str(a.dtype).removeprefix("torch.")), "torch")
    try:
        interface = a.__array_interface__
    except AttributeError:
        raise TypeError(f"{name} must be a host array on the CPU device (numpy.ndarray, a CPU torch.Tensor or "
                        f"oxide.runtime.DeviceArray), got {type(a).__name__}") from None
    shape = tuple(int(s) for s in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    if interface.get("strides") is not None and not np.asarray(a).flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (strides {tuple(interface['strides'])} bytes for shape {shape})")
    return ArrayInfo(shape, dtype, _library(a))


def describe(a: Any, name: str) -> ArrayInfo:
    """Shape and dtype of the CUDA array ``a``; TypeError for a host array or a non-contiguous one
    (on the CPU device: of the host array ``a``)."""
    if on_cpu_device():
        return _describe_host(a, name)
    if isinstance(a, np.ndarray):
        raise TypeError(f"{name} is a NumPy array, which lives in host memory: pass a CUDA array "
                        "(torch.Tensor on 'cuda', cupy.ndarray or oxide.runtime.DeviceArray)")
    try:
        cai = a.__cuda_array_interface__
    except (AttributeError, RuntimeError, TypeError):
        raise TypeError(f"{name} must be a CUDA array (torch.Tensor on 'cuda', cupy.ndarray or "
                        f"oxide.runtime.DeviceArray), got {type(a).__name__}") from None
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], dtype.itemsize
        for extent in reversed(shape):
            expected.append(step)
            step *= max(extent, 1)
        if tuple(strides) != tuple(reversed(expected)) and int(np.prod(shape)) > 1:
            raise ValueError(f"{name} must be C-contiguous (strides {tuple(strides)} bytes for shape {shape})")
    return ArrayInfo(shape, dtype, _library(a))


def _new(like: Any, shape: tuple[int, ...], dtype: np.dtype[Any], zero: bool) -> Any:
    library = _library(like)
    if library == "numpy":
        return (np.zeros if zero else np.empty)(shape, dtype)
    if library == "torch":
        import torch

        make = torch.zeros if zero else torch.empty
        return make(shape, dtype=getattr(torch, dtype.name), device=like.device)
    if library == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return (cupy.zeros if zero else cupy.empty)(shape, dtype=dtype)
    from oxide.runtime import DeviceArray

    return (DeviceArray.zeros if zero else DeviceArray.empty)(shape, dtype.name)


def empty_like(like: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """A new array of the library ``like`` comes from (on its device)."""
    return _new(like, shape, dtype, zero=False)


def zeros_like(like: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    return _new(like, shape, dtype, zero=True)


def flat(a: Any) -> Any:
    """A 1-D view of the C-contiguous array ``a`` (kernels take 1-D slices)."""
    info = describe(a, "array")
    if len(info.shape) == 1:
        return a
    library = _library(a)
    if library == "torch":
        return a.reshape(-1)
    if library in ("cupy", "numpy"):
        return a.ravel()
    from oxide.runtime import DeviceArray

    interface = a.__array_interface__ if on_cpu_device() else a.__cuda_array_interface__
    ptr = int(interface["data"][0])
    return DeviceArray(ptr, (int(np.prod(info.shape)),), info.dtype, owned=False,
                       device=getattr(a, "device", None))
