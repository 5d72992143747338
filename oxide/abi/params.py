"""The kernel parameter block: how each parameter of a kernel is passed.

Every slot is 8 bytes (``SLOT_BYTES``). A scalar takes one slot (its value, zero-extended
to 8 bytes); a 1-D view (``Slice``, ``DisjointSlice``, ``MutSlice``) two: its device pointer
(u64) and its length in elements (i64); a tensor ``1 + 2 * ndim``: its pointer, its shape and
its strides (in elements, i64); a constexpr parameter none (it is compiled in). A struct or
vector parameter (``STRUCT_PARAM``, ``VECTOR_PARAM``) is flattened: each of its scalar fields,
in declaration order (a nested struct's or vector field's own fields in place), takes one slot
like a scalar parameter, and the kernel reassembles the value on entry. Launch preconditions
name slots by their index in this layout.
"""
from __future__ import annotations

from .views import ViewKind

__all__ = ["SCALAR_PARAM", "CONSTEXPR_PARAM", "STRUCT_PARAM", "VECTOR_PARAM", "AGGREGATE_PARAMS", "SLOT_BYTES",
           "param_slot_count"]

SCALAR_PARAM = "scalar"  # ParamSpec.kind of a value parameter
CONSTEXPR_PARAM = "constexpr"  # ParamSpec.kind of a compile-time parameter (not passed)
STRUCT_PARAM = "struct"  # ParamSpec.kind of an @oxide.struct value: ParamSpec.fields lists its scalars
VECTOR_PARAM = "vector"  # ParamSpec.kind of a vector value (f32x4, ...): one field per lane
AGGREGATE_PARAMS = frozenset((STRUCT_PARAM, VECTOR_PARAM))
SLOT_BYTES = 8


def param_slot_count(kind: str, ndim: int = 1, fields: int = 0) -> int:
    """How many slots a parameter of ``kind`` (a ``ViewKind`` value, ``SCALAR_PARAM``,
    ``CONSTEXPR_PARAM``, or ``STRUCT_PARAM``/``VECTOR_PARAM`` of ``fields`` scalar fields) takes."""
    if kind == CONSTEXPR_PARAM:
        return 0
    if kind in AGGREGATE_PARAMS:
        return fields
    if kind == SCALAR_PARAM:
        return 1
    return 1 + 2 * ndim if ViewKind(kind).is_tensor else 2
