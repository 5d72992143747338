"""The scalar types of the kernel language and how they are laid out: a kernel's scalar
parameters, array element types and the manifest name them by ``ScalarType.name``."""

# Annotations evaluated (no ``from __future__ import annotations``), as typing.NamedTuple wants them.
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see NamedTuple; oxide.abi.records_base says why not at run time
    from typing import NamedTuple as Record
else:
    from .records_base import Record

__all__ = [
    "ScalarType", "SCALAR_TYPES",
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "boolean",
    "f8e4m3", "f8e5m2",
]


class ScalarType(Record):
    """A scalar type of the kernel language (``f32``, ``i64``, ...). (A NamedTuple, not a
    dataclass: importing ``dataclasses`` and generating the class would cost milliseconds at
    ``import oxide``.)"""

    name: str
    kind: str  # "int", "uint", "float", "bool", "fp8" (a storage format: converted, never computed with)
    bits: int
    numpy_name: str

    def __call__(self, value: Any) -> Any:
        if self.kind in ("float", "fp8"):
            return float(value)
        if self.kind == "bool":
            return bool(value)
        return int(value)

    def __repr__(self) -> str:
        return f"oxide.{self.name}"

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)


i8 = ScalarType("i8", "int", 8, "int8")
i16 = ScalarType("i16", "int", 16, "int16")
i32 = ScalarType("i32", "int", 32, "int32")
i64 = ScalarType("i64", "int", 64, "int64")
u8 = ScalarType("u8", "uint", 8, "uint8")
u16 = ScalarType("u16", "uint", 16, "uint16")
u32 = ScalarType("u32", "uint", 32, "uint32")
u64 = ScalarType("u64", "uint", 64, "uint64")
f16 = ScalarType("f16", "float", 16, "float16")
bf16 = ScalarType("bf16", "float", 16, "bfloat16")
f32 = ScalarType("f32", "float", 32, "float32")
f64 = ScalarType("f64", "float", 64, "float64")
boolean = ScalarType("bool", "bool", 1, "bool")
# 8-bit floats (sm_89+): OCP FP8's E4M3 (no infinities, torch.float8_e4m3fn) and E5M2; their
# numpy_name is ml_dtypes' (numpy itself has no such type)
f8e4m3 = ScalarType("f8e4m3", "fp8", 8, "float8_e4m3fn")
f8e5m2 = ScalarType("f8e5m2", "fp8", 8, "float8_e5m2")

SCALAR_TYPES: dict[str, ScalarType] = {
    t.name: t for t in (i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, boolean, f8e4m3, f8e5m2)
}
