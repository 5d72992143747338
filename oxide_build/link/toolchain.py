"""Finds the command-line tools of the CUDA toolchain wheels (ptxas, cuobjdump)."""
from __future__ import annotations

import shutil

__all__ = ["find_tool"]


def find_tool(name: str) -> str | None:
    """Path of ``name`` from the nvidia-* wheels (through cuda.pathfinder), else from PATH."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
        if found:
            return str(found)
    except Exception:  # pathfinder missing or does not know the tool
        pass
    return shutil.which(name)
