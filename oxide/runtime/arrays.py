"""Reading device arrays from other libraries: which adapter reads an array object.

:func:`view_of` turns any array object into an :class:`ArrayView` (pointer, length, dtype),
:func:`tensor_view_of` into a :class:`TensorView` (shape and strides), without copying and
without importing the producing library. The order is ``array_kinds.array_kind``'s:
oxide.DeviceArray, PyTorch tensors through their own fast accessors (their
``__cuda_array_interface__`` is slow Python), CuPy arrays through their attributes, then
``__cuda_array_interface__`` (Numba, any producer), then ``__array_interface__`` (NumPy: host
memory, which the CPU device reads), then DLPack. One adapter module per kind: ``arrays_torch``,
``arrays_cupy``, ``arrays_cai``, ``arrays_host``, ``arrays_dlpack``; what they make and share is
``array_view``. On the CPU device (``device_choice.ON_CPU``) each reads host memory and refuses
GPU memory, and the other way round on the GPU.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from oxide.runtime import arrays_cai, device_choice
from oxide.runtime.array_kinds import CAI, CUPY, DEVICE_ARRAY, DLPACK, HOST, TORCH, array_kind
from oxide.runtime.array_view import (
    ADDRESS_LIMIT,
    INT64_LIMIT,
    TYPESTR_DTYPES,
    record_name,
    ArrayView,
    TensorView,
    ViewError,
    check_1d_contiguous,
    contiguous_strides,
    gpu_memory_error,
    itemsize,
    not_a_device_array,
    type_name,
)
from oxide.runtime.device_array import DeviceArray

if TYPE_CHECKING:
    from oxide.runtime.arrays_dlpack import DLPACK_CUDA_DEVICES
    from oxide.runtime.arrays_dlpack import DLDataType as _DLDataType  # noqa: F401
    from oxide.runtime.arrays_dlpack import DLDevice as _DLDevice  # noqa: F401
    from oxide.runtime.arrays_dlpack import DLTensor as _DLTensor  # noqa: F401
    from oxide.runtime.arrays_torch import TORCH_DTYPES as _TORCH_DTYPES  # noqa: F401

# The readers of PyTorch, CuPy, NumPy and DLPack arrays are imported when an array of their
# kind is first read (0.3 ms a process's first launch need not pay: issue 28, cold start), and
# so are the names below, read by the tests and the C launcher's set-up (the DLPack structs,
# torch's dtype names). The CUDA array interface's reader is the common case: imported here.
_LAZY = {
    "DLPACK_CUDA_DEVICES": ("arrays_dlpack", "DLPACK_CUDA_DEVICES"),
    "_DLDataType": ("arrays_dlpack", "DLDataType"),
    "_DLDevice": ("arrays_dlpack", "DLDevice"),
    "_DLTensor": ("arrays_dlpack", "DLTensor"),
    "_TORCH_DTYPES": ("arrays_torch", "TORCH_DTYPES"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"oxide.runtime.{where[0]}"), where[1])
    globals()[name] = value
    return value

__all__ = ["ABSENT", "ArrayView", "TensorView", "ViewError", "view_of", "tensor_view_of", "itemsize", "type_name",
           "TYPESTR_DTYPES", "DLPACK_CUDA_DEVICES", "memory_problem", "may_overlap_itself"]

# None passed for an optional view parameter (``Optional[Tensor[f32, 2]]``): no memory, no element
# type (it matches every specialization's), packed as zeros and a 0 flag (arguments.slot_values)
ABSENT = ArrayView(0, 0, "", False, None)


def view_of(obj: Any) -> ArrayView:
    """The device memory of ``obj``; ViewError (a TypeError) when it is not a usable view."""
    kind = array_kind(obj)
    if kind == DEVICE_ARRAY:
        _check_device_array(obj)
        check_1d_contiguous(obj.shape, None)
        dtype = TYPESTR_DTYPES.get(obj.dtype.str) or record_name(obj.dtype) or str(obj.dtype)
        return ArrayView(obj.ptr, obj.shape[0], dtype, False, obj)
    if kind == TORCH:
        from oxide.runtime import arrays_torch
        return arrays_torch.view(obj)
    if kind == CUPY:
        from oxide.runtime import arrays_cupy
        return arrays_cupy.view(obj)
    if kind == CAI:
        cai = arrays_cai.cuda_array_interface(obj)
        if cai is not None:
            if device_choice.ON_CPU:
                raise gpu_memory_error(f"a {type_name(obj)} (__cuda_array_interface__)")
            return arrays_cai.view(obj, cai)
    elif kind == HOST:
        from oxide.runtime import arrays_host
        return arrays_host.view(obj)
    elif kind == DLPACK:
        from oxide.runtime import arrays_dlpack
        return arrays_dlpack.view(obj, obj.__dlpack_device__)
    raise not_a_device_array(obj)


def tensor_view_of(obj: Any, ndim: int) -> TensorView:
    """The device memory, shape and element strides of ``obj``, which must have ``ndim`` dims.

    The same readers in the same order as :func:`view_of`; the compiled launcher
    (``_launcher_arrays.c``, ``resolve_tensor``) reads PyTorch, CuPy, DeviceArray and CUDA array
    interface objects the same way.
    """
    view = _tensor_view(obj)
    if len(view.shape) != ndim:
        raise ViewError(f"needs a {ndim}-D array; got shape {view.shape}")
    if any(d < 0 for d in view.shape):
        raise ViewError(f"needs a non-negative shape; got shape {view.shape}")
    if any(d >= INT64_LIMIT for d in view.shape) or any(abs(s) >= INT64_LIMIT for s in view.strides):
        raise ViewError(f"needs shape and strides that fit 64-bit integers; got shape {view.shape}, "
                        f"strides {view.strides} elements")
    if any(s < 0 for s in view.strides):
        raise ViewError(f"needs non-negative strides; got {view.strides} elements")
    return view


def _tensor_view(obj: Any) -> TensorView:
    kind = array_kind(obj)
    if kind == DEVICE_ARRAY:
        _check_device_array(obj)
        shape = tuple(obj.shape)
        dtype = TYPESTR_DTYPES.get(obj.dtype.str, str(obj.dtype))
        return TensorView(obj.ptr, shape, contiguous_strides(shape), dtype, False, obj)
    if kind == TORCH:
        from oxide.runtime import arrays_torch
        return arrays_torch.tensor_view(obj)
    if kind == CUPY:
        from oxide.runtime import arrays_cupy
        return arrays_cupy.tensor_view(obj)
    if kind == CAI:
        cai = arrays_cai.cuda_array_interface(obj)
        if cai is not None:
            if device_choice.ON_CPU:
                raise gpu_memory_error(f"a {type_name(obj)} (__cuda_array_interface__)")
            return arrays_cai.tensor_view(obj, cai)
    elif kind == HOST:
        from oxide.runtime import arrays_host
        return arrays_host.tensor_view(obj)
    elif kind == DLPACK:
        from oxide.runtime import arrays_dlpack
        return arrays_dlpack.tensor_view(obj, obj.__dlpack_device__)
    raise not_a_device_array(obj)


def _check_device_array(obj: DeviceArray) -> None:
    """A DeviceArray is in the memory of the device it was made on: refused on the other."""
    if obj._host and not device_choice.ON_CPU:
        raise ViewError("is a DeviceArray in host memory, made on the CPU device, but kernels run on the GPU: make "
                        "it on the GPU (DeviceArray.from_numpy({param}.to_numpy()) after oxide.runtime.set_device('cuda'))")
    if not obj._host and device_choice.ON_CPU:
        raise gpu_memory_error("a DeviceArray made on the GPU")


def memory_problem(view: ArrayView | TensorView) -> str | None:
    """Why ``view`` cannot be launched with although its type is right: a null data pointer with
    elements (a freed DeviceArray, a broken producer); None when it can. Reads after "parameter
    'x' of k "."""
    if view.ptr == 0 and view.length > 0:
        freed = type(view.owner) is DeviceArray and view.owner._freed
        return ("is a DeviceArray that was freed (DeviceArray.free()): its memory is gone" if freed else
                f"has no device memory: its data pointer is 0 (NULL), with {view.length} elements")
    nbytes = view.length * itemsize(view.dtype)
    if view.ptr + nbytes > ADDRESS_LIMIT - 1:
        return (f"spans {nbytes} bytes from {view.ptr:#x}, past the end of the 64-bit address space: its shape is "
                "not the memory it has")
    return None


def may_overlap_itself(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether two indices of an array of this shape and element strides may name one element
    (a broadcast or ``expand()``ed view: a stride of 0). Sufficient, not exact: with the axes of
    more than one element sorted by stride, each stride must exceed the span of the axes below
    it, which every array made by slicing, transposing or permuting a dense one satisfies."""
    if any(d == 0 for d in shape):
        return False  # no element at all
    axes = sorted((abs(s), d) for d, s in zip(shape, strides) if d > 1)
    span = 0  # offset of the last element over the axes so far
    for stride, d in axes:
        if stride <= span:
            return True
        span += (d - 1) * stride
    return False
