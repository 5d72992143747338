"""``DeviceArray``: a minimal owned buffer of device memory, for users without PyTorch or CuPy.

It speaks ``__cuda_array_interface__`` (version 3), so other libraries can read it too.
Copies are synchronous (``cuMemcpyHtoD``/``cuMemcpyDtoH``).
"""
from __future__ import annotations

import math
from typing import Any

from oxide.runtime import device

__all__ = ["DeviceArray"]


def _numpy_dtype(dtype: Any) -> Any:
    import numpy as np

    numpy_name = getattr(dtype, "numpy_name", None)  # an oxide ScalarType
    if numpy_name is not None:
        dtype = numpy_name
    elif isinstance(dtype, str):
        from oxide.lang.types import SCALAR_TYPES

        if dtype in SCALAR_TYPES:
            dtype = SCALAR_TYPES[dtype].numpy_name
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"DeviceArray cannot hold elements of type {dtype!r}") from None


class DeviceArray:
    """A C-contiguous array in device memory, freed when the object is.

    ``device`` is the CUDA ordinal of the GPU holding it (None: not known, e.g. for a pointer
    handed in; a launch on a host with several GPUs then asks the driver)."""

    def __init__(
        self, ptr: int, shape: tuple[int, ...], dtype: Any, *, owned: bool = True, device: int | None = None
    ) -> None:
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = _numpy_dtype(dtype)
        self._owned = owned and self.ptr != 0
        self.device = device

    @classmethod
    def empty(cls, n: int | tuple[int, ...], dtype: Any = "float32") -> DeviceArray:
        """Uninitialized device memory for ``n`` elements (an int or a shape) of ``dtype``."""
        shape = (int(n),) if isinstance(n, int) else tuple(int(s) for s in n)
        if any(s < 0 for s in shape):
            raise ValueError(f"an array shape cannot be negative; got {shape}")
        np_dtype = _numpy_dtype(dtype)
        nbytes = math.prod(shape) * np_dtype.itemsize
        ptr, ordinal = 0, None
        if nbytes:
            ctx = device.current_context()
            err, dptr = device.driver().cuMemAlloc(nbytes)
            device.check(err, f"cuMemAlloc({nbytes} bytes)")
            ptr, ordinal = int(dptr), device.context_device(ctx).ordinal
        return cls(ptr, shape, np_dtype, device=ordinal)

    @classmethod
    def from_numpy(cls, array: Any) -> DeviceArray:
        """A device copy of the NumPy array (or anything ``numpy.asarray`` accepts)."""
        import numpy as np

        host = np.ascontiguousarray(array)
        out = cls.empty(host.shape, host.dtype)
        if host.nbytes:
            (err,) = device.driver().cuMemcpyHtoD(out.ptr, host, host.nbytes)
            device.check(err, "cuMemcpyHtoD")
        return out

    def to_numpy(self) -> Any:
        """A host copy, as a NumPy array of the same shape and dtype."""
        import numpy as np

        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            device.current_context()
            (err,) = device.driver().cuMemcpyDtoH(host, self.ptr, host.nbytes)
            device.check(err, "cuMemcpyDtoH")
        return host

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * int(self.dtype.itemsize)

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "stream": None,
        }

    def free(self) -> None:
        """Frees the memory now rather than when the object is collected."""
        if self._owned:
            self._owned = False
            ptr, self.ptr = self.ptr, 0
            (err,) = device.driver().cuMemFree(ptr)
            device.check(err, "cuMemFree")

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass  # at interpreter exit the driver may be gone; the process frees the memory anyway

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"
