"""What the compiler can target: GPU architectures and the backends that make PTX. A leaf
module, read by the driver, the configuration and the command line alike."""
from __future__ import annotations

__all__ = ["DEFAULT_ARCHS", "SUPPORTED_ARCHS", "BACKENDS", "newest_arch"]

DEFAULT_ARCHS: tuple[str, ...] = ("sm_80", "sm_90")
SUPPORTED_ARCHS: tuple[str, ...] = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
BACKENDS: tuple[str, ...] = ("nvptx", "nvvm")


def newest_arch(archs: tuple[str, ...]) -> str:
    """The arch with the highest compute capability (``sm_120`` over ``sm_90``)."""
    return max(archs, key=lambda a: int(a.split("_")[1]))
