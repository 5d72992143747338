"""The runtime: find a kernel's precompiled code, load it for the GPU at hand and launch it.

Depends on ``cuda-bindings`` only, imported on first use: importing oxide (and defining kernels)
does no CUDA work. NumPy is optional: ``DeviceArray`` and the CPU device need it
(``oxide.numpy_dependency``).

Launches are asynchronous. A kernel that fails a device-side check (an out-of-bounds index, an
``assert``) writes a failure record into host-mapped memory and its failing thread exits; the
record is raised as ``oxide.KernelError`` (kernel, file:line:col, index, length) by the first
of: the next launch of any oxide kernel (before it launches), ``synchronize()``, or
``check_kernel_errors()`` — each after the failing kernel has finished. Code that synchronises
through PyTorch or CuPy calls ``check_kernel_errors()`` afterwards. Illegal addresses and other
sticky CUDA errors are ``oxide.CudaError`` with the CUDA error name. See
:mod:`oxide.runtime.kernel_errors`.

On the CPU device (``OXIDE_DEVICE=cpu`` or ``set_device("cpu")``: :mod:`oxide.runtime.device_choice`,
:mod:`oxide.runtime.cpu_driver`) launches run on the host, on host arrays, and are synchronous: a
launch raises its ``KernelError`` itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oxide.runtime.artifacts import StaleCodeWarning
    from oxide.runtime.device import DeviceInfo
    from oxide.runtime.device_choice import device_kind, set_device
    from oxide.runtime.device_array import DeviceArray
    from oxide.runtime.kernel import Kernel, LaunchConfig
    from oxide.runtime.kernel_errors import check_kernel_errors, synchronize
    from oxide.runtime.launch import grid_for, grid_for_2d
    from oxide.runtime.loader import CodeChoice, select_code
    from oxide.runtime.streams import stream_handle

# Each public name is imported from its module on first use (PEP 562): a module of kernels
# imports oxide.runtime.kernel, and that must not pull in the loader, the manifest reader,
# ctypes or the array readers, which only a launch needs.
_LAZY = {
    "Kernel": "kernel",
    "LaunchConfig": "kernel",
    "DeviceArray": "device_array",
    "DeviceInfo": "device",
    "synchronize": "kernel_errors",
    "check_kernel_errors": "kernel_errors",
    "grid_for": "launch",
    "grid_for_2d": "launch",
    "select_code": "loader",
    "CodeChoice": "loader",
    "stream_handle": "streams",
    "StaleCodeWarning": "artifacts",
    "set_device": "device_choice",
    "device_kind": "device_choice",
}

__all__ = [
    "Kernel",
    "LaunchConfig",
    "DeviceArray",
    "DeviceInfo",
    "synchronize",
    "check_kernel_errors",
    "grid_for",
    "grid_for_2d",
    "select_code",
    "CodeChoice",
    "stream_handle",
    "StaleCodeWarning",
    "set_device",
    "device_kind",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxide.runtime' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"oxide.runtime.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
