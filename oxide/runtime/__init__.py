"""The runtime: find a kernel's precompiled code, load it for the GPU at hand and launch it.

Depends on ``cuda-bindings`` and ``numpy`` only, both imported on first use: importing oxide
(and defining kernels) does no CUDA work.
"""
from __future__ import annotations

from oxide.runtime.artifacts import StaleCodeWarning
from oxide.runtime.device import DeviceInfo, synchronize
from oxide.runtime.device_array import DeviceArray
from oxide.runtime.kernel import Kernel, LaunchConfig
from oxide.runtime.launch import grid_for
from oxide.runtime.loader import CodeChoice, select_code
from oxide.runtime.streams import stream_handle

__all__ = [
    "Kernel",
    "LaunchConfig",
    "DeviceArray",
    "DeviceInfo",
    "synchronize",
    "grid_for",
    "select_code",
    "CodeChoice",
    "stream_handle",
    "StaleCodeWarning",
]
