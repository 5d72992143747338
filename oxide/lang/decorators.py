"""``@kernel``, ``@device`` and ``@extern``.

The decorators run when the user's module is imported and must do no CUDA work and no
compiling: ``@kernel`` wraps the function in a launchable handle that finds its precompiled
code on first launch. The compiler finds kernels by reading the source, not by these objects.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar, overload

__all__ = ["kernel", "device", "extern", "extern_kernel"]

F = TypeVar("F", bound=Callable[..., Any])

KERNEL_OPTIONS = frozenset({"bounds_check", "launch_bounds", "max_registers", "constexprs", "index32"})


@overload
def kernel(func: Callable[..., Any]) -> Any: ...
@overload
def kernel(
    *, bounds_check: bool = True, launch_bounds: int | None = None, max_registers: int | None = None,
    constexprs: dict[str, list[int]] | None = None, index32: bool = True,
) -> Callable[[Callable[..., Any]], Any]: ...


def kernel(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Marks a GPU kernel. Launch it with ``k[grid, block](*args)``."""
    unknown = set(options) - KERNEL_OPTIONS
    if unknown:
        raise TypeError(f"@kernel got unknown option(s) {sorted(unknown)}; known: {sorted(KERNEL_OPTIONS)}")

    def wrap(f: Callable[..., Any]) -> Any:
        from oxide.runtime.kernel import Kernel

        return Kernel(f, dict(options))

    if func is not None:
        return wrap(func)
    return wrap


def device(func: F | None = None, *, export: str | None = None) -> Any:
    """Marks a device function explicitly (plain functions called from kernels are device
    functions anyway). ``export="name"`` gives it C linkage for CUDA C++ callers."""

    def wrap(f: F) -> F:
        f.__oxide_device__ = {"export": export}  # type: ignore[attr-defined]
        return f

    if func is not None:
        return wrap(func)
    return wrap


def extern(symbol: str, *, sources: list[str] | None = None) -> Callable[[F], F]:
    """Declares an ``extern "C" __device__`` function defined in CUDA C++ ``sources``."""

    def wrap(f: F) -> F:
        f.__oxide_extern__ = {"symbol": symbol, "sources": list(sources or [])}  # type: ignore[attr-defined]
        return f

    return wrap


def extern_kernel(symbol: str, *, sources: list[str] | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Declares a CUDA C++ ``extern "C" __global__`` kernel defined in ``sources``; the typed
    stub's parameters are checked at launch exactly like a Python kernel's."""

    def wrap(f: Callable[..., Any]) -> Any:
        from oxide.runtime.kernel import Kernel

        f.__oxide_extern__ = {"symbol": symbol, "sources": list(sources or [])}  # type: ignore[attr-defined]
        return Kernel(f, {})

    return wrap
