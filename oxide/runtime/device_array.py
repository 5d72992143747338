"""``DeviceArray``: a minimal owned buffer of device memory, for users without PyTorch or CuPy.

It speaks ``__cuda_array_interface__`` (version 3), so other libraries can read it too.
Copies are synchronous (``cuMemcpyHtoD``/``cuMemcpyDtoH``). Made on the CPU device
(``device_choice``) it is host memory, and speaks ``__array_interface__`` instead
(``numpy.asarray(a)`` is a view of it).
"""
from __future__ import annotations

import math
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from typing import Any

from oxide.numpy_dependency import import_numpy
from oxide.runtime import device, device_choice
from oxide.runtime.streams import stream_handle

__all__ = ["DeviceArray"]


def _numpy_dtype(dtype: Any) -> Any:
    np = import_numpy("oxide.runtime.DeviceArray")

    numpy_name = getattr(dtype, "numpy_name", None)  # an oxide ScalarType
    if numpy_name is not None:
        dtype = numpy_name
    elif isinstance(dtype, str):
        from oxide.abi.scalars import SCALAR_TYPES

        if dtype in SCALAR_TYPES:
            dtype = SCALAR_TYPES[dtype].numpy_name
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"DeviceArray cannot hold elements of type {dtype!r}") from None


class DeviceArray:
    """A C-contiguous array in device memory, freed when the object is.

    ``device`` is the CUDA ordinal of the GPU holding it (None: not known, e.g. for a pointer
    handed in; a launch on a host with several GPUs then asks the driver). An array allocated
    on a stream (``empty(..., stream=s)``) is stream-ordered: allocated, copied and freed in the
    order of the work on ``s`` (``cuMemAllocAsync`` / ``cuMemFreeAsync``), usable by work on
    ``s`` without a synchronization. A launch on another stream waits for ``s`` first, and
    freeing the array (``free()`` or collection) waits for every oxide launch that used it on
    another stream (an event recorded after each, waited for by ``s`` before
    ``cuMemFreeAsync``). A launch holds ``_uses_lock`` while it queues the kernel and records
    that event, and ``free()`` takes it, so a free in another thread is ordered after the launch
    or the launch is refused (kernel.py, ``Kernel._refuse_freed``)."""

    _uses_lock = _thread.RLock()  # re-entered when collecting another array frees it meanwhile

    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...],
        dtype: Any,
        *,
        owned: bool = True,
        device: int | None = None,
        stream: Any = None,
    ) -> None:
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = _numpy_dtype(dtype)
        self._owned = owned and self.ptr != 0
        self.device = device
        self._stream_owner = stream  # kept alive: the memory is freed on it
        self._stream = None if stream is None else stream_handle(stream, "DeviceArray(stream=...)")
        self._freed = False
        self._host = device_choice.ON_CPU  # made on the CPU device: host memory
        # stream handle -> an event recorded after the last oxide launch that used this
        # stream-ordered array on that stream (not its own); the free waits for them
        self._uses: dict[int, Any] = {}

    @classmethod
    def empty(cls, n: int | tuple[int, ...], dtype: Any = "float32", *, stream: Any = None) -> DeviceArray:
        """Uninitialized device memory for ``n`` elements (an int or a shape) of ``dtype``;
        stream-ordered on ``stream`` (a stream object or handle) when one is given."""
        shape = (int(n),) if isinstance(n, int) else tuple(int(s) for s in n)
        if any(s < 0 for s in shape):
            raise ValueError(f"an array shape cannot be negative; got {shape}")
        np_dtype = _numpy_dtype(dtype)
        nbytes = math.prod(shape) * np_dtype.itemsize
        handle = None if stream is None else stream_handle(stream, "DeviceArray.empty(stream=...)")
        ptr, ordinal = 0, None
        if nbytes:
            ctx = device.current_context()
            drv = device.driver()
            if handle is None:
                err, dptr = drv.cuMemAlloc(nbytes)
                device.check(err, f"cuMemAlloc({nbytes} bytes)")
            else:
                err, dptr = drv.cuMemAllocAsync(nbytes, handle)
                device.check(err, f"cuMemAllocAsync({nbytes} bytes, stream {handle:#x})")
            ptr, ordinal = int(dptr), device.context_device(ctx).ordinal
        return cls(ptr, shape, np_dtype, device=ordinal, stream=stream)

    @classmethod
    def zeros(cls, n: int | tuple[int, ...], dtype: Any = "float32", *, stream: Any = None) -> DeviceArray:
        """Device memory for ``n`` elements of ``dtype``, every byte 0 (``cuMemsetD8``, on
        ``stream`` when one is given)."""
        out = cls.empty(n, dtype, stream=stream)
        if out.nbytes:
            drv = device.driver()
            if out._stream is None:
                (err,) = drv.cuMemsetD8(out.ptr, 0, out.nbytes)
            else:
                (err,) = drv.cuMemsetD8Async(out.ptr, 0, out.nbytes, out._stream)
            device.check(err, "cuMemsetD8")
        return out

    @classmethod
    def from_numpy(cls, array: Any, *, stream: Any = None) -> DeviceArray:
        """A device copy of the NumPy array (or anything ``numpy.asarray`` accepts); on
        ``stream`` when one is given (the host array may be reused once this returns)."""
        np = import_numpy("DeviceArray.from_numpy")

        host = np.ascontiguousarray(array)
        out = cls.empty(host.shape, host.dtype, stream=stream)
        if host.nbytes:
            drv = device.driver()
            if out._stream is None:
                (err,) = drv.cuMemcpyHtoD(out.ptr, host, host.nbytes)
            else:  # pageable memory: staged before the call returns
                (err,) = drv.cuMemcpyHtoDAsync(out.ptr, host, host.nbytes, out._stream)
            device.check(err, "cuMemcpyHtoD")
        return out

    def to_numpy(self) -> Any:
        """A host copy, as a NumPy array of the same shape and dtype (after the work on the
        array's stream, for a stream-ordered one)."""
        np = import_numpy("DeviceArray.to_numpy")

        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            device.current_context()
            drv = device.driver()
            if self._stream is None:
                (err,) = drv.cuMemcpyDtoH(host, self.ptr, host.nbytes)
                device.check(err, "cuMemcpyDtoH")
            else:
                (err,) = drv.cuMemcpyDtoHAsync(host, self.ptr, host.nbytes, self._stream)
                device.check(err, "cuMemcpyDtoHAsync")
                (err,) = drv.cuStreamSynchronize(self._stream)
                device.check(err, "cuStreamSynchronize")
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
    def __array_interface__(self) -> dict[str, Any]:
        """The array interface of an array made on the CPU device (host memory); an
        AttributeError for one in GPU memory."""
        if not self._host:
            raise AttributeError("a DeviceArray in GPU memory has no __array_interface__: use to_numpy()")
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "descr": self.dtype.descr}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._host:
            raise AttributeError("a DeviceArray made on the CPU device is host memory: it has __array_interface__, "
                                 "not __cuda_array_interface__")
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            # the stream its data is ordered on (1: the legacy default stream), for the consumer
            "stream": None if self._stream is None else (self._stream or 1),
        }

    def _used_on(self, stream: int) -> None:
        """Notes that a launch on ``stream`` (another than the array's) has just been queued
        with this stream-ordered array: its memory must not be freed before that launch ends."""
        if not self._owned or self._stream is None:
            return
        drv = device.driver()
        with DeviceArray._uses_lock:  # one event per stream, recorded after its last use
            event = self._uses.get(stream)
            if event is None:
                event = self._uses[stream] = device.new_event()
            (err,) = drv.cuEventRecord(event, stream)
        device.check(err, f"cuEventRecord on stream {stream:#x}")

    def free(self) -> None:
        """Frees the memory now rather than when the object is collected (a stream-ordered
        array: on its stream, after the oxide launches that used it on other streams)."""
        if self._owned:
            drv = device.driver()
            with DeviceArray._uses_lock:
                if not self._owned:
                    return
                self._owned = False
                self._freed = True
                ptr, self.ptr = self.ptr, 0
                uses, self._uses = self._uses, {}
            if self._stream is None:
                (err,) = drv.cuMemFree(ptr)
                device.check(err, "cuMemFree")
                return
            for event in uses.values():
                (err,) = drv.cuStreamWaitEvent(self._stream, event, 0)
                if err != 0:  # the free cannot be ordered after that launch: keep the memory
                    device.raise_cuda_error(err, f"cuStreamWaitEvent of stream {self._stream:#x} before freeing "
                                            f"a DeviceArray of {self.nbytes} bytes (not freed)")
                drv.cuEventDestroy(event)  # released once recorded work completes; the wait holds
            (err,) = drv.cuMemFreeAsync(ptr, self._stream)
            device.check(err, "cuMemFreeAsync")

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass  # at interpreter exit the driver may be gone; the process frees the memory anyway

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"
