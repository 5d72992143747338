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

import dataclasses
from typing import Any

__all__ = ["struct"]


def struct(cls: type) -> Any:
    """Marks ``cls`` as a device struct (and makes it a dataclass on the host)."""
    if not isinstance(cls, type):
        raise TypeError("@oxide.struct decorates a class")
    made: Any = dataclasses.dataclass(cls)
    made.__oxide_struct__ = True  # type: ignore[attr-defined]
    return made
