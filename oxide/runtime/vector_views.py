"""Arrays passed to a view of vector elements (``Slice[f32x4]``, ``Tensor[bf16x2, 2]``; CUDA's
``const float4*``): the argument is an array of the lane type whose last dimension holds the
lanes, contiguously: ``(n, 4)`` float32 for a ``Slice[f32x4]`` of ``n`` vectors, ``(h, w, 2)``
bfloat16 for a ``Tensor[bf16x2, 2]`` of ``h x w``. (A CUDA caller reinterprets a float array as
``float4*``; here the shape says where the vectors are: ``x.view(-1, 4)`` of a flat torch tensor,
``x.reshape(-1, 4)`` of a CuPy array.) The kernel reads each element in one access (two for 32
bytes), so the first element must be aligned as CUDA aligns the vector type (its size, at most 16
bytes) and every element must start a whole number of vectors from it. The view the kernel gets
counts vectors: a ``Slice``'s length, a tensor's shape and strides are in vector elements."""
from __future__ import annotations

from typing import Any

from oxide.abi.vectors import vector_alignment, vector_lanes
from oxide.runtime.array_view import ArrayView, TensorView, ViewError

__all__ = ["vector_view_of"]


def _expected(vector: str, ndim: int, tensor: bool) -> str:
    lane, lanes = vector_lanes(vector) or ("", 0)
    outer = ", ".join(f"d{k}" for k in range(ndim)) if tensor else "n"
    return (f"holds {vector} elements: pass an array of {lane} whose last dimension is its {lanes} lanes, "
            f"shape ({outer}, {lanes}) with the lanes contiguous")


def vector_view_of(obj: Any, vector: str, ndim: int, tensor: bool) -> ArrayView | TensorView:
    """``obj`` as a view of ``vector`` elements with ``ndim`` dimensions (1 for a Slice kind,
    ``tensor`` False): an ``ArrayView`` or ``TensorView`` counting vectors, whose dtype is
    ``vector``. ViewError (reading after "parameter 'x' of k ") when ``obj`` is not such an array."""
    from oxide.runtime.arrays import tensor_view_of

    lane, lanes = vector_lanes(vector) or ("", 0)
    expected = _expected(vector, ndim, tensor)
    try:
        raw = tensor_view_of(obj, ndim + 1)
    except ViewError as e:
        if e.template.startswith(f"needs a {ndim + 1}-D array; got shape"):
            got = e.template[e.template.index("got shape"):]
            hint = (f" (a flat array of {lane}: .view(-1, {lanes}) in torch, .reshape(-1, {lanes}) in CuPy)"
                    if ndim == 1 else "")
            raise ViewError(f"{expected}; {got}{hint}") from None
        raise
    if raw.dtype != lane:
        raise ViewError(f"{expected}; got {raw.dtype} elements")
    if raw.shape[-1] != lanes:
        raise ViewError(f"{expected}; got shape {raw.shape}, whose last dimension is {raw.shape[-1]}")
    outer_shape, outer_strides = raw.shape[:-1], raw.strides[:-1]
    count = 1
    for d in outer_shape:
        count *= d
    if count:  # (with no element nothing is read, whatever the strides and the address)
        if lanes > 1 and raw.strides[-1] != 1:
            raise ViewError(f"{expected}; got a stride of {raw.strides[-1]} elements between the lanes, "
                            "not 1 — pass a contiguous copy (.contiguous(), .copy())")
        bad = [s for d, s in zip(outer_shape, outer_strides) if d > 1 and s % lanes]
        if bad:
            raise ViewError(f"{expected}; got strides {raw.strides} elements: an element starts {bad[0]} lanes "
                            f"after the one before, not a whole number of {vector} — pass a contiguous copy "
                            "(.contiguous(), .copy())")
        align = vector_alignment(vector)
        if raw.ptr % align:
            raise ViewError(f"{expected}; got data at {raw.ptr:#x}, not a multiple of {align} bytes as each {vector} "
                            f"access needs (CUDA aligns the vector type so) — pass an array whose data starts at a "
                            f"multiple of {align} bytes (a slice of a larger one may not)")
    # in vectors; an axis of one element has no next element, so its stride may be any number of lanes
    strides = tuple(s // lanes if s % lanes == 0 else 0 for s in outer_strides)
    if tensor:
        return TensorView(raw.ptr, outer_shape, strides, vector, raw.readonly, raw.owner)
    if count > 1 and strides[0] != 1:
        raise ViewError(f"{expected}; got {outer_strides[0]} {lane} from one vector to the next, not {lanes} "
                        "(a Slice is contiguous: pass a contiguous copy, or take a Tensor)")
    return ArrayView(raw.ptr, outer_shape[0], vector, raw.readonly, raw.owner)
