"""The device intrinsics, one registry entry each (``entry.IntrinsicInfo``): its typing, its
lowering and its attributes (thread-dependent, convergent, keywords, value range).

The entries live in one module per group, beside the functions they point to:
``thread.py`` (thread indices, ``block.sync``, special registers), ``memory.py`` (shared/local
arrays, fences, volatile and cache-hinted access), ``vector.py`` (the view methods ``load2/4``, ``store2/4``), ``warp.py``,
``atomic.py``, ``math.py``, ``bits.py``, ``timer.py``, ``printing.py`` (``print()``), ``asm.py`` (inline PTX),
``mma.py`` (tensor-core fragments, ``mma.sync``, ``ldmatrix``, swizzle), ``cp_async.py`` (asynchronous global-to-shared
copies), ``wgmma.py`` (sm_90a warpgroup MMA, ``warpgroup.*``, ``fence.proxy_async``), ``mbarrier.py`` (shared-memory
barriers with transaction counts), ``tma.py`` (tensor-map copies), ``cluster.py`` (thread block clusters),
``selection.py`` (the builtins ``min``, ``max``, ``abs``).

A typing function sees the frontend as a ``context.TypingContext``, a lowering sees the LLVM
lowering as a ``context.LoweringContext``: no intrinsic module imports ``frontend/`` or
``lower/``, and none imports llvmlite when it loads (``lazy_llvm.py``), so building the IR
needs no llvmlite. Adding an
intrinsic to a group is an entry and its two functions in that group's
module; a new group is a new module listed in ``GROUPS`` below. The language's stub goes in
``oxide/lang/intrinsics.py`` (the runtime package, which cannot import this one); document it
in docs/language.md and test it.
"""
from __future__ import annotations

from . import (asm, atomic, bits, cluster, cp_async, math, mbarrier, memory, mma, printing, selection, thread, timer, tma,
               vector, warp, wgmma)
from .entry import IntrinsicInfo, Role

from ..ir import nodes as ir

__all__ = ["IntrinsicInfo", "INTRINSICS", "KEYWORD_INTRINSICS", "Role", "has_role", "intrinsic_info"]

GROUPS = (thread, memory, vector, warp, atomic, math, bits, timer, printing, asm, mma, cp_async, wgmma, mbarrier, tma, cluster,
          selection)
_ENTRIES = [entry for group in GROUPS for entry in group.ENTRIES]
INTRINSICS: dict[str, IntrinsicInfo] = {e.name: e for e in _ENTRIES}
assert len(INTRINSICS) == len(_ENTRIES), "an intrinsic is registered twice"
# intrinsics that take keyword arguments (every other call in a kernel rejects keywords)
KEYWORD_INTRINSICS = frozenset(name for name, info in INTRINSICS.items() if info.keywords or info.parameters)


def intrinsic_info(name: str) -> IntrinsicInfo | None:
    """The entry of a language intrinsic; None for the IR's internal ones (``checked_index``,
    ``flat_index``), which are none of the above."""
    return INTRINSICS.get(name)


def has_role(e: ir.Expr, role: Role) -> bool:
    """Whether ``e`` is a call of an intrinsic whose entry declares ``role``: what passes ask
    instead of matching names."""
    if not isinstance(e, ir.Intrinsic):
        return False
    info = INTRINSICS.get(e.name)
    return info is not None and role in info.roles
