"""The device intrinsics, one registry entry each: what the stages need to know about an
intrinsic besides its typing (``frontend/intrinsics.py``) and its lowering
(``lower/intrinsics.py``), which dispatch on the entry's ``group``.

- ``thread_dependent``: its value can differ between the threads of a block (the thread's
  lane, memory another thread writes, a warp vote), so a condition on it is divergent;
- ``convergent``: the threads of a warp must reach it together (shuffles, votes, warp sync);
- ``keywords``: the keyword arguments it takes (a call of anything else with keywords is an
  error);
- ``value_range``: the bounds of its integer result, for the bounds prover.

Adding an intrinsic: its entry here, its typing and lowering in the group's function (or a
new group), its stub in ``oxide/lang/intrinsics.py``, docs/language.md and tests.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "IntrinsicInfo", "INTRINSICS", "intrinsic_info",
    "MATH_UNARY", "MATH_BINARY", "MATH_PREDICATES", "ATOMIC_OPS", "SHUFFLES", "WARP_REDUCE",
]


@dataclass(frozen=True)
class IntrinsicInfo:
    name: str  # the language's name: "warp.shfl_down", "math.exp", "atomic.add"
    thread_dependent: bool = False
    convergent: bool = False
    keywords: tuple[str, ...] = ()
    value_range: tuple[int, int] | None = None

    @property
    def group(self) -> str:
        """What the typing and the lowering dispatch on: "warp", "atomic", "math", ..."""
        return self.name.partition(".")[0]


MATH_UNARY = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "tanh",
              "erf", "abs", "floor", "ceil", "trunc", "round")
MATH_BINARY = ("pow", "min", "max", "atan2", "fmod")
MATH_PREDICATES = ("isnan", "isinf", "isfinite")
ATOMIC_OPS = ("add", "sub", "min", "max", "exch", "and_", "or_", "xor", "inc", "dec")
SHUFFLES = ("shfl_idx", "shfl_up", "shfl_down", "shfl_xor")
WARP_REDUCE = ("reduce_sum", "reduce_min", "reduce_max")

_ENTRIES = [
    IntrinsicInfo("shared.array"),
    IntrinsicInfo("shared.dynamic"),
    IntrinsicInfo("local.array"),
    IntrinsicInfo("warp.lane", thread_dependent=True, value_range=(0, 31)),
    IntrinsicInfo("warp.id", thread_dependent=True, value_range=(0, 31)),
    IntrinsicInfo("warp.sync", thread_dependent=True, convergent=True),
    *(IntrinsicInfo(f"warp.{op}", thread_dependent=True, convergent=True)
      for op in ("all", "any", "ballot", "match_any", *SHUFFLES, *WARP_REDUCE)),
    # an atomic returns the value it replaced: which thread saw which is a race
    *(IntrinsicInfo(f"atomic.{op}", thread_dependent=True, keywords=("scope",)) for op in ("cas", *ATOMIC_OPS)),
    *(IntrinsicInfo(f"fence.{scope}") for scope in ("block", "device", "system")),
    *(IntrinsicInfo(f"math.{op}") for op in ("fma", *MATH_UNARY, *MATH_BINARY, *MATH_PREDICATES)),
]
INTRINSICS: dict[str, IntrinsicInfo] = {e.name: e for e in _ENTRIES}
assert len(INTRINSICS) == len(_ENTRIES), "an intrinsic is registered twice"


def intrinsic_info(name: str) -> IntrinsicInfo | None:
    """The entry of a language intrinsic; None for the IR's internal ones (``checked_index``,
    ``flat_index``, vector loads), which are none of the above."""
    return INTRINSICS.get(name)
