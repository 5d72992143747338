"""TMA descriptors on the host: ``oxide.tma.descriptor(tensor, box=..., swizzle=...)`` encodes a
``CUtensorMap`` for a torch / CuPy tensor, an ``oxide.DeviceArray`` or any CUDA-array-interface
or DLPack array (``cuTensorMapEncodeTiled``), and a kernel's ``ox.tma.Descriptor[T, N]``
parameter takes the ``TensorMap`` it returns.

Shapes, boxes and coordinates are written outermost first, as the tensor's own shape is
(``box=(rows, cols)`` of a row-major matrix); the map lists them innermost first, as CUDA does.
Every problem is a ``ValueError``/``TypeError`` naming the argument, raised before the driver
sees it. The encoded bytes depend only on the address, shape, strides, element size, box and
swizzle, so they are cached per those (bounded; the cache holds no array). A ``TensorMap``
holds a reference to its array: the memory stays alive while the map does.
"""
from __future__ import annotations

import operator
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from collections import OrderedDict
from typing import Any, Sequence

from oxide.abi.params import (
    TENSOR_MAP_BYTES,
    TENSOR_MAP_MAX_BOX,
    TENSOR_MAP_MAX_NDIM,
    TENSOR_MAP_SWIZZLES,
    tensor_map_box_slot,
)
from oxide.runtime.array_view import ITEMSIZE, TensorView, ViewError

__all__ = ["TensorMap", "descriptor", "SWIZZLES", "MAX_BOX", "TensorMapConverter"]

SWIZZLES = TENSOR_MAP_SWIZZLES  # bytes: none, CU_TENSOR_MAP_SWIZZLE_32B/64B/128B
MAX_BOX = TENSOR_MAP_MAX_BOX  # elements per box dimension
_ALIGN = 16  # bytes: the global address and every stride but the innermost
_MAX_DIM = 2**32  # elements per global dimension
_MAX_STRIDE = 2**40  # bytes
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
_cache_lock = _thread.allocate_lock()


class TensorMap:
    """A TMA descriptor of one array: what an ``ox.tma.Descriptor[T, N]`` parameter takes.

    ``data`` is the 128-byte ``CUtensorMap``; ``dtype``, ``shape``, ``box`` (outermost first) and
    ``swizzle`` say what it describes; ``array`` is the array itself, kept alive by the map."""

    __slots__ = ("data", "words", "dtype", "shape", "strides", "box", "swizzle", "array", "view")

    def __init__(self, data: bytes, view: TensorView, box: tuple[int, ...], swizzle: int, array: Any) -> None:
        self.data = data
        # the slot values of the map: 16 little-endian u64 words (oxide.abi.params)
        self.words = [int.from_bytes(data[k:k + 8], "little") for k in range(0, TENSOR_MAP_BYTES, 8)]
        self.dtype = view.dtype
        self.shape = view.shape
        self.strides = view.strides
        self.box = box
        self.swizzle = swizzle
        self.array = array
        self.view = view

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def box_elements(self) -> int:
        n = 1
        for d in self.box:
            n *= d
        return n

    @property
    def box_bytes(self) -> int:
        """Bytes of one box: what a load's barrier expects (``mbarrier.arrive_expect_tx``)."""
        return self.box_elements * ITEMSIZE[self.dtype]

    def __repr__(self) -> str:
        return (f"TensorMap({self.dtype}, shape={self.shape}, box={self.box}, swizzle={self.swizzle}, "
                f"address=0x{self.view.ptr:x})")


def _positive_ints(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, (int,)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not value:
        raise TypeError(f"oxide.tma.descriptor: {what} must be a tuple of ints (outermost first); got {value!r}")
    out = []
    for v in value:
        try:
            if isinstance(v, bool):
                raise TypeError
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"oxide.tma.descriptor: {what} must be a tuple of ints; got {value!r}") from None
    return tuple(out)


