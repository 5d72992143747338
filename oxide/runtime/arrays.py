"""Reading device arrays from other libraries: the CUDA array interface and DLPack.

:func:`view_of` turns any array object into an :class:`ArrayView` (pointer, length, dtype)
without copying and without importing the producing library. The order is: PyTorch tensors
through their own fast accessors (their ``__cuda_array_interface__`` is slow Python), then
``__cuda_array_interface__`` (CuPy, Numba, PyTorch, oxide.DeviceArray), then DLPack.
"""
from __future__ import annotations

import ctypes
import operator
import sys
from typing import Any, NamedTuple, Sequence

from oxide.runtime.device_array import DeviceArray

__all__ = ["ArrayView", "TensorView", "ViewError", "view_of", "tensor_view_of", "itemsize", "type_name",
           "TYPESTR_DTYPES", "DLPACK_CUDA_DEVICES", "memory_problem", "may_overlap_itself"]

# typestr of the CUDA array interface (NumPy's array-interface codes) -> oxide scalar name
TYPESTR_DTYPES: dict[str, str] = {}
for _name, _code, _size in (
    ("i8", "i", 1), ("i16", "i", 2), ("i32", "i", 4), ("i64", "i", 8),
    ("u8", "u", 1), ("u16", "u", 2), ("u32", "u", 4), ("u64", "u", 8),
    ("f16", "f", 2), ("f32", "f", 4), ("f64", "f", 8), ("bool", "b", 1),
):  # fmt: skip
    for _order in ("<", "|", "="):
        TYPESTR_DTYPES[f"{_order}{_code}{_size}"] = _name
if sys.byteorder == "big":  # pragma: no cover - no big-endian CUDA host exists
    TYPESTR_DTYPES = {k.replace("<", ">"): v for k, v in TYPESTR_DTYPES.items()}

_ITEMSIZE = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
             "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "bool": 1}  # fmt: skip

_TORCH_DTYPES = {
    "torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16",
    "torch.bfloat16": "bf16", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32",
    "torch.int64": "i64", "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32",
    "torch.uint64": "u64", "torch.bool": "bool",
}  # fmt: skip
_torch_dtype_cache: dict[Any, str] = {}

# DLPack: DLDeviceType codes of memory a kernel can read, and DLDataTypeCode -> oxide names
DLPACK_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged
_DLPACK_HOST_DEVICES = (1, 3)  # kDLCPU, kDLCUDAHost
_DLPACK_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "bool"}

_INT64_LIMIT = 2**63  # shapes and strides are packed as i64
_ADDRESS_LIMIT = 2**64

HOST_ARRAY_HINT = (
    "copy it to the GPU first, e.g. torch.as_tensor({param}, device='cuda') or cupy.asarray({param})"
)


class ArrayView(NamedTuple):
    """A 1-D contiguous device array as a kernel sees it (a NamedTuple: made on every launch)."""

    ptr: int
    length: int  # in elements
    dtype: str  # oxide scalar name ("f32"), or a description of an unsupported element type
    readonly: bool
    owner: Any  # keeps the producer's memory alive until the launch returns


