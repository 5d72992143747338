"""The types of the kernel language.

These objects exist so that kernel sources read as ordinary typed Python and so that editors
and type checkers see names; the compiler reads them from the source text, never by executing
a kernel. ``f32(x)`` converts on the host too, so device functions stay testable on the CPU.
"""
from __future__ import annotations

from typing import Any, Generic, TypeVar as _PyTypeVar

__all__ = [
    "ScalarType",
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64", "boolean", "f8e4m3", "f8e5m2",
    "SCALAR_TYPES",
    "TypeVar",
    "acc_type",
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


from oxide.abi.scalars import (
    SCALAR_TYPES, ScalarType, bf16, boolean, f8e4m3, f8e5m2, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64,
)


class TypeVar:
    """A generic type parameter whose constraints are all compiled: ``T = TypeVar("T", f32, f64)``.

    ``acc={f16: f32}`` chooses what ``acc_type(T)`` is for a constraint (by default f32 for
    f16 and bf16, the type itself otherwise). Inside a kernel ``T(x)`` converts to the bound
    type and ``if T is f64:`` picks a branch per instance (docs/language.md, "Generics")."""

    def __init__(self, name: str, *constraints: ScalarType,
                 acc: dict[ScalarType, ScalarType] | None = None) -> None:
        self.name = name
        self.constraints = constraints
        self.acc = dict(acc or {})

    def __repr__(self) -> str:
        return f"oxide.TypeVar({self.name!r}, {', '.join(c.name for c in self.constraints)})"


class _AccType:
    """What ``acc_type(T)`` evaluates to on the host (annotations run at import): a marker."""

    def __init__(self, typevar: TypeVar) -> None:
        self.typevar = typevar

    def __repr__(self) -> str:
        return f"oxide.acc_type({self.typevar.name})"


def acc_type(typevar: TypeVar) -> Any:
    """The type a generic kernel accumulates ``typevar`` values in: ``acc: ox.acc_type(T) = 0.0``,
    ``ox.acc_type(T)(x)``. f32 for f16/bf16 unless the TypeVar's ``acc=`` says otherwise."""
    return _AccType(typevar)


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
