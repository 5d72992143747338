"""The encoding of launch preconditions (``KernelSpec.preconditions``): nested lists, as JSON.

- ``["const", v]``: an integer (bools are 0 and 1)
- ``["arg", k]``: parameter slot ``k`` (see ``oxide.abi.params``)
- ``["grid", a]``, ``["block", a]``: ``grid.dim`` / ``block.dim`` along axis ``a`` (0, 1, 2)
- ``["cast", ty, e]``: ``e`` converted to integer type ``ty`` (wrapping, like the device)
- ``["add" | "sub" | "mul", ty, a, b]``, ``["neg", ty, a]``: arithmetic in ``ty``, wrapping
- ``["lt" | "le" | "gt" | "ge" | "eq" | "ne", a, b]``: comparisons of the values
- ``["and", [e…]]``, ``["or", [e…]]``, ``["not", e]``

Types are ``INTEGER_TYPES``. The compiler writes it (``oxide_build.frontend``), the runtime
evaluates it (``oxide.runtime.preconditions`` and the C launcher).
"""
from __future__ import annotations

__all__ = ["INTEGER_TYPES", "ARITHMETIC", "COMPARISONS", "LEAVES", "LOGIC", "OPERATIONS"]

INTEGER_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool")
LEAVES = ("const", "arg", "grid", "block")
# the compiler's operator -> the encoding's name
ARITHMETIC: dict[str, str] = {"+": "add", "-": "sub", "*": "mul"}
COMPARISONS: dict[str, str] = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
LOGIC = ("and", "or", "not")
OPERATIONS = (*LEAVES, "cast", *ARITHMETIC.values(), "neg", *COMPARISONS.values(), *LOGIC)