def _check(view: TensorView, box: tuple[int, ...], swizzle: int, dtype: str | None) -> None:
    """The rules of cuTensorMapEncodeTiled (tile mode), each a message naming the argument."""
    ndim = len(view.shape)
    if not 1 <= ndim <= TENSOR_MAP_MAX_NDIM:
        raise ValueError(f"oxide.tma.descriptor: TMA takes arrays of 1 to {TENSOR_MAP_MAX_NDIM} dimensions; "
                         f"got shape {view.shape}")
    if view.dtype not in ITEMSIZE or view.dtype == "bool":
        raise TypeError(f"oxide.tma.descriptor: the array's elements must be numbers; got {view.dtype}")
    if dtype is not None and dtype != view.dtype:
        raise TypeError(f"oxide.tma.descriptor: dtype={dtype} was asked for, but the array holds {view.dtype}")
    if len(box) != ndim:
        raise ValueError(f"oxide.tma.descriptor: box={box} has {len(box)} dimension(s), the array {ndim} "
                         f"(shape {view.shape}); give one box size per dimension, outermost first")
    for axis, b in enumerate(box):
        if not 1 <= b <= MAX_BOX:
            raise ValueError(f"oxide.tma.descriptor: box={box}: each box dimension is 1 to {MAX_BOX} elements; "
                             f"axis {axis} is {b}")
    if swizzle not in SWIZZLES:
        raise ValueError(f"oxide.tma.descriptor: swizzle={swizzle!r}: one of {', '.join(map(str, SWIZZLES))} (bytes)")
    size = ITEMSIZE[view.dtype]
    row = box[-1] * size
    if swizzle and row > swizzle:
        raise ValueError(f"oxide.tma.descriptor: box={box} with swizzle={swizzle}: a box row is {box[-1]} x "
                         f"{size} = {row} bytes, more than the swizzle's {swizzle}; make box[-1] at most "
                         f"{swizzle // size}, or use a larger swizzle")
    if row % 16:
        raise ValueError(f"oxide.tma.descriptor: box={box}: a box row must be a multiple of 16 bytes; it is "
                         f"{box[-1]} x {size} = {row} bytes")
    for axis, d in enumerate(view.shape):
        if not 1 <= d <= _MAX_DIM:
            raise ValueError(f"oxide.tma.descriptor: the array's shape {view.shape}: each dimension is 1 to 2**32 "
                             f"elements; axis {axis} is {d}")
    if view.ptr % _ALIGN:
        raise ValueError(f"oxide.tma.descriptor: the array's address 0x{view.ptr:x} is not a multiple of 16 bytes "
                         "(a view starting inside another array?); TMA needs 16-byte aligned memory")
    if ndim and view.strides[-1] != 1:
        raise ValueError(f"oxide.tma.descriptor: the innermost dimension must be contiguous; the array's strides are "
                         f"{view.strides} elements — pass a .contiguous() copy")
    for axis in range(ndim - 1):
        stride = view.strides[axis] * size
        if stride % _ALIGN or not 0 < stride < _MAX_STRIDE:
            raise ValueError(f"oxide.tma.descriptor: the array's strides {view.strides} elements: the stride of axis "
                             f"{axis} is {stride} bytes; TMA needs each stride but the innermost to be a multiple "
                             "of 16 bytes, below 2**40 (pad the rows, e.g. allocate a wider array and slice it)")


def _encode(view: TensorView, box: tuple[int, ...], swizzle: int) -> bytes:
    from oxide.runtime import device

    drv = device.driver()
    size = ITEMSIZE[view.dtype]
    data_type = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}[size]  # a tile copy moves bits as they are
    ndim = len(view.shape)
    swizzle_kind = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle]
    err, tmap = drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{data_type}"),
        ndim,
        view.ptr,
        # cuda-bindings takes these as its cuuint64_t / cuuint32_t objects, not plain ints
        [drv.cuuint64_t(d) for d in reversed(view.shape)],
        [drv.cuuint64_t(view.strides[axis] * size) for axis in reversed(range(ndim - 1))],
        [drv.cuuint32_t(b) for b in reversed(box)],
        [drv.cuuint32_t(1)] * ndim,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle_kind}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    device.check(err, f"cuTensorMapEncodeTiled (shape {view.shape}, box {box}, swizzle {swizzle})")
    words = tmap.opaque
    data = b"".join(int(w).to_bytes(8, "little") for w in words)
    assert len(data) == TENSOR_MAP_BYTES, len(data)
    return data


def descriptor(array: Any, box: Sequence[int] | int, swizzle: int = 0, dtype: str | None = None) -> TensorMap:
    """A TMA descriptor of ``array`` (a device array: torch, CuPy, ``oxide.DeviceArray``, ...)
    whose boxes are ``box`` elements (outermost first, 1 to 256 each; the innermost a multiple
    of 16 bytes, at most ``swizzle`` bytes when swizzled). ``swizzle``: 0, 32, 64 or 128 bytes,
    the layout a shared array declared with that swizzle holds. ``dtype``: the element type the
    kernel declares, checked here as well as at launch."""
    from oxide.runtime.arrays import _tensor_view

    box_t = _positive_ints(box, "box")
    try:
        view = _tensor_view(array)  # any rank: a box of another rank is the box's error (_check)
    except ViewError as e:
        raise TypeError("oxide.tma.descriptor: the array " + e.template.replace("{param}", "the array")) from None
    try:
        swizzle = operator.index(swizzle)
    except TypeError:
        raise TypeError(f"oxide.tma.descriptor: swizzle must be an int (0, 32, 64 or 128); got {swizzle!r}") from None
    _check(view, box_t, swizzle, dtype)
    key = (view.ptr, view.shape, view.strides, ITEMSIZE[view.dtype], box_t, swizzle)
    with _cache_lock:
        data = _cache.get(key)
        if data is not None:
            _cache.move_to_end(key)
    if data is None:
        data = _encode(view, box_t, swizzle)
        with _cache_lock:
            _cache[key] = data
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return TensorMap(data, view, box_t, swizzle, array)


class TensorMapConverter:
    """The slot values of an ``ox.tma.Descriptor[T, N]`` parameter (``oxide.abi.params``): the
    map's 16 words, then the elements of one box with the swizzle in bytes above them."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, dtype: str, ndim: int) -> None:
        self.dtype, self.ndim = dtype, ndim

    def __call__(self, value: Any) -> list[Any]:
        from oxide.runtime.launch import ScalarError

        if type(value) is not TensorMap:
            raise ScalarError(f"needs a TMA descriptor of {self.ndim}-d {self.dtype} (oxide.tma.descriptor(array, "
                              f"box=...)); got {type(value).__name__}")
        if value.dtype != self.dtype or value.ndim != self.ndim:
            raise ScalarError(f"needs a TMA descriptor of {self.ndim}-d {self.dtype}; got one of {value.ndim}-d "
                              f"{value.dtype}")
        return [*value.words, tensor_map_box_slot(value.box_elements, value.swizzle)]


def _register_converter() -> None:
    from oxide.runtime.arguments import SEVERAL_SLOTS

    SEVERAL_SLOTS.add(TensorMapConverter)


_register_converter()
