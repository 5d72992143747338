"""Array adapters without a GPU: the CUDA array interface, DLPack, DeviceArray."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    SAXPY_KERNELS,
    FakeArray,
    FakeDLPack,
    FakeDriver,
    fake_driver,
    fresh_runtime,
    make_module,
    slot_types,
)

import oxide
from oxide.runtime import device
from oxide.runtime.arrays import ArrayView, ViewError, view_of

__all__: list[str] = []


# ---------------------------------------------------------------------------------------------
# arrays


def test_view_of_cuda_array_interface() -> None:
    v = view_of(FakeArray(10, "<f8", ptr=0x1234))
    assert (v.ptr, v.length, v.dtype, v.readonly) == (0x1234, 10, "f64", False)
    assert view_of(FakeArray(1, strides=(400,))).length == 1  # one element: any stride is contiguous
    assert view_of(FakeArray(3, strides=(4,))).length == 3
    assert view_of(FakeArray(3, "|b1")).dtype == "bool"
    assert view_of(FakeArray(3, "|u1")).dtype == "u8"
    assert view_of(FakeArray(0, ptr=0)).ptr == 0


def test_view_of_dlpack() -> None:
    a = FakeDLPack((5,), code=2, bits=32, ptr=0x5000, byte_offset=16)
    v = view_of(a)
    assert (v.ptr, v.length, v.dtype) == (0x5010, 5, "f32")
    assert view_of(FakeDLPack((5,), code=4, bits=16)).dtype == "bf16"
    assert view_of(FakeDLPack((5,), code=6, bits=8)).dtype == "bool"
    assert view_of(FakeDLPack((5,), code=0, bits=64)).dtype == "i64"
    assert view_of(FakeDLPack((5,), strides=(1,))).length == 5
    assert view_of(FakeDLPack((5,), device_type=13)).length == 5  # managed memory
    with pytest.raises(ViewError, match="needs a contiguous 1-D array; got a stride of 3 elements"):
        view_of(FakeDLPack((5,), strides=(3,)))
    with pytest.raises(ViewError, match=r"needs a 1-D array; got shape \(2, 3\)"):
        view_of(FakeDLPack((2, 3)))
    with pytest.raises(ViewError) as info:
        view_of(FakeDLPack((5,), device_type=1))
    assert info.value.render("x", "k") == (
        "parameter 'x' of k needs a device array; got a fakes.FakeDLPack (host memory) — copy it to the "
        "GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)"
    )
    with pytest.raises(ViewError, match="needs a CUDA device array; got a fakes.FakeDLPack on DLPack device type 10"):
        view_of(FakeDLPack((5,), device_type=10))


def test_dlpack_array_through_a_kernel(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](2.0, FakeDLPack((7,), ptr=0x9000), FakeArray(7, ptr=0xA000))
    assert fake_driver.launches[0]["values"] == [2.0, 0x9000, 7, 0xA000, 7]


def test_array_interface_error_is_reported() -> None:
    class Refuses:
        @property
        def __cuda_array_interface__(self) -> Any:
            raise RuntimeError("Can't export a tensor that requires grad")

    with pytest.raises(ViewError) as info:
        view_of(Refuses())
    assert info.value.render("x", "k") == (
        "parameter 'x' of k needs a device array; reading __cuda_array_interface__ of a test_runtime_arrays.Refuses "
        "failed: Can't export a tensor that requires grad"
    )


def test_device_array_dtypes() -> None:
    from oxide.runtime.device_array import _numpy_dtype

    assert _numpy_dtype("f32") == np.float32
    assert _numpy_dtype(oxide.f64) == np.float64
    assert _numpy_dtype(np.int16) == np.int16
    with pytest.raises(TypeError, match="DeviceArray cannot hold elements of type 'f128'"):
        _numpy_dtype("f128")
    a = oxide.runtime.DeviceArray(0x1000, (5,), "f32", owned=False)
    assert a.__cuda_array_interface__ == {
        "version": 3, "shape": (5,), "typestr": "<f4", "data": (0x1000, False), "strides": None, "stream": None,
    }  # fmt: skip
    assert view_of(a) == ArrayView(0x1000, 5, "f32", False, a)


class _MemoryDriver(FakeDriver):
    """FakeDriver with device memory calls, recorded in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, ...]] = []
        self.next_ptr = 0x900000

    def _alloc(self, name: str, nbytes: int, *stream: int) -> tuple[Any, int]:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000
        self.calls.append((name, nbytes, *stream))
        return self.OK, ptr

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, int]:
        return self._alloc("cuMemAlloc", nbytes)

    def cuMemAllocAsync(self, nbytes: int, stream: int) -> tuple[Any, int]:
        return self._alloc("cuMemAllocAsync", nbytes, stream)

    def __getattr__(self, name: str) -> Any:
        if name in ("cuMemsetD8", "cuMemsetD8Async", "cuMemFree", "cuMemFreeAsync", "cuMemcpyHtoDAsync",
                    "cuMemcpyDtoH", "cuMemcpyDtoHAsync", "cuStreamSynchronize"):  # fmt: skip
            def call(*args: Any) -> tuple[Any]:
                self.calls.append((name, *(a if isinstance(a, int) else type(a).__name__ for a in args)))
                return (self.OK,)

            return call
        raise AttributeError(name)


def test_device_array_zeros_and_stream_ordered_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    drv = _MemoryDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    DeviceArray = oxide.runtime.DeviceArray
    z = DeviceArray.zeros((2, 3), "f64")
    assert drv.calls == [("cuMemAlloc", 48), ("cuMemsetD8", 0x900000, 0, 48)]
    assert (z.shape, z.dtype, z.device, z.__cuda_array_interface__["stream"]) == ((2, 3), np.float64, 0, None)

    class TorchLikeStream:
        cuda_stream = 0x5E

    drv.calls.clear()
    s = DeviceArray.zeros(4, "i32", stream=TorchLikeStream())
    h = DeviceArray.from_numpy(np.arange(3, dtype=np.float32), stream=0x77)
    h.to_numpy()
    assert s.__cuda_array_interface__["stream"] == 0x5E
    del s
    h.free()
    assert drv.calls == [
        ("cuMemAllocAsync", 16, 0x5E), ("cuMemsetD8Async", 0x910000, 0, 16, 0x5E),
        ("cuMemAllocAsync", 12, 0x77), ("cuMemcpyHtoDAsync", 0x920000, "ndarray", 12, 0x77),
        ("cuMemcpyDtoHAsync", "ndarray", 0x920000, 12, 0x77), ("cuStreamSynchronize", 0x77),
        ("cuMemFreeAsync", 0x910000, 0x5E), ("cuMemFreeAsync", 0x920000, 0x77),
    ]  # fmt: skip
    drv.calls.clear()
    e = DeviceArray.empty(0, stream=0x77)  # nothing to allocate
    assert (e.ptr, drv.calls) == (0, [])
    assert DeviceArray.from_numpy(np.zeros(2, np.int8), stream=0).__cuda_array_interface__["stream"] == 1
    with pytest.raises(TypeError, match="cannot use a str as a CUDA stream"):
        DeviceArray.empty(4, stream="s")
