"""Kernel preconditions checked at launch (``KernelSpec.preconditions``).

A leading ``assert`` of a kernel whose condition depends only on the launch — scalar
arguments, view lengths and shapes, ``grid.dim``, ``block.dim`` — is compiled into the manifest
instead of the device code, and so are the grid limits that the compiler's bounds proofs assume.
Both launch paths check them before ``cuLaunchKernel``; a failure raises ``oxide.KernelError``
at the launch, with the assert's location.

Each is a program of ``oxide.abi.preconditions`` (postfix code, as the manifest holds it), run
here over the kernel's packed parameter slots (``oxide.abi.params``; the values ``ArgPacker``
packs) and the launch dimensions: the same program the C launcher and ``oxide/launch.hpp``
evaluate with ``oxide/preconditions.h``. The manifest's reader has checked it
(``program_problem``): every operand is in range and the stack never runs dry.
"""
from __future__ import annotations

from typing import Any, Sequence

from oxide.abi.launcher import DTYPE_CODES
from oxide.abi.preconditions import OPCODE

__all__ = ["evaluate", "failed"]

# dtype code -> (bits, signed) of the wrapping operations' types
_WRAP = {DTYPE_CODES[t]: (int(t[1:]), t[0] == "i") for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")}
_BOOL = DTYPE_CODES["bool"]
(_CONST, _ARG, _GRID, _BLOCK, _CAST, _ADD, _SUB, _MUL, _NEG, _LT, _LE, _GT, _GE, _EQ, _NE, _AND, _OR, _NOT,
 _TRUTH) = (OPCODE[name] for name in ("const", "arg", "grid", "block", "cast", "add", "sub", "mul", "neg", "lt",
                                      "le", "gt", "ge", "eq", "ne", "and", "or", "not", "truth"))


def _wrap(ty: int, v: int) -> int:
    if ty == _BOOL:
        return 1 if v else 0
    bits, signed = _WRAP[ty]
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def evaluate(program: Sequence[tuple[int, int]], slots: Sequence[Any], grid: Sequence[int],
             block: Sequence[int]) -> int:
    """The value ``program`` leaves (an int; conditions give 0 or 1)."""
    stack: list[int] = []
    push, pop = stack.append, stack.pop
    for op, x in program:
        if op == _CONST:
            push(x)
        elif op == _ARG:
            push(int(slots[x]))
        elif op == _GRID:
            push(int(grid[x]))
        elif op == _BLOCK:
            push(int(block[x]))
        elif op == _EQ:
            b = pop()
            stack[-1] = int(stack[-1] == b)
        elif op == _AND:
            b = pop()
            stack[-1] = int(bool(stack[-1]) and bool(b))
        elif op == _TRUTH:
            stack[-1] = int(bool(stack[-1]))
        elif op == _CAST:
            stack[-1] = _wrap(x, stack[-1])
        elif op in (_ADD, _SUB, _MUL):
            b = pop()
            a = stack[-1]
            stack[-1] = _wrap(x, a + b if op == _ADD else a - b if op == _SUB else a * b)
        elif op == _NEG:
            stack[-1] = _wrap(x, -stack[-1])
        elif op == _LT:
            b = pop()
            stack[-1] = int(stack[-1] < b)
        elif op == _LE:
            b = pop()
            stack[-1] = int(stack[-1] <= b)
        elif op == _GT:
            b = pop()
            stack[-1] = int(stack[-1] > b)
        elif op == _GE:
            b = pop()
            stack[-1] = int(stack[-1] >= b)
        elif op == _NE:
            b = pop()
            stack[-1] = int(stack[-1] != b)
        elif op == _OR:
            b = pop()
            stack[-1] = int(bool(stack[-1]) or bool(b))
        elif op == _NOT:
            stack[-1] = int(not stack[-1])
        else:
            raise ValueError(f"unknown precondition opcode {op!r}: the manifest is newer than this oxide")
    return stack[-1]


def failed(preconditions: Sequence[Any], slots: Sequence[Any], grid: Sequence[int],
           block: Sequence[int]) -> int | None:
    """The error site of the first precondition that does not hold, or None."""
    for c in preconditions:
        if not evaluate(c.code, slots, grid, block):
            return int(c.site)
    return None
