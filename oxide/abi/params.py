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
and ``tma.box_bytes``/``tma.swizzle`` read. An optional view (``Optional[Tensor[f32, 2]]``,
``ParamSpec.optional``) takes its view's slots and one more after them (``PRESENT_SLOTS``): 1
where an array was passed, 0 for None, whose view slots are then all 0 (a null pointer, zero
length, shape and strides). Launch preconditions name slots by their index in this layout.

The runtime always packs every slot; a kernel entry point may declare fewer parameters (those
its code reads: ``KernelSpec.param_slots``, ``oxide.abi.manifest.entry_param_starts``), and the
launch then passes pointers to those slots alone.
"""
from __future__ import annotations

from typing import Sequence

from .views import ViewKind

__all__ = ["SCALAR_PARAM", "CONSTEXPR_PARAM", "STRUCT_PARAM", "VECTOR_PARAM", "AGGREGATE_PARAMS", "SLOT_BYTES",
           "SCALAR_SLOTS", "VIEW_POINTER_SLOTS", "SLICE_SLOTS", "TENSOR_DIM_SLOTS", "tensor_slot_count",
           "TENSOR_MAP_PARAM", "TENSOR_MAP_BYTES", "TENSOR_MAP_ALIGN", "TENSOR_MAP_WORDS", "TENSOR_MAP_SLOTS",
           "TENSOR_MAP_MAX_NDIM", "param_slot_count", "param_slot_dtypes", "VIEW_POINTER_DTYPE", "VIEW_DIM_DTYPE",
           "TENSOR_MAP_DTYPE", "TENSOR_MAP_MAX_BOX", "TENSOR_MAP_SWIZZLES", "TENSOR_MAP_SWIZZLE_SHIFT",
           "tensor_map_box_slot", "PRESENT_SLOTS", "PRESENT_DTYPE"]

SCALAR_PARAM = "scalar"  # ParamSpec.kind of a value parameter
CONSTEXPR_PARAM = "constexpr"  # ParamSpec.kind of a compile-time parameter (not passed)
STRUCT_PARAM = "struct"  # ParamSpec.kind of an @oxide.struct value: ParamSpec.fields lists its scalars
VECTOR_PARAM = "vector"  # ParamSpec.kind of a vector value (f32x4, ...): one field per lane
AGGREGATE_PARAMS = frozenset((STRUCT_PARAM, VECTOR_PARAM))
TENSOR_MAP_PARAM = "tensor_map"  # ParamSpec.kind of an ox.tma.Descriptor[T, N]: dtype T, ndim N
SLOT_BYTES = 8
SCALAR_SLOTS = 1  # a scalar parameter, or one scalar field of a struct or vector
VIEW_POINTER_SLOTS = 1  # a view's device pointer, its first slot
SLICE_SLOTS = VIEW_POINTER_SLOTS + 1  # the pointer, then the length
TENSOR_DIM_SLOTS = 2  # a tensor's extent and its stride, per dimension (all extents first)
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGN = 64  # alignof(CUtensorMap): the kernel parameter's .align
TENSOR_MAP_WORDS = TENSOR_MAP_BYTES // SLOT_BYTES  # the map's slots: its first kernel parameter
TENSOR_MAP_SLOTS = TENSOR_MAP_WORDS + 1  # the map, then the elements of one box (the second parameter)
TENSOR_MAP_MAX_NDIM = 5  # cuTensorMapEncodeTiled and cp.async.bulk.tensor: 1 to 5 dimensions
TENSOR_MAP_MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled)
TENSOR_MAP_SWIZZLES = (0, 32, 64, 128)  # bytes: none, CU_TENSOR_MAP_SWIZZLE_32B/64B/128B
# the box slot: the elements of one box in its bits below this, the swizzle in bytes above
TENSOR_MAP_SWIZZLE_SHIFT = 32
# the type of the value in each slot, as the runtime packs it (what a launch precondition reads)
VIEW_POINTER_DTYPE = "u64"  # a view's device pointer
VIEW_DIM_DTYPE = "i64"  # a slice's length, a tensor's extents and strides
TENSOR_MAP_DTYPE = "u64"  # each slot of a TMA descriptor
PRESENT_SLOTS = 1  # an optional view's flag, after its view slots: 1 present, 0 None
PRESENT_DTYPE = "bool"  # the flag's type, as the runtime packs it (a precondition reads it)


def tensor_slot_count(ndim: int) -> int:
    """The slots of an ``ndim``-dimensional tensor view: pointer, shape[ndim], strides[ndim]."""
    return VIEW_POINTER_SLOTS + TENSOR_DIM_SLOTS * ndim


def param_slot_count(kind: str, ndim: int = 1, fields: int = 0, optional: bool = False) -> int:
    """How many slots a parameter of ``kind`` (a ``ViewKind`` value, ``SCALAR_PARAM``,
    ``CONSTEXPR_PARAM``, ``TENSOR_MAP_PARAM``, or ``STRUCT_PARAM``/``VECTOR_PARAM`` of ``fields``
    scalar fields) takes; ``optional``: a view that may be None, its flag slot included."""
    if kind == CONSTEXPR_PARAM:
        return 0
    if kind in AGGREGATE_PARAMS:
        return SCALAR_SLOTS * fields
    if kind == SCALAR_PARAM:
        return SCALAR_SLOTS
    if kind == TENSOR_MAP_PARAM:
        return TENSOR_MAP_SLOTS
    view = tensor_slot_count(ndim) if ViewKind(kind).is_tensor else SLICE_SLOTS
    return view + PRESENT_SLOTS if optional else view


def param_slot_dtypes(kind: str, dtype: str, ndim: int = 1, fields: Sequence[str] = (),
                      optional: bool = False) -> list[str]:
    """The scalar type of each slot of a parameter (``param_slot_count`` of them): a scalar's
    dtype, a view's pointer then its length (shape, strides) and, ``optional``, its flag, a
    struct's or vector's field types (``fields``), a TMA descriptor's words."""
    if kind in AGGREGATE_PARAMS:
        return list(fields)
    if kind in (SCALAR_PARAM, CONSTEXPR_PARAM):
        return [dtype] * param_slot_count(kind)
    if kind == TENSOR_MAP_PARAM:
        return [TENSOR_MAP_DTYPE] * TENSOR_MAP_SLOTS
    count = param_slot_count(kind, ndim)
    return ([VIEW_POINTER_DTYPE] * VIEW_POINTER_SLOTS + [VIEW_DIM_DTYPE] * (count - VIEW_POINTER_SLOTS)
            + [PRESENT_DTYPE] * (PRESENT_SLOTS if optional else 0))


def tensor_map_box_slot(box_elements: int, swizzle: int) -> int:
    """The value of a TMA descriptor's box slot (its last): the elements of one box and the swizzle."""
    return box_elements | swizzle << TENSOR_MAP_SWIZZLE_SHIFT