class ViewError(TypeError):
    """Why an object cannot be a view. ``template`` reads after "parameter 'x' of k " and may
    use ``{param}``; the launcher fills in the names."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(template)

    def render(self, param: str, kernel: str) -> str:
        return f"parameter {param!r} of {kernel} " + self.template.replace("{param}", param)


def type_name(obj: Any) -> str:
    """``numpy.ndarray``, ``torch.Tensor``, ``cupy.ndarray``, ``list``: the public name of a type."""
    cls = type(obj)
    module = cls.__module__ or ""
    if module == "builtins":
        return cls.__name__
    parts = module.split(".")
    if any(p.startswith("_") for p in parts):
        module = parts[0]
    return f"{module}.{cls.__name__}"


def _host_error(obj: Any) -> ViewError:
    return ViewError(f"needs a device array; got a {type_name(obj)} (host memory) — {HOST_ARRAY_HINT}")


def _check_1d_contiguous(shape: tuple[int, ...], stride_elems: int | None) -> int:
    if len(shape) != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(shape)}")
    n = int(shape[0])
    if n < 0:
        raise ViewError(f"needs a non-negative shape; got shape {tuple(shape)}")
    if n >= _INT64_LIMIT:
        raise ViewError(f"needs shape and strides that fit 64-bit integers; got shape {tuple(shape)}")
    if stride_elems is not None and n > 1 and stride_elems != 1:
        raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride_elems} elements")
    return n


def view_of(obj: Any) -> ArrayView:
    """The device memory of ``obj``; ViewError (a TypeError) when it is not a usable view."""
    if type(obj) is DeviceArray:
        _check_1d_contiguous(obj.shape, None)
        return ArrayView(obj.ptr, obj.shape[0], TYPESTR_DTYPES.get(obj.dtype.str, str(obj.dtype)), False, obj)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _torch_view(obj)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return _cupy_view(obj)
    cai = _cuda_array_interface(obj)
    if cai is not None:
        return _cai_view(obj, cai)
    dl_device = getattr(obj, "__dlpack_device__", None)
    if dl_device is not None and hasattr(obj, "__dlpack__"):
        return _dlpack_view(obj, dl_device)
    raise _not_a_device_array(obj)


def _cuda_array_interface(obj: Any) -> dict[str, Any] | None:
    """``obj.__cuda_array_interface__``, None when it has none."""
    try:
        return obj.__cuda_array_interface__  # type: ignore[no-any-return]
    except AttributeError:
        return None
    except Exception as e:  # e.g. a tensor that requires grad refuses to export itself
        raise ViewError(f"needs a device array; reading __cuda_array_interface__ of a {type_name(obj)} failed: {e}") from None


def _not_a_device_array(obj: Any) -> ViewError:
    """The error for an object no reader took: a host array, or not an array at all."""
    if type_name(obj) == "numpy.ndarray":
        return _host_error(obj)
    return ViewError(
        f"needs a device array (an object with __cuda_array_interface__ or __dlpack__); got a {type_name(obj)}"
    )


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


def _cai_view(obj: Any, cai: Any) -> ArrayView:
    f = _interface(cai)
    dtype = TYPESTR_DTYPES.get(f.typestr)
    itemsize = _ITEMSIZE[dtype] if dtype is not None else 0
    if dtype is None:
        dtype = f"unsupported element type {f.typestr!r}"
    stride_elems: int | None = None
    if f.strides is not None and len(f.strides) == 1 and len(f.shape) == 1:
        stride_bytes = f.strides[0]
        if itemsize and stride_bytes % itemsize == 0:
            stride_elems = stride_bytes // itemsize
        elif f.shape[0] > 1:
            raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride_bytes} bytes")
    n = _check_1d_contiguous(f.shape, stride_elems)
    return ArrayView(f.ptr, n, dtype, f.readonly, obj)


def _torch_dtype(t: Any) -> str:
    """The oxide name of a CUDA tensor's dtype (or a description); raises for a tensor that is
    not on a CUDA device."""
    if not t.is_cuda:
        if t.device.type == "cpu":
            raise _host_error(t)
        raise ViewError(f"needs a CUDA device array; got a torch.Tensor on device {t.device}")
    key = t.dtype
    dtype = _torch_dtype_cache.get(key)
    if dtype is None:
        dtype = _TORCH_DTYPES.get(str(key), f"unsupported element type {key}")
        _torch_dtype_cache[key] = dtype
    return dtype


def _torch_view(t: Any) -> ArrayView:
    dtype = _torch_dtype(t)
    if t.dim() != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(t.shape)}")
    n = _check_1d_contiguous((t.shape[0],), t.stride(0))
    return ArrayView(t.data_ptr(), n, dtype, False, t)


def _cupy_dtype(a: Any) -> str:
    typestr = a.dtype.str
    dtype = TYPESTR_DTYPES.get(typestr)
    return dtype if dtype is not None else f"unsupported element type {typestr!r}"


def _cupy_view(a: Any) -> ArrayView:
    # CuPy builds its __cuda_array_interface__ dict per call; its attributes are cheap.
    if a.ndim != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(a.shape)}")
    dtype = _cupy_dtype(a)
    n = a.shape[0]
    stride = a.strides[0]
    if n > 1 and stride != a.itemsize:
        if stride % a.itemsize:
            raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride} bytes")
        _check_1d_contiguous((n,), stride // a.itemsize)
    return ArrayView(a.data.ptr, n, dtype, False, a)


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
        name = "bool" if kind == "bool" and bits == 8 else f"{kind}{bits}"
        if name in _ITEMSIZE:
            return name
    return f"unsupported element type (DLPack code {code}, {bits} bits, {lanes} lanes)"


def _dlpack_tensor(obj: Any, dl_device: Any) -> tuple[Any, _DLTensor]:
    """The DLPack capsule of ``obj`` and the DLTensor in it; raises unless it is CUDA memory."""
    device_type = int(dl_device()[0])
    if device_type in _DLPACK_HOST_DEVICES:
        raise _host_error(obj)
    if device_type not in DLPACK_CUDA_DEVICES:
        raise ViewError(f"needs a CUDA device array; got a {type_name(obj)} on DLPack device type {device_type}")
    try:
        capsule = obj.__dlpack__(stream=None)
    except TypeError:
        capsule = obj.__dlpack__()
    return capsule, _dltensor_of(capsule)


def _dlpack_view(obj: Any, dl_device: Any) -> ArrayView:
    capsule, t = _dlpack_tensor(obj, dl_device)
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    stride: int | None = None
    if ndim == 1 and t.strides:
        stride = int(t.strides[0])
    n = _check_1d_contiguous(shape, stride)
    dtype = dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    ptr = int(t.data or 0) + int(t.byte_offset)
    return ArrayView(ptr, n, dtype, False, (obj, capsule))


class TensorView(NamedTuple):
    """An N-d strided device array as a ``Tensor[T, N]`` parameter sees it (strides in elements)."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    readonly: bool
    owner: Any

    @property
    def length(self) -> int:
        """Elements spanned from ptr (for the aliasing check): the last element's offset + 1."""
        if any(d == 0 for d in self.shape):
            return 0
        return 1 + sum((d - 1) * abs(s) for d, s in zip(self.shape, self.strides))


