"""Vector types of the kernel language: ``f32x4``, ``i32x2``, ``u8x4``, ... (CUDA's ``float4``,
``int2``, ``uchar4``): 2, 4 or 8 elements of one scalar type, held in registers. Up to 16 bytes
is one memory access; the 32-byte ones (``f64x4``, CUDA's ``double4``, and ``f32x8``) are two.
``bf16x8`` / ``f16x8`` are the 8 halves of one 16-byte access (the "x128" idiom).
On the host a vector type builds a tuple, so device functions stay testable on the CPU."""

# No ``from __future__ import annotations``: typing.NamedTuple compiles string annotations (issue 28, cold start).
from typing import Any, NamedTuple

from oxide.abi.scalars import SCALAR_TYPES, ScalarType
from oxide.abi.vectors import VECTOR_LANES

__all__ = [
    "VectorType", "VECTOR_TYPES",
    "f32x2", "f32x4", "f64x2", "i32x2", "i32x4", "u32x2", "u32x4", "i64x2", "u64x2",
    "i16x2", "u16x2", "i8x4", "u8x4", "f16x2", "bf16x2", "f16x4", "bf16x4", "f16x8", "bf16x8", "f32x8", "f64x4",
]


class VectorType(NamedTuple):
    """``lanes`` elements of ``elem``, named ``<elem>x<lanes>``."""

    name: str
    elem: ScalarType
    lanes: int

    def __call__(self, *values: Any) -> tuple[Any, ...]:
        if len(values) == 1:
            values = values * self.lanes
        if len(values) != self.lanes:
            raise TypeError(f"{self.name}() takes 1 or {self.lanes} values, got {len(values)}")
        return tuple(self.elem(v) for v in values)

    def __repr__(self) -> str:
        return f"oxide.{self.name}"

    @property
    def kind(self) -> str:
        return self.elem.kind

    @property
    def bits(self) -> int:
        return self.elem.bits

    @property
    def itemsize(self) -> int:
        return self.elem.itemsize * self.lanes


def _vector(name: str) -> VectorType:
    elem, lanes = VECTOR_LANES[name]
    return VectorType(name, SCALAR_TYPES[elem], lanes)


VECTOR_TYPES: dict[str, VectorType] = {name: _vector(name) for name in VECTOR_LANES}

f32x2, f32x4, f64x2 = VECTOR_TYPES["f32x2"], VECTOR_TYPES["f32x4"], VECTOR_TYPES["f64x2"]
i32x2, i32x4, u32x2, u32x4 = VECTOR_TYPES["i32x2"], VECTOR_TYPES["i32x4"], VECTOR_TYPES["u32x2"], VECTOR_TYPES["u32x4"]
i64x2, u64x2 = VECTOR_TYPES["i64x2"], VECTOR_TYPES["u64x2"]
i16x2, u16x2, i8x4, u8x4 = VECTOR_TYPES["i16x2"], VECTOR_TYPES["u16x2"], VECTOR_TYPES["i8x4"], VECTOR_TYPES["u8x4"]
f16x2, bf16x2 = VECTOR_TYPES["f16x2"], VECTOR_TYPES["bf16x2"]  # CUDA's __half2 / __nv_bfloat162
f16x4, bf16x4 = VECTOR_TYPES["f16x4"], VECTOR_TYPES["bf16x4"]
f16x8, bf16x8 = VECTOR_TYPES["f16x8"], VECTOR_TYPES["bf16x8"]  # 16 bytes: one load of 8 halves
f32x8, f64x4 = VECTOR_TYPES["f32x8"], VECTOR_TYPES["f64x4"]  # 32 bytes: two 16-byte accesses
