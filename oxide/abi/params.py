"""The kernel parameter block: how each parameter of a kernel is passed.

Every slot is 8 bytes (``SLOT_BYTES``). A scalar takes one slot (its value, zero-extended
to 8 bytes); a 1-D view (``Slice``, ``DisjointSlice``, ``MutSlice``) two: its device pointer
(u64) and its length in elements (i64); a tensor ``1 + 2 * ndim``: its pointer, its shape and
its strides (in elements, i64); a constexpr parameter none (it is compiled in). A struct or
vector parameter (``STRUCT_PARAM``, ``VECTOR_PARAM``) is flattened: each of its scalar fields,
in declaration order (a nested struct's or vector field's own fields in place), takes one slot
like a scalar parameter, and the kernel reassembles the value on entry. A TMA descriptor
(``TENSOR_MAP_PARAM``, ``ox.tma.Descriptor[T, N]``) takes ``TENSOR_MAP_SLOTS``: the 128-byte
``CUtensorMap`` (16 slots; the kernel's ``__grid_constant__`` parameter of 128 bytes aligned to
64, which the driver copies from the block, so the block itself needs no such alignment) and
one slot with the number of elements in one box (its low 32 bits) and the map's swizzle in
bytes (0, 32, 64 or 128, the bits above), which the kernel's checks of ``tma.load``/``tma.store``
and ``tma.box_bytes``/``tma.swizzle`` read. Launch preconditions name slots by their
index in this layout.

The runtime always packs every slot; a kernel entry point may declare fewer parameters (those
its code reads: ``KernelSpec.param_slots``, ``oxide.abi.manifest.entry_param_starts``), and the
launch then passes pointers to those slots alone.
"""
from __future__ import annotations

from .views import ViewKind

__all__ = ["SCALAR_PARAM", "CONSTEXPR_PARAM", "STRUCT_PARAM", "VECTOR_PARAM", "AGGREGATE_PARAMS", "SLOT_BYTES",
           "TENSOR_MAP_PARAM", "TENSOR_MAP_BYTES", "TENSOR_MAP_ALIGN", "TENSOR_MAP_SLOTS", "TENSOR_MAP_MAX_NDIM",
           "param_slot_count"]

SCALAR_PARAM = "scalar"  # ParamSpec.kind of a value parameter
CONSTEXPR_PARAM = "constexpr"  # ParamSpec.kind of a compile-time parameter (not passed)
STRUCT_PARAM = "struct"  # ParamSpec.kind of an @oxide.struct value: ParamSpec.fields lists its scalars
VECTOR_PARAM = "vector"  # ParamSpec.kind of a vector value (f32x4, ...): one field per lane
AGGREGATE_PARAMS = frozenset((STRUCT_PARAM, VECTOR_PARAM))
TENSOR_MAP_PARAM = "tensor_map"  # ParamSpec.kind of an ox.tma.Descriptor[T, N]: dtype T, ndim N
SLOT_BYTES = 8
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGN = 64  # alignof(CUtensorMap): the kernel parameter's .align
TENSOR_MAP_SLOTS = TENSOR_MAP_BYTES // SLOT_BYTES + 1  # the map, then the elements of one box
TENSOR_MAP_MAX_NDIM = 5  # cuTensorMapEncodeTiled and cp.async.bulk.tensor: 1 to 5 dimensions


def param_slot_count(kind: str, ndim: int = 1, fields: int = 0) -> int:
    """How many slots a parameter of ``kind`` (a ``ViewKind`` value, ``SCALAR_PARAM``,
    ``CONSTEXPR_PARAM``, ``TENSOR_MAP_PARAM``, or ``STRUCT_PARAM``/``VECTOR_PARAM`` of ``fields``
    scalar fields) takes."""
    if kind == CONSTEXPR_PARAM:
        return 0
    if kind in AGGREGATE_PARAMS:
        return fields
    if kind == SCALAR_PARAM:
        return 1
    if kind == TENSOR_MAP_PARAM:
        return TENSOR_MAP_SLOTS
    return 1 + 2 * ndim if ViewKind(kind).is_tensor else 2
