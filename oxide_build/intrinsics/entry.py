"""What one registry entry holds: an intrinsic's attributes, its typing and its lowering.

The entries live in the group modules beside the functions they point to (``thread.py``,
``memory.py``, ``vector.py``, ``warp.py``, ``atomic.py``, ``math.py``, ``bits.py``); ``oxide_build/intrinsics/__init__.py``
collects them.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import ast

    from llvmlite import ir as ll

    from ..ir import nodes as ir
    from .context import LoweringContext, TypingContext

__all__ = ["IntrinsicInfo", "Role", "Typing", "Lowering"]

# typing: checks a call's arguments and makes its ir.Intrinsic (the result type decided)
Typing = Callable[["TypingContext", "IntrinsicInfo", "ast.Call"], "ir.Expr"]
# lowering: the LLVM value of an ir.Intrinsic of this entry
Lowering = Callable[["LoweringContext", "IntrinsicInfo", "ir.Intrinsic"], "ll.Value"]


class Role(Enum):
    """What a pass needs to know an intrinsic does, declared in its entry (``roles``): the
    passes ask for a role, never for a name, so that a new intrinsic of the kind is seen by
    every pass that cares by declaring the role."""

    # barriers and ordering (passes/divergence.py, passes/mbarrier_lint.py)
    BLOCK_BARRIER = auto()  # every thread of the block must reach it together (block votes)
    GRID_BARRIER = auto()  # every thread of the grid must reach it together (grid.sync)
    ORDERS_THREADS = auto()  # orders what threads did before it for those after it (bar.sync, inline PTX)
    # how alike its result is across the block (passes/uniformity.py); otherwise from its
    # operands (and thread_dependent: may differ, nothing says how)
    LANE_VARYING = auto()  # differs between the threads of one warpgroup
    WARPGROUP_UNIFORM = auto()  # the same in the 128 threads of a warpgroup
    BLOCK_UNIFORM = auto()  # the same in every thread of the block (a block vote's answer)
    # warpgroup collectives (passes/warpgroup_divergence.py)
    WARPGROUP_COLLECTIVE = auto()  # all 128 threads of a warpgroup must reach it at once
    # asynchronous warpgroup MMA on register arrays (passes/wgmma_fence.py, passes/wgmma_order.py)
    WGMMA = auto()  # reads or writes its register arrays asynchronously (not an access of the thread)
    WGMMA_MMA = auto()
    WGMMA_FENCE = auto()
    WGMMA_COMMIT = auto()
    WGMMA_WAIT = auto()
    # shared-memory barriers (passes/mbarrier_lint.py)
    MBARRIER_ARRAY = auto()  # makes a barrier array
    MBARRIER_INIT = auto()
    MBARRIER_EXPECT_TX = auto()  # sets the bytes a phase waits for
    MBARRIER_WAIT = auto()  # returns once the phase completed
    MBARRIER_INVALIDATE = auto()
    MBARRIER_INIT_FENCE = auto()  # makes inits visible to the async proxy (or may: inline PTX)
    ASYNC_BYTES = auto()  # counts the bytes it moves on a barrier it names (TMA)
    # a value of the thread's place in the launch (its lane, its warp): no operands, no
    # memory, the same wherever the thread evaluates it, so a pass may evaluate it again
    # elsewhere (passes/check_versioning.py: a loop's start, tested before the loop)
    POSITION = auto()
    # the CPU device (backends/cpu/codegen.py): lets the other threads run (nanosleep), so its
    # kernel's threads run as fibers
    YIELDS = auto()


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
    - ``roles``: what passes need to know it does (``Role``);
    - ``thread_stride``: its result is the block's linear thread index divided by this
      (``warp.id()``: 32), for the uniformity analysis;
    - ``vector_lanes``: the elements a vector access reads or writes at once (``x.load4``: 4);
    - ``cpu_lowering``: its host-code form for the CPU device, where its ``lowering`` emits
      what only a GPU runs (inline PTX, NVVM intrinsics, libdevice); None: ``lowering`` serves
      both, and what it emits that the host cannot run is refused at compile time, naming the
      intrinsic (``lower/intrinsics.py``).
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
    roles: frozenset[Role] = frozenset()
    thread_stride: int | None = None
    vector_lanes: int | None = None
    cpu_lowering: Lowering | None = None

    def has(self, role: Role) -> bool:
        return role in self.roles

    @property
    def group(self) -> str:
        """The namespace in the language: "warp", "atomic", "math", ..."""
        return self.name.partition(".")[0]

    @property
    def op(self) -> str:
        """The name inside its group: "shfl_down", "exp", "add"."""
        return self.name.partition(".")[2]
