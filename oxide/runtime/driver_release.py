"""Which NVIDIA driver release this machine has, and the first one of each CUDA major release:
facts the loader's driver check and the device's bindings check both name (no imports of the
runtime, so neither depends on the other for them)."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DRIVER_RELEASE_OF_CUDA", "installed_driver_release"]

# the first Linux driver release of each CUDA major release (NVIDIA's CUDA compatibility table)
DRIVER_RELEASE_OF_CUDA = {12: "R525", 13: "R580"}


def installed_driver_release() -> str | None:
    """The NVIDIA kernel driver's version (``"550.54.14"``), from /proc/driver/nvidia/version
    (Linux); None where that is not there."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None
