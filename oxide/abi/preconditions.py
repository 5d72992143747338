"""Launch preconditions (``KernelSpec.preconditions``): the compiler's expressions and the
program every launcher evaluates.

The compiler writes a condition as an *expression*, nested lists:

- ``["const", v]``: an integer (bools are 0 and 1)
- ``["arg", k]``: parameter slot ``k`` (see ``oxide.abi.params``)
- ``["grid", a]``, ``["block", a]``: ``grid.dim`` / ``block.dim`` along axis ``a`` (0, 1, 2)
- ``["cast", ty, e]``: ``e`` converted to integer type ``ty`` (wrapping, like the device)
- ``["add" | "sub" | "mul", ty, a, b]``, ``["neg", ty, a]``: arithmetic in ``ty``, wrapping
- ``["lt" | "le" | "gt" | "ge" | "eq" | "ne", a, b]``: comparisons of the values
- ``["and", [e…]]``, ``["or", [e…]]``, ``["not", e]``

with types from ``INTEGER_TYPES``. The build compiles each into a *program* (``compile_expression``),
which is what the manifest holds and what the three launchers evaluate: the Python runtime
(``oxide.runtime.preconditions``), its C launcher and ``oxide/launch.hpp`` (both through
``oxide/preconditions.h``). A program is postfix code, a list of ``[opcode, operand]`` pairs
over a stack of integers; the opcodes are the indices of ``OPCODES`` (``OXIDE_OP_*`` in
``oxide/abi.h``):

- ``const v`` pushes ``v`` (``CONST_MIN`` <= v <= ``CONST_MAX``); ``arg k`` slot ``k`` as the
  runtime packed it (an integer or bool slot: its dtype is the parameter's); ``grid a`` and
  ``block a`` the launch dimension along axis ``a``
- ``cast ty``, ``neg ty`` replace the top by it in type ``ty`` (a dtype code of
  ``oxide.abi.launcher.DTYPE_CODES`` of an integer type; bool for ``cast`` only); ``add ty``,
  ``sub ty``, ``mul ty`` pop two and push the result, wrapped to ``ty``
- the comparisons pop two and push 0 or 1; ``truth`` replaces the top by 0 or 1, ``not`` by its
  negation; ``and``, ``or`` pop two truth values and push one
- ``check i`` pops the value of precondition ``i``: 0 fails it. A launcher appends it to each
  program (a program in a manifest holds none) and evaluates a kernel's programs as one.

The operand of the other opcodes is 0. A program leaves exactly one value, never needs more
than ``STACK_LIMIT`` of them, and a kernel's programs (with their checks) have at most
``KERNEL_PROGRAM_LIMIT`` instructions: the manifest's reader refuses another, and the compiler
leaves on the device an ``assert`` that would exceed them.

Every value lies in [-2**63, 2**64): slots, dimensions and the wrapping operations' results are
i64 or u64 values, so a C evaluator holds a value as 64 bits and a sign and is exact.
"""
from __future__ import annotations

from typing import Any, Sequence

from .launcher import DTYPE_CODES

__all__ = ["INTEGER_TYPES", "ARITHMETIC", "COMPARISONS", "LEAVES", "LOGIC", "OPERATIONS", "OPCODES",
           "OPCODE", "CONST_MIN", "CONST_MAX", "STACK_LIMIT", "KERNEL_PROGRAM_LIMIT", "Instruction",
           "compile_expression", "stack_depth", "program_problem"]

INTEGER_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool")
LEAVES = ("const", "arg", "grid", "block")
# the compiler's operator -> the encoding's name
ARITHMETIC: dict[str, str] = {"+": "add", "-": "sub", "*": "mul"}
COMPARISONS: dict[str, str] = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
LOGIC = ("and", "or", "not")
OPERATIONS = (*LEAVES, "cast", *ARITHMETIC.values(), "neg", *COMPARISONS.values(), *LOGIC)  # of expressions
OPCODES = (*OPERATIONS, "truth", "check")  # of programs: an opcode is its index
OPCODE: dict[str, int] = {name: i for i, name in enumerate(OPCODES)}
CONST_MIN, CONST_MAX = -2**63, 2**64 - 1
STACK_LIMIT = 32  # values on a program's stack at most
KERNEL_PROGRAM_LIMIT = 4096  # instructions of one kernel's programs, their checks included

Instruction = tuple[int, int]  # (opcode, operand)

