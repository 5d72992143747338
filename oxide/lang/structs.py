"""``@oxide.struct``: a class whose annotated fields (scalars and vectors) make a value type
of device code, like a C ``struct``:

    @ox.struct
    class Particle:
        x: f32
        y: f32
        mass: f32

Device functions construct it (``Particle(x, y, 1.0)`` or with keywords), read and assign its
fields and take and return it by value. On the host the class is a frozen-free dataclass, so
device functions stay testable on the CPU.
"""
from __future__ import annotations

from typing import Any

__all__ = ["struct", "struct_dtype"]


def struct(cls: type) -> Any:
    """Marks ``cls`` as a device struct (and makes it a dataclass on the host)."""
    if not isinstance(cls, type):
        raise TypeError("@oxide.struct decorates a class")
    import dataclasses  # here, not at the top: importing oxide (a package's kernels) stays cheap

    made: Any = dataclasses.dataclass(cls)
    made.__oxide_struct__ = True
    return made


def struct_dtype(cls: type) -> Any:
    """The NumPy record dtype of an ``@oxide.struct`` class of scalar fields, laid out as the
    device reads a view of its records (C's layout: ``numpy.dtype(..., align=True)``)."""
    import typing

    from oxide.numpy_dependency import import_numpy

    from .types import ScalarType

    np = import_numpy("oxide.struct_dtype")

    if not getattr(cls, "__oxide_struct__", False):
        raise TypeError(f"{cls!r} is not an @oxide.struct class")
    fields = []
    for name, ty in typing.get_type_hints(cls).items():
        if not isinstance(ty, ScalarType) or ty.kind == "bool":
            raise TypeError(f"field {name!r} of {cls.__name__} is {ty!r}: a record dtype holds scalar fields (not bool)")
        fields.append((name, np.dtype(ty.numpy_name)))
    return np.dtype(fields, align=True)
