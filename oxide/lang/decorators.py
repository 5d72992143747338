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
        from oxide import _CollectorPaused

        with _CollectorPaused():  # the first @kernel imports the runtime's launch side (cold start)
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


def _cpu_implementation(cpu: Any, what: str, symbol: str) -> Callable[..., Any] | None:
    """``cpu=`` of ``@extern`` / ``@extern_kernel``: a plain Python function (the compiler reads
    it from the source; this only catches what cannot be one)."""
    from oxide.runtime.kernel import Kernel

    if cpu is None:
        return None
    if isinstance(cpu, Kernel) or not callable(cpu) or hasattr(cpu, "__oxide_extern__"):
        raise TypeError(f"@{what}({symbol!r}, cpu=...) takes a plain function of the kernel language (its CPU "
                        f"implementation, defined before the declaration), got {cpu!r}")
    return cpu  # type: ignore[no-any-return]


def extern(symbol: str, *, sources: list[str] | None = None, cpu: Callable[..., Any] | None = None) -> Callable[[F], F]:
    """Declares an ``extern "C" __device__`` function defined in CUDA C++ ``sources``.
    ``cpu=f``: the device function (of the same signature) the CPU device calls in its place."""
    impl = _cpu_implementation(cpu, "extern", symbol)

    def wrap(f: F) -> F:
        f.__oxide_extern__ = {"symbol": symbol, "sources": list(sources or []), "cpu": impl}  # type: ignore[attr-defined]
        return f

    return wrap


def extern_kernel(symbol: str, *, sources: list[str] | None = None,
                  cpu: Callable[..., Any] | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Declares a CUDA C++ ``extern "C" __global__`` kernel defined in ``sources``; the typed
    stub's parameters are checked at launch exactly like a Python kernel's. ``cpu=f``: a plain
    function of the same parameters, compiled as the kernel the CPU device launches in its place."""
    impl = _cpu_implementation(cpu, "extern_kernel", symbol)

    def wrap(f: Callable[..., Any]) -> Any:
        from oxide.runtime.kernel import Kernel

        f.__oxide_extern__ = {"symbol": symbol, "sources": list(sources or []), "cpu": impl}  # type: ignore[attr-defined]
        return Kernel(f, {})

    return wrap