_TYPED = frozenset(("cast", *ARITHMETIC.values(), "neg"))
# opcode -> the change of the stack's height
_EFFECT = {**{OPCODE[op]: 1 for op in LEAVES}, OPCODE["cast"]: 0, OPCODE["neg"]: 0, OPCODE["not"]: 0,
           OPCODE["truth"]: 0, OPCODE["check"]: -1,
           **{OPCODE[op]: -1 for op in (*ARITHMETIC.values(), *COMPARISONS.values(), "and", "or")}}
_INTEGER_CODES = frozenset(DTYPE_CODES[t] for t in INTEGER_TYPES)


def compile_expression(e: Any) -> list[Instruction]:
    """The program of a well-formed expression (the compiler's; ``KeyError``/``IndexError`` for
    another)."""
    out: list[Instruction] = []
    _emit(e, out)
    return out


def _emit(e: Any, out: list[Instruction]) -> None:
    op = e[0]
    if op in LEAVES:
        out.append((OPCODE[op], int(e[1])))
    elif op in _TYPED:
        for operand in e[2:]:
            _emit(operand, out)
        out.append((OPCODE[op], DTYPE_CODES[e[1]]))
    elif op in ("and", "or"):
        if not e[1]:  # all([]) is 1, any([]) is 0
            out.append((OPCODE["const"], int(op == "and")))
            return
        _emit(e[1][0], out)
        out.append((OPCODE["truth"], 0))
        for operand in e[1][1:]:
            _emit(operand, out)
            out.append((OPCODE[op], 0))
    else:  # the comparisons and not
        for operand in e[1:]:
            _emit(operand, out)
        out.append((OPCODE[op], 0))


def stack_depth(program: Sequence[Instruction]) -> int:
    """The most values ``program`` (a well-formed one) holds on the stack at once."""
    height = deepest = 0
    for op, _ in program:
        height += _EFFECT[op]
        deepest = max(deepest, height)
    return deepest


def program_problem(program: Sequence[Any], slot_dtypes: Sequence[str]) -> str | None:
    """Why ``program`` is not a program of the encoding over slots of ``slot_dtypes`` (scalar
    type names, one per slot), or None; the ``i``-th instruction is named ``[i]``."""
    height = 0
    for i, insn in enumerate(program):
        if not isinstance(insn, (list, tuple)) or len(insn) != 2:
            return f"[{i}]: {str(insn)[:60]} is not an [opcode, operand] pair of integers"
        op, operand = insn
        if not (type(op) is int or isinstance(op, int) and not isinstance(op, bool)) or not (
                type(operand) is int or isinstance(operand, int) and not isinstance(operand, bool)):
            return f"[{i}]: {str(insn)[:60]} is not an [opcode, operand] pair of integers"
        name = OPCODES[op] if 0 <= op < len(OPCODES) - 1 else None  # "check": a launcher's, never a manifest's
        if name is None:
            return f"[{i}]: {op} is not an opcode of the encoding (0 to {len(OPCODES) - 2})"
        if name == "const":
            if not CONST_MIN <= operand <= CONST_MAX:
                return f"[{i}]: the constant {str(operand)[:40]} is outside {CONST_MIN} to {CONST_MAX}"
        elif name == "arg":
            if not 0 <= operand < len(slot_dtypes):
                return f"[{i}]: slot {str(operand)[:40]} is not one of the kernel's {len(slot_dtypes)} slots"
            if slot_dtypes[operand] not in INTEGER_TYPES:
                return f"[{i}]: slot {operand} holds a {slot_dtypes[operand]}, not an integer"
        elif name in ("grid", "block"):
            if operand not in (0, 1, 2):
                return f"[{i}]: axis {str(operand)[:40]} is not 0, 1 or 2"
        elif name in _TYPED:
            if operand not in _INTEGER_CODES or (name != "cast" and operand == DTYPE_CODES["bool"]):
                allowed = INTEGER_TYPES if name == "cast" else INTEGER_TYPES[:-1]
                return (f"[{i}]: {name}'s type {str(operand)[:40]} is not the dtype code of "
                        f"{', '.join(allowed)} ({', '.join(str(DTYPE_CODES[t]) for t in allowed)})")
        elif operand != 0:
            return f"[{i}]: {name} takes the operand 0, not {str(operand)[:40]}"
        pops = 0 if name in LEAVES else 1 if _EFFECT[op] == 0 else 2
        if height < pops:
            return f"[{i}]: {name} takes {pops} values; the stack holds {height}"
        height += _EFFECT[op]
        if height > STACK_LIMIT:
            return f"[{i}]: the stack holds more than {STACK_LIMIT} values"
    if height != 1:
        return f"leaves {height} values on the stack, not one"
    return None
