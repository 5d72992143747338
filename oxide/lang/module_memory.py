"""Module-level arrays in device memory, declared at module level of a kernel module:

    WEIGHTS = ox.constant.array(5, f32, init=(0.1, 0.2, 0.4, 0.2, 0.1))   # __constant__ float[5]
    COUNTER = ox.global_memory.array(1, u32)                              # __device__ unsigned[1]

Kernels index them by name (the compiler reads the declaration from the source). On the host
the same name is a ``ModuleArray`` that reads and writes the array in the module's loaded code
on the current device: ``COUNTER.read()``, ``WEIGHTS.write(weights)`` (docs/runtime.md).
"""
from __future__ import annotations

import sys
from typing import Any

from .types import ScalarType

__all__ = ["ModuleArray", "constant", "global_memory"]


class ModuleArray:
    """The host's handle of a module-level constant or global memory array."""

    def __init__(self, space: str, shape: Any, dtype: ScalarType, init: Any, module: str, file: str | None) -> None:
        if not isinstance(dtype, ScalarType):
            raise TypeError(f"the element type must be an oxide scalar type (f32, i32, ...), not {dtype!r}")
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise TypeError(f"the shape must be positive integers, not {shape!r}")
        self.space = space
        self.shape: tuple[int, ...] = dims
        self.dtype = dtype
        self.init = init
        self.module = module
        self.file = file

    @property
    def name(self) -> str:
        """The module-level name this array is bound to."""
        namespace = vars(sys.modules[self.module]) if self.module in sys.modules else {}
        for key, value in namespace.items():
            if value is self:
                return key
        raise LookupError(f"this {self.space} memory array is not bound to a name of module {self.module}")

    def read(self) -> Any:
        """A NumPy copy of the array's contents on the current device (waits for prior work)."""
        from oxide.runtime.module_memory import read_array

        return read_array(self)

    def write(self, values: Any) -> None:
        """Copies ``values`` (anything ``numpy.asarray`` takes, of the array's shape or size)
        into the array on the current device; kernels launched afterwards see them."""
        from oxide.runtime.module_memory import write_array

        write_array(self, values)

    def device_pointer(self) -> int:
        """The array's device address in the module's code on the current device."""
        from oxide.runtime.module_memory import array_address

        return array_address(self)[0]

    def __repr__(self) -> str:
        return f"<oxide {self.space} memory array {self.module}, {self.dtype.name}{list(self.shape)}>"


class _MemorySpace:
    def __init__(self, space: str) -> None:
        self._space = space

    def array(self, shape: Any, dtype: ScalarType, *, init: Any = None) -> ModuleArray:
        """Declares a module-level array of ``shape`` (an int or a tuple of ints) elements of
        ``dtype``, initialized to ``init`` (a tuple of numbers, row by row) or zeros."""
        caller = sys._getframe(1).f_globals
        return ModuleArray(self._space, shape, dtype, init, caller.get("__name__", ""), caller.get("__file__"))


constant = _MemorySpace("constant")
"""``__constant__`` memory: read by every thread through the constant cache, written by the host."""
global_memory = _MemorySpace("global")
"""``__device__`` global memory: read and written by kernels (writes in ``unsafe``, or atomics) and the host."""
