"""The vector types of the kernel language (``f32x4``, ``bf16x2``, ...: CUDA's ``float4``,
``__nv_bfloat162``) as the contract names them: each is ``lanes`` elements of one scalar type,
named ``<scalar>x<lanes>``. A view of vector elements (``Slice[f32x4]``) records the vector's name
as its dtype in the manifest; the runtime reads the argument as an array of the lane type whose
last dimension holds the lanes (``VECTOR_LANES``), and ``oxide.lang.vectors`` builds the
language's types from the same table."""
from __future__ import annotations

from .scalars import SCALAR_TYPES

__all__ = ["VECTOR_LANES", "vector_lanes", "vector_itemsize", "vector_alignment", "MAX_VECTOR_ACCESS_BYTES"]

# name -> (lane scalar name, lanes), in the order the language lists them
VECTOR_LANES: dict[str, tuple[str, int]] = {
    f"{lane}x{lanes}": (lane, lanes)
    for lane, lanes in (
        ("f32", 2), ("f32", 4), ("f64", 2), ("i32", 2), ("i32", 4), ("u32", 2), ("u32", 4), ("i64", 2), ("u64", 2),
        ("i16", 2), ("u16", 2), ("i8", 4), ("u8", 4), ("f16", 2), ("bf16", 2), ("f16", 4), ("bf16", 4),
        ("f16", 8), ("bf16", 8), ("f32", 8), ("f64", 4),
    )
}  # fmt: skip

# one memory access moves at most 16 bytes (ld.v4.b32, ld.v2.b64); a 32-byte vector (f64x4,
# f32x8) is two accesses, each aligned to 16 bytes
MAX_VECTOR_ACCESS_BYTES = 16


def vector_lanes(dtype: str) -> tuple[str, int] | None:
    """``(lane scalar name, lanes)`` of a vector type's name (``"f32x4"`` -> ``("f32", 4)``); None
    for any other dtype (a scalar, a record)."""
    return VECTOR_LANES.get(dtype)


def vector_itemsize(dtype: str) -> int:
    """Bytes of one element of the vector type named ``dtype``."""
    lane, lanes = VECTOR_LANES[dtype]
    return SCALAR_TYPES[lane].itemsize * lanes


def vector_alignment(dtype: str) -> int:
    """The alignment in bytes the kernel's accesses of a ``dtype`` element need: its size, at most
    16 (CUDA's ``float4`` is 16-byte aligned, ``half2`` 4-byte)."""
    return min(vector_itemsize(dtype), MAX_VECTOR_ACCESS_BYTES)
