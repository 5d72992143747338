"""Which device runs the launches of this process: the GPU (CUDA) or the CPU device.

``OXIDE_DEVICE`` is read once, when this module is first imported: unset, empty, ``cuda`` or
``gpu`` is the GPU; ``cpu`` is the CPU device, where every launch runs on the host (the kernel
module's Python source compiled for the CPU by ``oxide_build``; arguments are NumPy arrays,
PyTorch CPU tensors or DeviceArrays in host memory, written in place; a launch runs to completion
and raises its errors before it returns). :func:`set_device` chooses in code, and may be called at
any time: launches after it run on the device it names.

Everything on the launch path that differs between the two reads :data:`ON_CPU` (the driver
``device.driver()`` returns, the array readers), so a launch pays one attribute read for it.
"""
from __future__ import annotations

import os
import sys

__all__ = ["DEVICE_KINDS", "ON_CPU", "set_device", "device_kind", "environment_problem"]

DEVICE_KINDS = ("cuda", "cpu")
_ALIASES = {"": "cuda", "cuda": "cuda", "gpu": "cuda", "cpu": "cpu"}


def _from_environment() -> tuple[bool, str | None]:
    raw = os.environ.get("OXIDE_DEVICE", "")
    kind = _ALIASES.get(raw.strip().lower())
    if kind is None:
        return False, (f"OXIDE_DEVICE={raw!r} names no device: set it to 'cpu' (kernels run on the CPU) or 'cuda' "
                       "(the GPU; also what unset means)")
    return kind == "cpu", None


ON_CPU: bool
_problem: str | None
ON_CPU, _problem = _from_environment()


def environment_problem() -> str | None:
    """Why ``OXIDE_DEVICE`` cannot be used (its value names no device), until :func:`set_device`
    chooses one; None when it can. The first launch raises it (``device.driver()``)."""
    return _problem


def device_kind() -> str:
    """``"cpu"`` when launches run on the CPU device, else ``"cuda"``."""
    return "cpu" if ON_CPU else "cuda"


def set_device(kind: str) -> None:
    """Runs the launches that follow on ``kind``: ``"cpu"`` (the CPU device) or ``"cuda"``
    (the GPU; ``"gpu"`` says the same). Overrides ``OXIDE_DEVICE``.

    Arrays stay where they are: a DeviceArray made on one device is refused by a launch on the
    other, naming the parameter. Kernels already launched on the other device keep its code and
    load the new device's on their next launch.
    """
    global ON_CPU, _problem
    if not isinstance(kind, str) or kind.strip().lower() not in _ALIASES or not kind.strip():
        raise ValueError(f"set_device takes 'cpu' or 'cuda'; got {kind!r}")
    on_cpu = _ALIASES[kind.strip().lower()] == "cpu"
    _problem = None
    if on_cpu == ON_CPU:
        return
    ON_CPU = on_cpu
    device = sys.modules.get("oxide.runtime.device")
    if device is not None:
        device._forget_driver()  # the next driver() is the other device's
    launcher = sys.modules.get("oxide.runtime.launcher")
    if launcher is not None:
        launcher.unbind_driver()  # the C launcher knows the GPU only: it leaves every launch to Python

