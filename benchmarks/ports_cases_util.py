"""Helpers of the ports corpus (``benchmarks.ports_cases``): allocation, poisoning, resets and
the comparisons a case needs where the elementwise one does not fit."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks.ports import Side, signed_view

__all__ = ["i32", "u32", "i64", "u64", "f32", "cdiv", "dev", "poison", "empty", "restore", "poisoner", "both", "cuda",
           "close_to_max", "mostly_equal", "zeroer"]

i32, u32, i64, u64, f32 = np.int32, np.uint32, np.int64, np.uint64, np.float32
NAN = float("nan")


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def dev(torch: Any, a: np.ndarray) -> Any:
    return torch.as_tensor(np.ascontiguousarray(a), device="cuda")


def poison(t: Any) -> None:
    """NaN, or 0x5A in every element of an integer tensor, True in a bool one."""
    import torch

    if t.dtype.is_floating_point:
        t.fill_(NAN)
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        signed_view(torch, t).fill_(0x5A)


def zeroer(t: Any) -> Callable[[], None]:
    """A reset that zeroes ``t`` (through its signed view: torch has no zero_ for every uint type)."""
    def reset() -> None:
        import torch

        signed_view(torch, t).zero_()
    return reset


def empty(torch: Any, shape: Any, dtype: Any = None) -> Any:
    t = torch.empty(shape, dtype=dtype or torch.float32, device="cuda")
    poison(t)
    return t


def restore(*pairs: tuple[Any, Any]) -> Callable[[], None]:
    """A reset that copies each saved tensor back into its live one."""
    def reset() -> None:
        for live, saved in pairs:
            live.copy_(saved)
    return reset


def poisoner(*ts: Any) -> Callable[[], None]:
    def reset() -> None:
        for t in ts:
            poison(t)
    return reset


def both(*fs: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        for f in fs:
            f()
    return run


def cuda(side: Side) -> bool:
    return side.name == "cuda"


def close_to_max(rtol: float) -> Callable[[list[Any], list[Any]], None]:
    """Every element within ``rtol`` of the largest magnitude of its reference (sums whose terms
    cancel: a relative error per element means nothing near zero)."""
    def compare(got: list[Any], ref: list[Any]) -> None:
        for k, (g, r) in enumerate(zip(got, ref)):
            g64, r64 = g.double(), r.double()
            scale = float(r64.abs().max())
            err = float((g64 - r64).abs().max())
            if not err <= rtol * scale:
                raise AssertionError(f"output {k}: max error {err:.3g} over {rtol:.1g} of the largest value {scale:.3g}")
    return compare


def mostly_equal(max_fraction: float, max_step: int = 1) -> Callable[[list[Any], list[Any]], None]:
    """Integers equal but for at most ``max_fraction`` of the elements, off by at most
    ``max_step`` (an escape count or a colour channel at an f32 rounding edge)."""
    def compare(got: list[Any], ref: list[Any]) -> None:
        for k, (g, r) in enumerate(zip(got, ref)):
            import torch

            diff = (signed_view(torch, g).long() - signed_view(torch, r).long()).abs()
            frac = float((diff > 0).double().mean())
            if frac > max_fraction or int(diff.max()) > max_step:
                raise AssertionError(f"output {k}: {frac:.2%} of the elements differ, by up to {int(diff.max())}")
    return compare
