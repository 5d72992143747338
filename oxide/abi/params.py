"""The kernel parameter block: how each parameter of a kernel is passed.

Every slot is 8 bytes (``SLOT_BYTES``). A scalar takes one slot (its value, zero-extended
to 8 bytes); a 1-D view (``Slice``, ``DisjointSlice``, ``MutSlice``) two: its device pointer
(u64) and its length in elements (i64); a tensor ``1 + 2 * ndim``: its pointer, its shape and
its strides (in elements, i64); a constexpr parameter none (it is compiled in). Launch
preconditions name slots by their index in this layout.
"""
from __future__ import annotations

from .views import ViewKind

__all__ = ["SCALAR_PARAM", "CONSTEXPR_PARAM", "SLOT_BYTES", "param_slot_count"]

SCALAR_PARAM = "scalar"  # ParamSpec.kind of a value parameter
CONSTEXPR_PARAM = "constexpr"  # ParamSpec.kind of a compile-time parameter (not passed)
SLOT_BYTES = 8


def param_slot_count(kind: str, ndim: int = 1) -> int:
    """How many slots a parameter of ``kind`` (a ``ViewKind`` value, ``SCALAR_PARAM`` or
    ``CONSTEXPR_PARAM``) takes."""
    if kind == CONSTEXPR_PARAM:
        return 0
    if kind == SCALAR_PARAM:
        return 1
    return 1 + 2 * ndim if ViewKind(kind).is_tensor else 2
