"""The CPU device's entry points: compile a kernel module for the host and launch its kernels
with exactly what ``cuLaunchKernel`` takes (the runtime's CPU driver calls these)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...config import CompileOptions

__all__ = ["CpuFunction", "CpuModule", "compile_module_for_cpu"]

SANITIZERS = frozenset({"memcheck", "racecheck", "initcheck", "synccheck"})


class CpuFunction:
    """One kernel entry point of a ``CpuModule``."""

    name: str
    max_threads_per_block: int
    static_shared_bytes: int
    cooperative: bool

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
               kernel_params: int | Sequence[int], sanitize: frozenset[str] = frozenset()) -> None:
        raise NotImplementedError("the CPU engine is not implemented yet")


class CpuModule:
    """A kernel module compiled for the host."""

    module_name: str

    def function(self, symbol: str) -> CpuFunction:
        raise NotImplementedError("the CPU engine is not implemented yet")

    def global_address(self, name: str) -> tuple[int, int]:
        raise NotImplementedError("the CPU engine is not implemented yet")


def compile_module_for_cpu(source_path: Path, module_name: str, root: Path | None = None,
                           options: CompileOptions | None = None) -> CpuModule:
    raise NotImplementedError("the CPU engine is not implemented yet")
