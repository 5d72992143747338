"""The DLPack adapter: ``__dlpack__`` / ``__dlpack_device__``, the capsule's DLTensor read
through ctypes: CUDA memory on the GPU, host memory (kDLCPU, kDLCUDAHost) on the CPU device."""
from __future__ import annotations

import ctypes
from typing import Any

from oxide.runtime import device_choice
from oxide.runtime.array_view import (
    ITEMSIZE,
    ArrayView,
    TensorView,
    ViewError,
    check_1d_contiguous,
    contiguous_strides,
    gpu_memory_error,
    host_error,
    type_name,
)

__all__ = ["DLPACK_CUDA_DEVICES", "DLDevice", "DLDataType", "DLTensor", "dlpack_dtype", "view", "tensor_view"]

# DLPack: DLDeviceType codes of memory a kernel can read, and DLDataTypeCode -> oxide names
DLPACK_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged
_DLPACK_HOST_DEVICES = (1, 3)  # kDLCPU, kDLCUDAHost
_DLPACK_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "bool", 10: "f8e4m3", 12: "f8e5m2"}  # 10, 12: DLPack 1.1's float8 e4m3fn, e5m2

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_get_pointer: Any = None


def _dltensor_of(capsule: Any) -> _DLTensor:
    global _capsule_get_pointer
    if _capsule_get_pointer is None:
        fn = ctypes.pythonapi.PyCapsule_GetPointer
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.py_object, ctypes.c_char_p]
        _capsule_get_pointer = fn
    # A legacy capsule holds a DLManagedTensor whose first member is the DLTensor. We do not
    # rename the capsule: it stays the producer's, and dropping it after the launch frees it.
    address = _capsule_get_pointer(capsule, b"dltensor")
    return _DLTensor.from_address(address)


def dlpack_dtype(code: int, bits: int, lanes: int) -> str:
    """The oxide name of a DLPack element type, or a description when oxide has none."""
    kind = _DLPACK_CODES.get(code)
    if lanes == 1 and kind is not None:
        name = "bool" if kind == "bool" and bits == 8 else kind if kind.startswith("f8") and bits == 8 else f"{kind}{bits}"
        if name in ITEMSIZE:
            return name
    return f"unsupported element type (DLPack code {code}, {bits} bits, {lanes} lanes)"


def _dlpack_tensor(obj: Any, dl_device: Any) -> tuple[Any, _DLTensor]:
    """The DLPack capsule of ``obj`` and the DLTensor in it; raises unless it is memory of the
    device kernels run on."""
    try:
        device_type = int(dl_device()[0])
    except Exception as e:  # the producer's own failure: said with the parameter it was passed as
        raise ViewError(f"needs a device array; calling __dlpack_device__() of a {type_name(obj)} failed: "
                        f"{type(e).__name__}: {e}") from None
    if device_choice.ON_CPU:  # host memory: what kernels read there
        if device_type in DLPACK_CUDA_DEVICES:
            raise gpu_memory_error(f"a {type_name(obj)} on DLPack device type {device_type}")
        if device_type not in _DLPACK_HOST_DEVICES:
            raise ViewError(f"needs an array in host memory (the CPU device runs kernels there); got a "
                            f"{type_name(obj)} on DLPack device type {device_type}")
    elif device_type in _DLPACK_HOST_DEVICES:
        raise host_error(obj)
    elif device_type not in DLPACK_CUDA_DEVICES:
        raise ViewError(f"needs a CUDA device array; got a {type_name(obj)} on DLPack device type {device_type}")
    try:
        try:
            capsule = obj.__dlpack__(stream=None)
        except TypeError:  # a producer of DLPack before 2021 takes no stream
            capsule = obj.__dlpack__()
    except Exception as e:  # e.g. BufferError: a tensor that cannot be exported
        raise ViewError(f"needs a device array; calling __dlpack__() of a {type_name(obj)} failed: "
                        f"{type(e).__name__}: {e}") from None
    try:
        return capsule, _dltensor_of(capsule)
    except (TypeError, ValueError):  # no capsule, or one that was consumed or is of another name
        raise ViewError(f"needs a device array; __dlpack__() of a {type_name(obj)} returned "
                        f"{type(capsule).__name__}, not an unconsumed 'dltensor' capsule") from None


def view(obj: Any, dl_device: Any) -> ArrayView:
    capsule, t = _dlpack_tensor(obj, dl_device)
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    stride: int | None = None
    if ndim == 1 and t.strides:
        stride = int(t.strides[0])
    n = check_1d_contiguous(shape, stride)
    dtype = dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    ptr = int(t.data or 0) + int(t.byte_offset)
    return ArrayView(ptr, n, dtype, False, (obj, capsule))


def tensor_view(obj: Any, dl_device: Any) -> TensorView:
    capsule, t = _dlpack_tensor(obj, dl_device)
    n = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(n))
    elem_strides = tuple(int(t.strides[i]) for i in range(n)) if t.strides else contiguous_strides(shape)
    dtype = dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    return TensorView(int(t.data or 0) + int(t.byte_offset), shape, elem_strides, dtype, False, (obj, capsule))


DLDevice, DLDataType, DLTensor = _DLDevice, _DLDataType, _DLTensor
