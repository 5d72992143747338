"""The CUDA array interface adapter (CuPy, Numba, PyTorch, oxide.DeviceArray, any producer):
``__cuda_array_interface__`` read and checked."""

# No ``from __future__ import annotations``: typing.NamedTuple compiles string annotations (issue 28, cold start).
import operator
from typing import Any, NamedTuple

from oxide.runtime.array_view import (
    ITEMSIZE,
    TYPESTR_DTYPES,
    ArrayView,
    TensorView,
    ViewError,
    check_1d_contiguous,
    contiguous_strides,
    elements,
    record_name,
    type_name,
)
from oxide.abi.records import is_record_dtype, record_itemsize

__all__ = ["cuda_array_interface", "view", "tensor_view", "element_type"]


def cuda_array_interface(obj: Any) -> dict[str, Any] | None:
    """``obj.__cuda_array_interface__``, None when it has none."""
    try:
        return obj.__cuda_array_interface__  # type: ignore[no-any-return]
    except AttributeError:
        return None
    except Exception as e:  # e.g. a tensor that requires grad refuses to export itself
        raise ViewError(f"needs a device array; reading __cuda_array_interface__ of a {type_name(obj)} failed: {e}") from None


class _Interface(NamedTuple):
    """The fields of a ``__cuda_array_interface__`` that a view needs, checked."""

    shape: tuple[int, ...]
    typestr: str
    strides: tuple[int, ...] | None  # bytes
    ptr: int
    readonly: bool


def _malformed(what: str) -> ViewError:
    return ViewError(f"needs a device array; got a malformed __cuda_array_interface__: {what}")


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise _malformed(f"{what} must be a tuple of ints; got {value!r}")
    out = []
    for x in value:
        if isinstance(x, bool):
            raise _malformed(f"{what} must be a tuple of ints; got {value!r}")
        try:
            out.append(operator.index(x))
        except TypeError:
            raise _malformed(f"{what} must be a tuple of ints; got {value!r}") from None
    return tuple(out)


def _interface(cai: Any) -> _Interface:
    """The checked fields of a CUDA array interface dict (version 2 or 3)."""
    if not isinstance(cai, dict):
        raise _malformed(f"it is a {type_name(cai)}, not a dict")
    for key in ("shape", "typestr", "data"):
        if key not in cai:
            raise _malformed(f"it has no {key!r}")
    shape = _ints(cai["shape"], "'shape'")
    typestr = cai["typestr"]
    if not isinstance(typestr, str):
        raise _malformed(f"'typestr' must be a str; got {typestr!r}")
    strides = cai.get("strides")
    if strides is not None:
        strides = _ints(strides, "'strides'")
        if len(strides) != len(shape):
            raise _malformed(f"'strides' {strides} has not one entry per dimension of 'shape' {shape}")
    if cai.get("mask") is not None:
        raise ViewError("needs an array without a mask; got a masked __cuda_array_interface__")
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise _malformed(f"'data' must be (pointer, read_only); got {data!r}")
    ptr, readonly = data
    if ptr is None:
        ptr = 0
    if isinstance(ptr, bool) or not isinstance(ptr, int) or not 0 <= ptr < 2**64:
        raise _malformed(f"the data pointer must be an int from 0 to 2**64-1; got {ptr!r}")
    return _Interface(shape, typestr, strides, ptr, bool(readonly))


def element_type(obj: Any, typestr: str) -> tuple[str | None, int]:
    """The oxide name of an array interface's element type and its size; a NumPy record dtype
    (``@oxide.struct`` records: ``obj.dtype``) by its manifest name; (None, 0) for neither."""
    dtype = TYPESTR_DTYPES.get(typestr)
    if dtype is not None:
        return dtype, ITEMSIZE[dtype]
    record = record_name(getattr(obj, "dtype", None))
    if record is not None and is_record_dtype(record):
        return record, record_itemsize(record)
    return None, 0


def view(obj: Any, cai: Any) -> ArrayView:
    f = _interface(cai)
    dtype, itemsize = element_type(obj, f.typestr)
    if dtype is None:
        dtype = f"unsupported element type {f.typestr!r}"
    stride_elems: int | None = None
    if f.strides is not None and len(f.strides) == 1 and len(f.shape) == 1:
        stride_bytes = f.strides[0]
        if itemsize and stride_bytes % itemsize == 0:
            stride_elems = stride_bytes // itemsize
        elif f.shape[0] > 1:
            raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride_bytes} bytes")
    n = check_1d_contiguous(f.shape, stride_elems)
    return ArrayView(f.ptr, n, dtype, f.readonly, obj)


def tensor_view(obj: Any, cai: Any) -> TensorView:
    f = _interface(cai)
    dtype, itemsize = element_type(obj, f.typestr)
    if dtype is None:
        dtype = f"unsupported element type {f.typestr!r}"
    elem_strides = contiguous_strides(f.shape) if f.strides is None else elements(f.strides, itemsize)
    return TensorView(f.ptr, f.shape, elem_strides, dtype, f.readonly, obj)
