"""The CuPy adapter: a ``cupy.ndarray`` read through its attributes (its
``__cuda_array_interface__`` is a dict built per call). cupy is never imported here."""
from __future__ import annotations

from typing import Any

from oxide.runtime import device_choice
from oxide.runtime.array_view import (
    ITEMSIZE,
    TYPESTR_DTYPES,
    ArrayView,
    TensorView,
    ViewError,
    check_1d_contiguous,
    elements,
    gpu_memory_error,
)

__all__ = ["view", "tensor_view"]


def _cupy_dtype(a: Any) -> str:
    if device_choice.ON_CPU:
        raise gpu_memory_error("a cupy.ndarray")
    typestr = a.dtype.str
    dtype = TYPESTR_DTYPES.get(typestr)
    return dtype if dtype is not None else f"unsupported element type {typestr!r}"


def view(a: Any) -> ArrayView:
    # CuPy builds its __cuda_array_interface__ dict per call; its attributes are cheap.
    dtype = _cupy_dtype(a)
    if a.ndim != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(a.shape)}")
    n = a.shape[0]
    stride = a.strides[0]
    if n > 1 and stride != a.itemsize:
        if stride % a.itemsize:
            raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride} bytes")
        check_1d_contiguous((n,), stride // a.itemsize)
    return ArrayView(a.data.ptr, n, dtype, False, a)


def tensor_view(a: Any) -> TensorView:
    dtype = _cupy_dtype(a)
    return TensorView(a.data.ptr, tuple(a.shape), elements(tuple(a.strides), ITEMSIZE.get(dtype, 0)), dtype, False, a)