def _elements(strides_bytes: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out = []
    for s in strides_bytes:
        if itemsize == 0 or s % itemsize:
            raise ViewError(f"needs strides that are whole elements; got strides of {tuple(strides_bytes)} bytes")
        out.append(s // itemsize)
    return tuple(out)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def tensor_view_of(obj: Any, ndim: int) -> TensorView:
    """The device memory, shape and element strides of ``obj``, which must have ``ndim`` dims.

    The same readers in the same order as :func:`view_of`; the compiled launcher
    (``_launcher.c``, ``resolve_tensor``) reads PyTorch, CuPy, DeviceArray and CUDA array
    interface objects the same way.
    """
    view = _tensor_view(obj)
    if len(view.shape) != ndim:
        raise ViewError(f"needs a {ndim}-D array; got shape {view.shape}")
    if any(d < 0 for d in view.shape):
        raise ViewError(f"needs a non-negative shape; got shape {view.shape}")
    if any(d >= _INT64_LIMIT for d in view.shape) or any(abs(s) >= _INT64_LIMIT for s in view.strides):
        raise ViewError(f"needs shape and strides that fit 64-bit integers; got shape {view.shape}, "
                        f"strides {view.strides} elements")
    if any(s < 0 for s in view.strides):
        raise ViewError(f"needs non-negative strides; got {view.strides} elements")
    return view


def _tensor_view(obj: Any) -> TensorView:
    if type(obj) is DeviceArray:
        shape = tuple(obj.shape)
        dtype = TYPESTR_DTYPES.get(obj.dtype.str, str(obj.dtype))
        return TensorView(obj.ptr, shape, _contiguous_strides(shape), dtype, False, obj)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        dtype = _torch_dtype(obj)
        return TensorView(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), dtype, False, obj)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(obj, cupy.ndarray):
        # its attributes, not its __cuda_array_interface__ (a dict built per call)
        dtype = _cupy_dtype(obj)
        return TensorView(obj.data.ptr, tuple(obj.shape), _elements(tuple(obj.strides), _ITEMSIZE.get(dtype, 0)),
                          dtype, False, obj)
    cai = _cuda_array_interface(obj)
    if cai is not None:
        f = _interface(cai)
        dtype = TYPESTR_DTYPES.get(f.typestr, f"unsupported element type {f.typestr!r}")
        elem_strides = (_contiguous_strides(f.shape) if f.strides is None
                        else _elements(f.strides, _ITEMSIZE.get(dtype, 0)))
        return TensorView(f.ptr, f.shape, elem_strides, dtype, f.readonly, obj)
    dl_device = getattr(obj, "__dlpack_device__", None)
    if dl_device is not None and hasattr(obj, "__dlpack__"):
        capsule, t = _dlpack_tensor(obj, dl_device)
        n = int(t.ndim)
        shape = tuple(int(t.shape[i]) for i in range(n))
        elem_strides = tuple(int(t.strides[i]) for i in range(n)) if t.strides else _contiguous_strides(shape)
        dtype = dlpack_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        return TensorView(int(t.data or 0) + int(t.byte_offset), shape, elem_strides, dtype, False, (obj, capsule))
    raise _not_a_device_array(obj)


def memory_problem(view: ArrayView | TensorView) -> str | None:
    """Why ``view`` cannot be launched with although its type is right: a null data pointer with
    elements (a freed DeviceArray, a broken producer); None when it can. Reads after "parameter
    'x' of k "."""
    if view.ptr == 0 and view.length > 0:
        freed = type(view.owner) is DeviceArray and view.owner._freed
        return ("is a DeviceArray that was freed (DeviceArray.free()): its memory is gone" if freed else
                f"has no device memory: its data pointer is 0 (NULL), with {view.length} elements")
    nbytes = view.length * itemsize(view.dtype)
    if view.ptr + nbytes > _ADDRESS_LIMIT - 1:
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


def itemsize(dtype: str) -> int:
    return _ITEMSIZE.get(dtype, 1)
