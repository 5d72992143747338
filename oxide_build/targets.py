"""What the compiler can target: GPU architectures and the backends that make PTX. A leaf
module, read by the driver, the configuration and the command line alike.

An arch with the suffix ``a`` (``sm_90a``, ``sm_100a``) is *arch-specific*: its code may use
instructions only that exact GPU has (``wgmma``, ``setmaxnreg`` on sm_90a), and its cubin and
PTX load only on that compute capability. The runtime picks it over the plain cubin of the same
arch where it can run, and falls back to the plain arch (or PTX) elsewhere.
"""
from __future__ import annotations

__all__ = ["DEFAULT_ARCHS", "SUPPORTED_ARCHS", "BACKENDS", "newest_arch", "arch_number", "is_arch_specific"]

DEFAULT_ARCHS: tuple[str, ...] = ("sm_80", "sm_90")
# sm_90a and sm_100a: llvmlite's NVPTX (LLVM 22) emits `.target sm_90a` / `.target sm_100a`,
# libNVVM takes -arch=compute_90a / compute_100a and nvJitLink -arch=sm_90a / sm_100a
SUPPORTED_ARCHS: tuple[str, ...] = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120")
BACKENDS: tuple[str, ...] = ("nvptx", "nvvm")


def arch_number(arch: str) -> int:
    """The compute capability as a number: ``"sm_90a"`` -> 90, ``"sm_120"`` -> 120."""
    return int(arch.split("_", 1)[1].rstrip("af"))


def is_arch_specific(arch: str) -> bool:
    """``sm_90a``: code that loads on that exact compute capability only."""
    return arch.endswith(("a", "f"))


def newest_arch(archs: tuple[str, ...]) -> str:
    """The arch with the highest compute capability (``sm_120`` over ``sm_90``) among the
    portable ones: the PTX of an arch-specific one (``sm_90a``) is no forward-compatible
    fallback, so it is the answer only when every arch is arch-specific."""
    portable = [a for a in archs if not is_arch_specific(a)]
    return max(portable or archs, key=lambda a: (arch_number(a), is_arch_specific(a)))
