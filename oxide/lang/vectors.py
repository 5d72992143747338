"""Vector types of the kernel language: ``f32x4``, ``i32x2``, ``u8x4``, ... (CUDA's ``float4``,
``int2``, ``uchar4``): 2, 4 or 8 elements of one scalar type, held in registers. Up to 16 bytes
is one memory access; the 32-byte ones (``f64x4``, CUDA's ``double4``, and ``f32x8``) are two.
``bf16x8`` / ``f16x8`` are the 8 halves of one 16-byte access (the "x128" idiom).
On the host a vector type builds a tuple, so device functions stay testable on the CPU."""
from __future__ import annotations

from typing import Any, NamedTuple

from oxide.abi.scalars import SCALAR_TYPES, ScalarType

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


def _vector(elem: str, lanes: int) -> VectorType:
    return VectorType(f"{elem}x{lanes}", SCALAR_TYPES[elem], lanes)


f32x2, f32x4, f64x2 = _vector("f32", 2), _vector("f32", 4), _vector("f64", 2)
i32x2, i32x4, u32x2, u32x4 = _vector("i32", 2), _vector("i32", 4), _vector("u32", 2), _vector("u32", 4)
i64x2, u64x2 = _vector("i64", 2), _vector("u64", 2)
i16x2, u16x2, i8x4, u8x4 = _vector("i16", 2), _vector("u16", 2), _vector("i8", 4), _vector("u8", 4)
f16x2, bf16x2 = _vector("f16", 2), _vector("bf16", 2)  # CUDA's __half2 / __nv_bfloat162
f16x4, bf16x4 = _vector("f16", 4), _vector("bf16", 4)
f16x8, bf16x8 = _vector("f16", 8), _vector("bf16", 8)  # 16 bytes: one load of 8 halves
f32x8, f64x4 = _vector("f32", 8), _vector("f64", 4)  # 32 bytes: two 16-byte accesses

VECTOR_TYPES: dict[str, VectorType] = {
    v.name: v for v in (f32x2, f32x4, f64x2, i32x2, i32x4, u32x2, u32x4, i64x2, u64x2, i16x2, u16x2, i8x4, u8x4,
                        f16x2, bf16x2, f16x4, bf16x4, f16x8, bf16x8, f32x8, f64x4)
}
