"""What one registry entry holds: an intrinsic's attributes, its typing and its lowering.

The entries live in the group modules beside the functions they point to (``thread.py``,
``memory.py``, ``vector.py``, ``warp.py``, ``atomic.py``, ``math.py``, ``bits.py``); ``oxide_build/intrinsics/__init__.py``
collects them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import ast

    from llvmlite import ir as ll

    from ..ir import nodes as ir
    from .context import LoweringContext, TypingContext

__all__ = ["IntrinsicInfo", "Typing", "Lowering"]

# typing: checks a call's arguments and makes its ir.Intrinsic (the result type decided)
Typing = Callable[["TypingContext", "IntrinsicInfo", "ast.Call"], "ir.Expr"]
# lowering: the LLVM value of an ir.Intrinsic of this entry
Lowering = Callable[["LoweringContext", "IntrinsicInfo", "ir.Intrinsic"], "ll.Value"]


@dataclass(frozen=True)
class IntrinsicInfo:
    """One intrinsic of the language.

    - ``thread_dependent``: its value can differ between the threads of a block (the thread's
      lane, memory another thread writes, a warp vote), so a condition on it is divergent;
    - ``convergent``: the threads of a warp must reach it together (shuffles, votes, warp
      sync); the lowering marks the LLVM functions it calls ``convergent`` from this;
    - ``keywords``: the keyword arguments it takes (a call of anything else with keywords is
      an error);
    - ``value_range``: the bounds of its integer result, for the bounds prover.
    - ``method``: it is a method of a view (``x.load4(k)``), named ``view.<method>`` here, not
      a name in the oxide namespace.
    - ``builtin``: it is a Python builtin (``print``), named ``builtin.<name>`` here, not a
      name in the oxide namespace.
    - ``parameters``: the names of its positional parameters, which a call may also pass by
      keyword (numba's ``shared.array(shape=..., dtype=...)``); the frontend puts them in
      place before the typing sees the call.
    - ``min_arch``: the oldest arch with the instruction (``"sm_90"``: that arch and newer);
      an arch-specific one (``"sm_90a"``) means exactly that arch, as its instructions do not
      carry forward. A kernel built for another arch is a located compile error
      (``passes/arch_requirements.py``).
    """

    name: str  # the language's name: "warp.shfl_down", "math.exp", "atomic.add"
    typing: Typing
    lowering: Lowering
    thread_dependent: bool = False
    convergent: bool = False
    keywords: tuple[str, ...] = ()
    value_range: tuple[int, int] | None = None
    method: bool = False
    builtin: bool = False
    parameters: tuple[str, ...] = ()
    min_arch: str | None = None

    @property
    def group(self) -> str:
        """The namespace in the language: "warp", "atomic", "math", ..."""
        return self.name.partition(".")[0]

    @property
    def op(self) -> str:
        """The name inside its group: "shfl_down", "exp", "add"."""
        return self.name.partition(".")[2]
