"""What the array adapters make of an array object, and the checks they share: ``ArrayView``
(1-D contiguous), ``TensorView`` (N-d strided), ``ViewError``, element types and sizes."""

# No ``from __future__ import annotations``: typing.NamedTuple compiles string annotations (issue 28, cold start).
import sys
from typing import Any, NamedTuple

from oxide.abi.records import is_record_dtype, record_dtype_name, record_itemsize
from oxide.abi.vectors import vector_itemsize, vector_lanes
from oxide.runtime import device_choice

__all__ = ["ArrayView", "TensorView", "ViewError", "TYPESTR_DTYPES", "ITEMSIZE", "INT64_LIMIT", "ADDRESS_LIMIT",
           "record_name",
           "itemsize", "type_name", "host_error", "gpu_memory_error", "not_a_device_array", "check_1d_contiguous", "elements",
           "contiguous_strides"]

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

ITEMSIZE = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
             "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "bool": 1, "f8e4m3": 1, "f8e5m2": 1}  # fmt: skip

INT64_LIMIT = 2**63  # shapes and strides are packed as i64
ADDRESS_LIMIT = 2**64

HOST_ARRAY_HINT = (
    "copy it to the GPU first, e.g. torch.as_tensor({param}, device='cuda') or cupy.asarray({param}), "
    "or run it on the CPU device (OXIDE_DEVICE=cpu)"
)
# a GPU array passed to a launch on the CPU device (device_choice.ON_CPU)
GPU_ARRAY_HINT = (
    "but kernels run on the CPU device (OXIDE_DEVICE=cpu or oxide.runtime.set_device('cpu')), which reads host "
    "memory: pass a NumPy array or a CPU tensor (e.g. {param}.cpu()), or run on the GPU "
    "(oxide.runtime.set_device('cuda'))"
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


def host_error(obj: Any) -> ViewError:
    return ViewError(f"needs a device array; got a {type_name(obj)} (host memory) — {HOST_ARRAY_HINT}")


def gpu_memory_error(what: str) -> ViewError:
    """The error for GPU memory on the CPU device; ``what`` says what it is ("a cupy.ndarray")."""
    return ViewError(f"is {what} (GPU memory), {GPU_ARRAY_HINT}")


def not_a_device_array(obj: Any) -> ViewError:
    """The error for an object no reader took: a host array, or not an array at all."""
    if device_choice.ON_CPU:
        return ViewError("needs an array in host memory (a NumPy array, a CPU tensor, a DeviceArray, or an object "
                         f"with __array_interface__ or __dlpack__); got a {type_name(obj)}")
    if type_name(obj) == "numpy.ndarray":
        return host_error(obj)
    return ViewError(
        f"needs a device array (an object with __cuda_array_interface__ or __dlpack__); got a {type_name(obj)}"
    )


def check_1d_contiguous(shape: tuple[int, ...], stride_elems: int | None) -> int:
    if len(shape) != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(shape)}")
    n = int(shape[0])
    if n < 0:
        raise ViewError(f"needs a non-negative shape; got shape {tuple(shape)}")
    if n >= INT64_LIMIT:
        raise ViewError(f"needs shape and strides that fit 64-bit integers; got shape {tuple(shape)}")
    if stride_elems is not None and n > 1 and stride_elems != 1:
        raise ViewError(f"needs a contiguous 1-D array; got a stride of {stride_elems} elements")
    return n


def elements(strides_bytes: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out = []
    for s in strides_bytes:
        if itemsize == 0 or s % itemsize:
            raise ViewError(f"needs strides that are whole elements; got strides of {tuple(strides_bytes)} bytes")
        out.append(s // itemsize)
    return tuple(out)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def itemsize(dtype: str) -> int:
    if is_record_dtype(dtype):
        return record_itemsize(dtype)
    if vector_lanes(dtype) is not None:
        return vector_itemsize(dtype)
    return ITEMSIZE.get(dtype, 1)


def record_name(dtype: Any) -> str | None:
    """The manifest's name of a NumPy record dtype (``oxide.abi.records``), which a view of
    ``@oxide.struct`` records must equal; None when ``dtype`` has no fields."""
    fields = getattr(dtype, "fields", None)
    if not fields:
        return None
    parts = []
    for name in dtype.names:
        sub, offset = fields[name][:2]
        scalar = TYPESTR_DTYPES.get(sub.str)
        if scalar is None or sub.shape:
            return f"a record whose field {name!r} is {sub} (records hold scalar fields)"
        parts.append((name, scalar, int(offset)))
    return record_dtype_name(parts, int(dtype.itemsize))
