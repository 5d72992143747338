"""Kernel preconditions checked at launch (``KernelSpec.preconditions``).

A leading ``assert`` of a kernel whose condition depends only on the launch — scalar
arguments, view lengths and shapes, ``grid.dim``, ``block.dim`` — is compiled into the manifest
instead of the device code, and so are the grid limits that the compiler's bounds proofs assume.
Both launch paths check them before ``cuLaunchKernel`` (the C launcher evaluates the same
encoding); a failure raises ``oxide.KernelError`` at the launch, with the assert's location.

The encoding (nested lists, JSON) is ``oxide.abi.preconditions``'s: it is evaluated over the
kernel's packed parameter slots (``oxide.abi.params``; the values ``ArgPacker`` packs) and the
launch dimensions.
"""
from __future__ import annotations

from typing import Any, Sequence

__all__ = ["evaluate", "failed"]

_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _wrap(ty: str, v: int) -> int:
    if ty == "bool":
        return 1 if v else 0
    bits = _BITS[ty]
    v &= (1 << bits) - 1
    if ty[0] == "i" and v >> (bits - 1):
        v -= 1 << bits
    return v


def evaluate(e: Any, slots: Sequence[Any], grid: Sequence[int], block: Sequence[int]) -> int:
    """The value of expression ``e`` (an int; conditions give 0 or 1)."""
    op = e[0]
    if op == "const":
        return int(e[1])
    if op == "arg":
        return int(slots[e[1]])
    if op == "grid":
        return int(grid[e[1]])
    if op == "block":
        return int(block[e[1]])
    if op == "cast":
        return _wrap(e[1], evaluate(e[2], slots, grid, block))
    if op in ("add", "sub", "mul"):
        a, b = evaluate(e[2], slots, grid, block), evaluate(e[3], slots, grid, block)
        return _wrap(e[1], a + b if op == "add" else a - b if op == "sub" else a * b)
    if op == "neg":
        return _wrap(e[1], -evaluate(e[2], slots, grid, block))
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        a, b = evaluate(e[1], slots, grid, block), evaluate(e[2], slots, grid, block)
        return int(a < b if op == "lt" else a <= b if op == "le" else a > b if op == "gt"
                   else a >= b if op == "ge" else a == b if op == "eq" else a != b)
    if op == "and":
        return int(all(evaluate(x, slots, grid, block) for x in e[1]))
    if op == "or":
        return int(any(evaluate(x, slots, grid, block) for x in e[1]))
    if op == "not":
        return int(not evaluate(e[1], slots, grid, block))
    raise ValueError(f"unknown precondition operation {op!r}: the manifest is newer than this oxide")


def failed(preconditions: Sequence[Any], slots: Sequence[Any], grid: Sequence[int],
           block: Sequence[int]) -> int | None:
    """The error site of the first precondition that does not hold, or None."""
    for c in preconditions:
        if not evaluate(c.expr, slots, grid, block):
            return int(c.site)
    return None
