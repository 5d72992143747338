"""The types of the kernel language.

These objects exist so that kernel sources read as ordinary typed Python and so that editors
and type checkers see names; the compiler reads them from the source text, never by executing
a kernel. ``f32(x)`` converts on the host too, so device functions stay testable on the CPU.
"""
from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar as _PyTypeVar

__all__ = [
    "ScalarType",
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "boolean",
    "SCALAR_TYPES",
    "TypeVar",
    "Constexpr",
    "Slice",
    "DisjointSlice",
    "MutSlice",
    "Tensor",
    "MutTensor",
    "DisjointTensor",
    "Ptr",
    "ThreadIndex",
]


class ScalarType(NamedTuple):
    """A scalar type of the kernel language (``f32``, ``i64``, ...). (A NamedTuple, not a
    dataclass: importing ``dataclasses`` and generating the class would cost milliseconds at
    ``import oxide``.)"""

    name: str
    kind: str  # "int", "uint", "float", "bool"
    bits: int
    numpy_name: str

    def __call__(self, value: Any) -> Any:
        if self.kind == "float":
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

SCALAR_TYPES: dict[str, ScalarType] = {
    t.name: t for t in (i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, boolean)
}


class TypeVar:
    """A generic type parameter whose constraints are all compiled: ``T = TypeVar("T", f32, f64)``."""

    def __init__(self, name: str, *constraints: ScalarType) -> None:
        self.name = name
        self.constraints = constraints

    def __repr__(self) -> str:
        return f"oxide.TypeVar({self.name!r}, {', '.join(c.name for c in self.constraints)})"


_T = _PyTypeVar("_T")


class Constexpr(Generic[_T]):
    """Marks a compile-time constant: ``BLOCK: Constexpr[int] = 256``."""


class _View:
    """Views are parameters only; the compiler gives them meaning. On the host they are markers:
    ``Slice[f32]`` or ``Tensor[f32, 2]`` evaluates (annotations run at import) to the class."""

    def __class_getitem__(cls, item: Any) -> Any:
        return cls


class Slice(_View):
    """A read-only 1-D view of device memory (pointer + length)."""


class DisjointSlice(_View):
    """A 1-D view each thread writes only at its own ``ThreadIndex``."""


class MutSlice(_View):
    """A 1-D view written anywhere, only inside ``with oxide.unsafe():``."""


class Tensor(_View):
    """A read-only N-d strided view: ``Tensor[f32, 2]``; ``.shape[k]``, ``.strides[k]``."""


class MutTensor(_View):
    """An N-d view written anywhere, only inside ``with oxide.unsafe():``."""


class DisjointTensor(_View):
    """A 2-D view each thread writes only at its own ``thread.index_2d()``."""


class Ptr(_View):
    """In an ``@extern`` stub: the C++ side takes a plain ``T*``; pass any view (its data
    pointer). C++ must not write through a pointer that came from a read-only ``Slice``."""


class ThreadIndex(int):
    """The calling thread's own global index; made only by ``thread.index_1d()``."""
