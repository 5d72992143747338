"""Runtime soundness without a GPU (issue 14): bad arrays and arguments refused before anything
is launched, naming kernel and parameter, in both launch paths; races between threads; a
context reset; stream-ordered memory freed only after the launches that use it.

The fake driver of tests/fakes.py stands in for CUDA. Each refusal is checked on the
compiled launcher's path (after a first launch has taught it the kernel and the array types)
and on the Python path (``path`` fixture), and with no launch reaching the driver.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import oxide
from oxide.runtime import device, kernel_errors, launcher
from oxide.runtime.arrays import may_overlap_itself
from oxide.runtime.launch import normalize_dims

from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    SAXPY_KERNELS,
    SITES,
    TENSOR_KERNELS,
    TENSOR_SOURCE,
    CFakeDriver,
    FakeArray,
    FakeDLPack,
    FakeDriver,
    _fake_torch,
    c_driver,
    fail_on_device,
    fake_driver,
    fresh_runtime,
    make_module,
    paths,
    record_words,
    slot_types,
)

DeviceArray = oxide.runtime.DeviceArray


@pytest.fixture(params=["c", "python"])
def path(request: pytest.FixtureRequest) -> str:
    """Which launch path a test's launches take after the first (which is always Python's)."""
    if request.param == "c" and not launcher.ENABLED:
        pytest.skip("the C launcher is not built (or OXIDE_PURE_PYTHON=1)")
    return str(request.param)


def settle(path: str) -> None:
    """After a first successful launch: keep the C launcher (path "c") or switch it off."""
    if path == "python" and launcher.ENABLED:
        launcher._ext.set_driver(0, 0)


def saxpy_module(tmp_path: Path, drv: FakeDriver, **kw: Any) -> types.ModuleType:
    m = make_module(tmp_path, **kw)
    drv.signatures.update({k.symbol: slot_types(k.params) for k in SAXPY_KERNELS})
    return m


def tensor_module(tmp_path: Path, drv: FakeDriver) -> types.ModuleType:
    m = make_module(tmp_path, TENSOR_SOURCE, TENSOR_KERNELS)
    drv.signatures.update({k.symbol: slot_types(k.params) for k in TENSOR_KERNELS})
    return m


def refused(drv: FakeDriver, call: Callable[[], Any], error: type[Exception], message: str) -> None:
    """``call()`` raises ``error`` with exactly ``message`` and launches nothing."""
    before = len(drv.launches)
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message
    assert len(drv.launches) == before


# ---------------------------------------------------------------------------------------------
# arrays with no memory, negative shapes, shapes that lie, self-overlapping outputs


def test_freed_and_null_arrays_are_refused(tmp_path: Path, c_driver: CFakeDriver, path: str) -> None:
    m = saxpy_module(tmp_path, c_driver)
    x = DeviceArray(0x1000, (8,), "f32", owned=False)
    out = FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    m.scale[1, 32](2.0, x, out)
    assert paths(c_driver) == ["python", path]

    freed = DeviceArray(0x2000, (8,), "f32")  # owned: free() gives the memory back
    c_driver.cuMemFree = lambda ptr: (c_driver.OK,)  # type: ignore[attr-defined]
    freed.free()
    refused(c_driver, lambda: m.scale[1, 32](2.0, freed, out), TypeError,
            "parameter 'x' of scale is a DeviceArray that was freed (DeviceArray.free()): its memory is gone")
    refused(c_driver, lambda: m.scale[1, 32](2.0, x, FakeArray(8, ptr=0)), TypeError,
            "parameter 'out' of scale has no device memory: its data pointer is 0 (NULL), with 8 elements")
    null = FakeArray(8)
    null.__cuda_array_interface__["data"] = (None, False)
    refused(c_driver, lambda: m.scale[1, 32](2.0, null, out), TypeError,
            "parameter 'x' of scale has no device memory: its data pointer is 0 (NULL), with 8 elements")
    m.scale[1, 32](2.0, FakeArray(0, ptr=0), FakeArray(0, ptr=0))  # empty arrays need no memory
    assert paths(c_driver)[2:] == [path]


def test_negative_shapes_are_refused(tmp_path: Path, c_driver: CFakeDriver, path: str) -> None:
    m = saxpy_module(tmp_path, c_driver)
    t = tensor_module(tmp_path, c_driver)
    m.scale[1, 32](2.0, FakeArray(8), FakeArray(8))
    t.tadd[1, 32](FakeArray(shape=(2, 2)), 1.0, FakeArray(shape=(2, 2)))
    settle(path)
    refused(c_driver, lambda: m.scale[1, 32](2.0, FakeArray(shape=(-4,)), FakeArray(8)), TypeError,
            "parameter 'x' of scale needs a non-negative shape; got shape (-4,)")
    refused(c_driver, lambda: t.tadd[1, 32](FakeArray(shape=(2, 2)), 1.0, FakeArray(shape=(-1, 3))), TypeError,
            "parameter 'out' of tadd needs a non-negative shape; got shape (-1, 3)")
    refused(c_driver, lambda: m.scale[1, 32](2.0, DeviceArray(0x1000, (-2,), "f32", owned=False), FakeArray(8)),
            TypeError, "parameter 'x' of scale needs a non-negative shape; got shape (-2,)")


def test_shapes_that_lie_are_refused(tmp_path: Path, c_driver: CFakeDriver, path: str) -> None:
    """Shapes whose bytes run past the 64-bit address space: the C launcher's size and overlap
    arithmetic must not wrap around (and launch what Python refuses)."""
    m = saxpy_module(tmp_path, c_driver)
    t = tensor_module(tmp_path, c_driver)
    m.scale[1, 32](2.0, FakeArray(8), FakeArray(8))
    t.tadd[1, 32](FakeArray(shape=(2, 2)), 1.0, FakeArray(shape=(2, 2)))
    settle(path)
    out = FakeArray(8, ptr=0x1000)
    # 2**62 f32 elements from 0x2000: their end wraps to 0x2000 unchecked, "below" out
    refused(c_driver, lambda: m.scale[1, 32](2.0, FakeArray(2**62, ptr=0x2000), out), TypeError,
            "parameter 'x' of scale spans 18446744073709551616 bytes from 0x2000, past the end of the 64-bit address "
            "space: its shape is not the memory it has")
    # a span of 2**40 * 2**40 elements: signed overflow in the span unchecked
    refused(c_driver, lambda: t.tadd[1, 32](FakeArray(shape=(2**40, 2**40), strides=(2**42, 4), ptr=0x3000), 1.0,
                                            FakeArray(shape=(2, 2))), TypeError,
            "parameter 'a' of tadd spans 4835703278458516698824704 bytes from 0x3000, past the end of the 64-bit "
            "address space: its shape is not the memory it has")
    refused(c_driver, lambda: t.tadd[1, 32](FakeArray(shape=(2, 2)), 1.0, DeviceArray(0x5000, (2**63, 2), "f32",
                                                                                       owned=False)),
            TypeError, "parameter 'out' of tadd needs shape and strides that fit 64-bit integers; got shape "
                       "(9223372036854775808, 2), strides (2, 1) elements")


@pytest.mark.parametrize(("shape", "strides", "overlaps"), [
    ((4, 4), (0, 1), True),  # expand() along rows
    ((4, 4), (4, 0), True),
    ((4, 4), (1, 2), True),  # rows 2 apart, 4 long
    ((4, 4), (4, 1), False),
    ((4, 4), (1, 4), False),  # transposed
    ((4, 1), (1, 0), False),  # a dimension of one element: its stride never moves
    ((2, 3, 4), (1, 2, 6), False),
    ((2, 3, 4), (12, 4, 1), False),
    ((3, 3), (1, 1), True),
    ((2, 2), (1, 1), True),
    ((0, 4), (0, 0), False),
])  # fmt: skip
def test_self_overlap(shape: tuple[int, ...], strides: tuple[int, ...], overlaps: bool) -> None:
    assert may_overlap_itself(shape, strides) == overlaps
    # against the definition: two indices, one offset
    offsets = [sum(i * s for i, s in zip(idx, strides)) for idx in np.ndindex(*shape)]
    if not overlaps:
        assert len(set(offsets)) == len(offsets)
    elif shape[0] and all(d for d in shape):
        assert len(set(offsets)) < len(offsets)


def test_broadcast_outputs_are_refused(tmp_path: Path, c_driver: CFakeDriver, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    t = tensor_module(tmp_path, c_driver)
    a = torch.Tensor(0, torch.float32, 0x1000, shape=(4, 4), strides=(4, 1))  # type: ignore[attr-defined]
    t.tadd[1, 32](a, 1.0, torch.Tensor(0, torch.float32, 0x2000, shape=(4, 4), strides=(4, 1)))  # type: ignore[attr-defined]
    settle(path)
    expanded = torch.Tensor(0, torch.float32, 0x3000, shape=(4, 4), strides=(0, 1))  # type: ignore[attr-defined]
    refused(c_driver, lambda: t.tadd[1, 32](a, 1.0, expanded), TypeError,
            "parameter 'out' of tadd is written by the kernel; got a view whose elements overlap (shape (4, 4), strides "
            "(0, 1) elements: a broadcast or expand()ed array), so threads would write the same element — pass a "
            "contiguous copy (.contiguous(), .copy())")
    refused(c_driver, lambda: t.tadd[1, 32](a, 1.0, FakeArray(shape=(4, 4), strides=(4, 0))), TypeError,
            "parameter 'out' of tadd is written by the kernel; got a view whose elements overlap (shape (4, 4), strides "
            "(1, 0) elements: a broadcast or expand()ed array), so threads would write the same element — pass a "
            "contiguous copy (.contiguous(), .copy())")
    t.tadd[1, 32](expanded, 1.0, torch.Tensor(0, torch.float32, 0x4000, shape=(4, 4), strides=(1, 4)))  # read: fine
    assert paths(c_driver)[1:] == [path]


# ---------------------------------------------------------------------------------------------
# PyTorch autograd: written tensors


def _autograd_torch(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake torch with what oxide asks autograd: requires_grad, grad mode, version bumps."""
    torch = _fake_torch()
    torch.bumped = []  # type: ignore[attr-defined]
    torch.grad_enabled = True  # type: ignore[attr-defined]
    torch.is_grad_enabled = lambda: torch.grad_enabled  # type: ignore[attr-defined]
    torch.autograd = types.SimpleNamespace(graph=types.SimpleNamespace(  # type: ignore[attr-defined]
        increment_version=lambda t: torch.bumped.append(t.data_ptr())))
    torch.Tensor.requires_grad = False  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def test_written_tensors_tell_autograd(tmp_path: Path, c_driver: CFakeDriver, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _autograd_torch(monkeypatch)
    m = saxpy_module(tmp_path, c_driver)
    x = torch.Tensor(8, torch.float32, 0x1000)
    out = torch.Tensor(8, torch.float32, 0x2000)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    m.scale[1, 32](2.0, x, out)
    assert paths(c_driver) == ["python", path]
    assert torch.bumped == [0x2000, 0x2000]  # the output's version, once per launch; never the input's
    grad = torch.Tensor(8, torch.float32, 0x3000)
    grad.requires_grad = True
    message = ("parameter 'out' of scale is written by the kernel; got a tensor that requires grad, and autograd "
               "cannot follow a write by an oxide kernel — write under torch.no_grad(), or into a tensor that does not "
               "require grad (e.g. out.detach())")
    refused(c_driver, lambda: m.scale[1, 32](2.0, x, grad), TypeError, message)
    m.scale[1, 32](2.0, grad, out)  # read: fine
    torch.grad_enabled = False  # torch.no_grad(): an optimizer's update
    m.scale[1, 32](2.0, x, grad)
    assert torch.bumped[2:] == [0x2000, 0x3000]
    assert len(c_driver.launches) == 4


# ---------------------------------------------------------------------------------------------
# errors that name the parameter


def test_keyword_arguments_name_the_parameter(tmp_path: Path, c_driver: CFakeDriver, path: str) -> None:
    m = saxpy_module(tmp_path, c_driver)
    x, out = FakeArray(8), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    refused(c_driver, lambda: m.scale[1, 32](2.0, x, out=out), TypeError,
            "kernel scale takes its arguments by position (a, x, out); got keyword argument 'out': pass them in order, "
            "scale[grid, block](...)")
    refused(c_driver, lambda: m.scale.launch(a=2.0, x=x, out=out, grid=1, block=32), TypeError,
            "kernel scale takes its arguments by position (a, x, out); got keyword arguments 'a', 'x', 'out': pass "
            "them in order, scale[grid, block](...)")


def test_float_parameters_refuse_huge_ints(tmp_path: Path, c_driver: CFakeDriver, path: str) -> None:
    m = saxpy_module(tmp_path, c_driver)
    x, out = FakeArray(8), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    refused(c_driver, lambda: m.scale[1, 32](10**400, x, out), TypeError,
            "parameter 'a' of scale needs a number in the range of f32; got int 1000000000000000000000000000000000000..."
            ", too large for a float")
    m.scale[1, 32](2**200, x, out)  # beyond f32, within a double: rounds to inf, as a cast on the GPU
    assert c_driver.launches[-1]["values"][0] == float("inf")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda cai: cai.pop("shape"), "got a malformed __cuda_array_interface__: it has no 'shape'"),
    (lambda cai: cai.update(typestr=["<f4"]), "got a malformed __cuda_array_interface__: 'typestr' must be a str; got ['<f4']"),
    (lambda cai: cai.update(data=(1.5, False)),
     "got a malformed __cuda_array_interface__: the data pointer must be an int from 0 to 2**64-1; got 1.5"),
    (lambda cai: cai.update(data=(2**64, False)),
     "got a malformed __cuda_array_interface__: the data pointer must be an int from 0 to 2**64-1; got 18446744073709551616"),
    (lambda cai: cai.update(data=0x1000), "got a malformed __cuda_array_interface__: 'data' must be (pointer, read_only); got 4096"),
    (lambda cai: cai.update(shape=(8.0,)), "got a malformed __cuda_array_interface__: 'shape' must be a tuple of ints; got (8.0,)"),
    (lambda cai: cai.update(shape=8), "got a malformed __cuda_array_interface__: 'shape' must be a tuple of ints; got 8"),
    (lambda cai: cai.update(strides=(4, 4)),
     "got a malformed __cuda_array_interface__: 'strides' (4, 4) has not one entry per dimension of 'shape' (8,)"),
])  # fmt: skip
def test_malformed_cuda_array_interfaces_name_the_parameter(
    tmp_path: Path, c_driver: CFakeDriver, path: str, edit: Callable[[dict[str, Any]], Any], message: str
) -> None:
    m = saxpy_module(tmp_path, c_driver)
    t = tensor_module(tmp_path, c_driver)
    m.scale[1, 32](2.0, FakeArray(8), FakeArray(8))
    t.tadd[1, 32](FakeArray(shape=(2, 2)), 1.0, FakeArray(shape=(2, 2)))
    settle(path)
    bad = FakeArray(8)
    edit(bad.__cuda_array_interface__)
    refused(c_driver, lambda: m.scale[1, 32](2.0, bad, FakeArray(8)), TypeError,
            f"parameter 'x' of scale needs a device array; {message}")
    refused(c_driver, lambda: t.tadd[1, 32](bad, 1.0, FakeArray(shape=(2, 2))), TypeError,
            f"parameter 'a' of tadd needs a device array; {message}")

    class NotADict:
        __cuda_array_interface__ = [("shape", (8,))]

    refused(c_driver, lambda: m.scale[1, 32](2.0, NotADict(), FakeArray(8)), TypeError,
            "parameter 'x' of scale needs a device array; got a malformed __cuda_array_interface__: it is a list, not a dict")


class RaisingDLPack(FakeDLPack):
    """A DLPack producer whose ``__dlpack__`` (or ``__dlpack_device__``) raises, or returns no capsule."""

    def __init__(self, failing: str) -> None:
        super().__init__((8,))
        self.failing = failing

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.failing == "device":
            raise RuntimeError("no device today")
        return super().__dlpack_device__()

    def __dlpack__(self, stream: Any = None) -> Any:
        if self.failing == "export":
            raise BufferError("cannot export a tensor that requires grad")
        if self.failing == "not a capsule":
            return "capsule"
        return super().__dlpack__(stream)


@pytest.mark.parametrize("failing, message", [
    ("export", "calling __dlpack__() of a test_runtime_soundness.RaisingDLPack failed: BufferError: cannot export a tensor that requires grad"),
    ("device", "calling __dlpack_device__() of a test_runtime_soundness.RaisingDLPack failed: RuntimeError: no device today"),
    ("not a capsule", "__dlpack__() of a test_runtime_soundness.RaisingDLPack returned str, not an unconsumed 'dltensor' capsule"),
])
def test_a_failing_dlpack_producer_names_the_parameter(tmp_path: Path, c_driver: CFakeDriver, path: str,
                                                       failing: str, message: str) -> None:
    """Issue 26 item 2: a raising __dlpack__ came out as the producer's bare BufferError."""
    m = saxpy_module(tmp_path, c_driver)
    t = tensor_module(tmp_path, c_driver)
    m.scale[1, 32](2.0, FakeDLPack((8,)), FakeArray(8))
    t.tadd[1, 32](FakeDLPack((2, 2)), 1.0, FakeArray(shape=(2, 2)))
    settle(path)
    refused(c_driver, lambda: m.scale[1, 32](2.0, RaisingDLPack(failing), FakeArray(8)), TypeError,
            f"parameter 'x' of scale needs a device array; {message}")
    refused(c_driver, lambda: t.tadd[1, 32](RaisingDLPack(failing), 1.0, FakeArray(shape=(2, 2))), TypeError,
            f"parameter 'a' of tadd needs a device array; {message}")


class CudaStreamAttribute:
    def __init__(self, handle: Any) -> None:
        self.cuda_stream = handle


class CudaStreamProtocol:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __cuda_stream__(self) -> Any:
        return self.value


@pytest.mark.parametrize("stream, error, message", [
    (-1, ValueError, "its handle is -1, outside 0 to 2**64 - 1"),
    (2**64, ValueError, "its handle is 18446744073709551616, outside 0 to 2**64 - 1"),
    (CudaStreamAttribute(-1), ValueError,
     "its handle (the cuda_stream of its CudaStreamAttribute) is -1, outside 0 to 2**64 - 1"),
    (CudaStreamAttribute(2**64), ValueError,
     "its handle (the cuda_stream of its CudaStreamAttribute) is 18446744073709551616, outside 0 to 2**64 - 1"),
    (CudaStreamAttribute(1.5), TypeError, "its handle (the cuda_stream of its CudaStreamAttribute) is 1.5, not an int"),
    (CudaStreamAttribute(True), TypeError, "its handle (the cuda_stream of its CudaStreamAttribute) is True, not an int"),
    (CudaStreamProtocol((0, 2**64)), ValueError,
     "its handle (the handle CudaStreamProtocol.__cuda_stream__() returned) is 18446744073709551616, outside 0 to 2**64 - 1"),
    (CudaStreamProtocol((0, -5)), ValueError,
     "its handle (the handle CudaStreamProtocol.__cuda_stream__() returned) is -5, outside 0 to 2**64 - 1"),
    (CudaStreamProtocol((0, "0x5")), TypeError,
     "its handle (the handle CudaStreamProtocol.__cuda_stream__() returned) is '0x5', not an int"),
], ids=["-1", "2**64", "cuda_stream=-1", "cuda_stream=2**64", "cuda_stream=1.5", "cuda_stream=True",
        "__cuda_stream__=(0,2**64)", "__cuda_stream__=(0,-5)", "__cuda_stream__=str"])
def test_bad_stream_handles_are_refused_naming_the_stream(tmp_path: Path, c_driver: CFakeDriver, path: str,
                                                          stream: Any, error: type[Exception], message: str) -> None:
    """Issue 26 item 3: cuda_stream = -1 (both paths), 2**64 and a __cuda_stream__ of (0, 2**64)
    (the Python path) were handed to the driver as garbage handles."""
    m = saxpy_module(tmp_path, c_driver)
    m.scale[1, 32, 0x5](2.0, FakeArray(8), FakeArray(8))
    settle(path)
    refused(c_driver, lambda: m.scale[1, 32, stream](2.0, FakeArray(8), FakeArray(8)), error,
            f"the stream of scale[grid, block, stream] is not a CUDA stream: {message}")
    refused(c_driver, lambda: m.scale.launch(2.0, FakeArray(8), FakeArray(8), grid=1, block=32, stream=stream), error,
            f"the stream of scale[grid, block, stream] is not a CUDA stream: {message}")
    with pytest.raises(error) as info:
        DeviceArray.empty(8, "f32", stream=stream)
    assert str(info.value) == f"DeviceArray.empty(stream=...) is not a CUDA stream: {message}"
    m.scale[1, 32, CudaStreamAttribute(2**64 - 1)](2.0, FakeArray(8), FakeArray(8))  # the largest handle is one
    assert c_driver.launches[-1]["stream"] == 2**64 - 1


def test_launch_dimensions_beyond_cuda_limits(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = saxpy_module(tmp_path, c_driver)
    x, out = FakeArray(8), FakeArray(8)
    limits = "(CUDA's limits: grid (2147483647, 65535, 65535), block (1024, 1024, 64))"
    for call, message in [
        (lambda: m.scale[(1, 65536), 32], f"the grid of kernel scale is at most 65535 along y; got grid (1, 65536, 1) {limits}"),
        (lambda: m.scale[(1, 1, 70000), 32], f"the grid of kernel scale is at most 65535 along z; got grid (1, 1, 70000) {limits}"),
        (lambda: m.scale[2**31, 32], f"the grid of kernel scale is at most 2147483647 along x; got grid (2147483648, 1, 1) {limits}"),
        (lambda: m.scale[1, (1, 1, 65)], f"the block of kernel scale is at most 64 along z; got block (1, 1, 65) {limits}"),
        (lambda: m.scale.launch(2.0, x, out, grid=(1, 2**16), block=32),
         f"the grid of kernel scale is at most 65535 along y; got grid (1, 65536, 1) {limits}"),
    ]:  # fmt: skip
        refused(c_driver, call, ValueError, message)
    m.scale[(2**31 - 1, 65535, 65535), (16, 1, 64)](2.0, x, out)  # the limits themselves
    assert c_driver.launches[-1]["grid"] == (2**31 - 1, 65535, 65535)
    assert normalize_dims(5, (2, 2)) == ((5, 1, 1), (2, 2, 1))


# ---------------------------------------------------------------------------------------------
# stream-ordered memory: freed after the launches that use it on other streams


class StreamDriver(CFakeDriver):
    """The C fake driver with device memory and events, calls recorded in order in ``calls``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, ...]] = []
        self.next_ptr = 0x900000
        self.next_event = 0xE0

    def cuMemAllocAsync(self, nbytes: int, stream: int) -> tuple[Any, int]:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000
        self.calls.append(("alloc", ptr, stream))
        return self.OK, ptr

    def cuMemFreeAsync(self, ptr: int, stream: int) -> tuple[Any]:
        self.calls.append(("free", ptr, stream))
        return (self.OK,)

    def cuEventCreate(self, flags: Any) -> tuple[Any, int]:
        self.next_event += 1
        return self.OK, self.next_event

    def cuEventRecord(self, event: int, stream: int) -> tuple[Any]:
        self.calls.append(("record", event, stream))
        return (self.OK,)

    def cuStreamWaitEvent(self, stream: int, event: int, flags: int) -> tuple[Any]:
        self.calls.append(("wait", stream, event))
        return (self.OK,)

    def cuEventDestroy(self, event: int) -> tuple[Any]:
        self.calls.append(("destroy", event))
        return (self.OK,)

    def cuLaunchKernel(self, fn: Any, *rest: Any) -> tuple[Any]:
        result = super().cuLaunchKernel(fn, *rest)
        self.calls.append(("launch", rest[7]))  # the stream
        return result

    def _launch_from_c(self, fn: int, *rest: Any) -> int:
        self.calls.append(("launch", rest[7] or 0))
        return super()._launch_from_c(fn, *rest)


def test_stream_ordered_array_is_freed_after_its_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drv = StreamDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv)
    produced = DeviceArray.empty(8, "f32", stream=0x5)
    ptr = produced.ptr
    out = FakeArray(8)
    m.scale[1, 32, 0x9](2.0, produced, out)  # a consumer on another stream
    m.scale[1, 32, 0x9](2.0, produced, out)
    m.scale[1, 32, 0x5](2.0, produced, out)  # its own stream: nothing to note
    m.scale[1, 32](2.0, produced, out)  # the legacy default stream
    del produced  # collected: freed at once, but after those launches on the GPU
    waits = [c for c in drv.calls if c[0] != "record" or c[2] in (0x9, 0)]
    assert waits == [
        ("alloc", ptr, 0x5),
        ("wait", 0x9, 0xE1), ("launch", 0x9), ("record", 0xE2, 0x9),  # waits for stream 5, then noted
        ("wait", 0x9, 0xE1), ("launch", 0x9), ("record", 0xE2, 0x9),  # the same event, re-recorded
        ("launch", 0x5),
        ("wait", 0, 0xE1), ("launch", 0), ("record", 0xE3, 0),
        ("wait", 0x5, 0xE2), ("destroy", 0xE2), ("wait", 0x5, 0xE3), ("destroy", 0xE3),  # stream 5 waits
        ("free", ptr, 0x5),
    ]  # fmt: skip


class FreeingArray:
    """A CUDA array interface object whose interface, read while a launch's arguments are read,
    runs ``during()`` once (another thread freeing an array, to its end) before it answers."""

    def __init__(self, during: Callable[[], None]) -> None:
        self.during: Callable[[], None] | None = during
        self._cai = {"version": 3, "shape": (8,), "typestr": "<f4", "data": (0x7A0000, False), "strides": None}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        during, self.during = self.during, None
        if during is not None:
            during()
        return self._cai


def in_thread(work: Callable[[], None], wait_s: float) -> threading.Thread:
    """Starts ``work`` in another thread and waits for it at most ``wait_s`` seconds (it may be
    blocked, as a free() must be while a launch is being queued)."""
    t = threading.Thread(target=work)
    t.start()
    t.join(wait_s)
    return t


@pytest.mark.parametrize("ordered", [False, True], ids=["cuMemFree", "cuMemFreeAsync"])
def test_an_array_freed_while_a_launch_reads_its_arguments_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, ordered: bool) -> None:
    """Thread B frees a DeviceArray after thread A's launch has read its pointer, while A reads
    a later argument (a property: Python code, so another thread runs): A must not launch with
    the pointer the free gave back. Both paths: the C launcher reads the pointer again at the
    end under the lock free() takes and keeps that lock through cuLaunchKernel, as the Python
    path checks under it."""
    drv = StreamDriver()
    drv.cuMemAlloc = lambda n: (drv.OK, 0x880000)  # type: ignore[attr-defined]
    drv.cuMemFree = lambda ptr: (drv.calls.append(("free", ptr, None)), (drv.OK,))[1]  # type: ignore[attr-defined]
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv)
    stream = 0x5 if ordered else None
    warm = DeviceArray.empty(8, "f32", stream=stream)
    m.scale[1, 32, stream or 0](2.0, warm, FreeingArray(lambda: None))  # teaches C the kernel and types
    settle(path)
    m.scale[1, 32, stream or 0](2.0, warm, FreeingArray(lambda: None))
    assert paths(drv) == ["python", path]
    x = DeviceArray.empty(8, "f32", stream=stream)
    ptr = x.ptr
    drv.calls.clear()
    thread = None

    def free_in_b() -> None:
        nonlocal thread
        thread = in_thread(x.free, 5.0)

    with pytest.raises(TypeError) as info:
        m.scale[1, 32, stream or 0](2.0, x, FreeingArray(free_in_b))
    assert thread is not None and not thread.is_alive()
    assert str(info.value) in (
        "parameter 'x' of scale is a DeviceArray that was freed (DeviceArray.free()): its memory is gone",
        "parameter 'x' of scale is a DeviceArray that was freed (DeviceArray.free()) while the launch was "
        "being prepared: its memory is gone")
    assert ("free", ptr, stream) in drv.calls
    assert [c for c in drv.calls if c[0] == "launch"] == []  # nothing launched with the freed pointer


@pytest.mark.parametrize("call", ["subscript", "launch"])
def test_a_free_racing_a_launch_on_another_stream_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, call: str) -> None:
    """Thread B frees a stream-ordered DeviceArray (stream 5) while thread A's launch of it on
    stream 9 is inside cuLaunchKernel: B's cuMemFreeAsync must come after the event A records
    on stream 9 after the launch, and after stream 5's wait for that event. (The event was
    recorded after the launch returned, outside any lock: B freed in between, 25 of 25 times.)
    B is started from inside A's cuLaunchKernel and given 0.3 s: with the fix it cannot get
    through free() before A has noted its launch, whatever the timing."""
    drv = StreamDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv)
    warm = DeviceArray.empty(8, "f32", stream=0x5)
    m.scale[1, 32, 0x9](2.0, warm, FakeArray(8))
    m.scale[1, 32, 0x5](2.0, warm, FakeArray(8))
    settle(path)
    x = DeviceArray.empty(8, "f32", stream=0x5)
    ptr = x.ptr
    started: list[threading.Thread] = []
    python_launch = drv.cuLaunchKernel

    def launch_then_free(fn: Any, *rest: Any) -> tuple[Any]:
        if not started:
            started.append(in_thread(x.free, 0.3))  # B, while A is inside cuLaunchKernel
        return python_launch(fn, *rest)

    drv.cuLaunchKernel = launch_then_free  # type: ignore[method-assign]
    drv.calls.clear()
    if call == "subscript":
        m.scale[1, 32, 0x9](2.0, x, FakeArray(8))  # the C launcher leaves another stream to Python
    else:
        m.scale.launch(2.0, x, FakeArray(8), grid=1, block=32, stream=0x9)
    started[0].join(5.0)
    assert not started[0].is_alive()
    calls = [c for c in drv.calls if c[0] != "alloc"]
    launch = calls.index(("launch", 0x9))
    record = next(i for i, c in enumerate(calls) if c[0] == "record" and c[2] == 0x9 and i > launch)
    event = calls[record][1]
    wait = calls.index(("wait", 0x5, event))
    assert launch < record < wait < calls.index(("free", ptr, 0x5)), calls


# ---------------------------------------------------------------------------------------------
# a context reset: what was loaded in the context is gone; the next launch loads it again


class ResettableDriver(CFakeDriver):
    """Contexts with ids (cuCtxGetId, also as a C entry point); ``reset()`` gives the current
    context a new id under the same handle and new function handles to what is loaded after.
    ``reset(destroy=True)`` is what cuDevicePrimaryCtxReset does on a GPU: the handle stays
    current, but the context is destroyed until the primary context is retained again."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = 1
        self.destroyed = False
        self.retained = 0
        self._c_ctx_id = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulonglong))(
            self._ctx_id_from_c)

    def reset(self, destroy: bool = False) -> None:
        self.generation += 1
        self.destroyed = destroy

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Any, int]:
        self.retained += 1
        self.destroyed = False
        return super().cuDevicePrimaryCtxRetain(dev)

    def _uid(self, ctx: int) -> int:
        return (ctx << 16) | self.generation

    def cuCtxGetId(self, ctx: Any) -> tuple[Any, Any]:
        if self.destroyed:
            return self.CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED, None
        return self.OK, self._uid(int(ctx))

    def _ctx_id_from_c(self, ctx: int | None, out: Any) -> int:
        if self.destroyed:
            return int(self.CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED)
        out[0] = self._uid(ctx or 0)
        return 0

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, Any]:
        assert not self.destroyed, "loaded into a destroyed context"
        return super().cuModuleLoadData(image)

    def _oxide_entry_points(self) -> tuple[int, ...]:
        return (*super()._oxide_entry_points(), ctypes.cast(self._c_ctx_id, ctypes.c_void_p).value or 0)

    def cuModuleGetFunction(self, mod: Any, name: bytes) -> tuple[Any, Any]:
        err, fn = super().cuModuleGetFunction(mod, name)
        if fn is None:
            return err, None
        handle = fn + 0x1000 * self.generation
        self.symbols[handle] = self.symbols[fn]
        return err, handle


@pytest.mark.parametrize("destroy", [False, True], ids=["new-id", "destroyed"])
def test_a_reset_context_gets_its_modules_and_error_record_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str,
                                                                 destroy: bool) -> None:
    drv = ResettableDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    launched_functions: list[int] = []
    original = drv._launch_from_c

    def launch_from_c(fn: int, *rest: Any) -> int:
        launched_functions.append(fn)
        return original(fn, *rest)

    drv._launch_from_c = launch_from_c  # type: ignore[method-assign]
    drv._c_launch = type(drv._c_launch)(launch_from_c)
    m = saxpy_module(tmp_path, drv, error_sites=SITES)
    x, out = FakeArray(8), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    m.scale[1, 32](2.0, x, out)
    assert len(drv.loaded) == 1 and len(drv.host_allocations) == 1
    old_record = record_words(drv)
    retained = drv.retained
    drv.reset(destroy)  # the module, its function and the record's registration are gone
    m.scale[1, 32](2.0, x, out)
    assert drv.retained == retained + destroy  # a destroyed primary context is retained again
    m.scale[1, 32](2.0, x, out)
    assert paths(drv) == ["python", path, "python", path]  # loaded again by Python, then C again
    assert len(drv.loaded) == 2 and len(drv.host_allocations) == 2  # a new module, a new record
    if path == "c":
        assert [fn >> 12 for fn in launched_functions] == [0xF + 1, 0xF + 2]  # never the old context's function
    assert [r.host_address for r in kernel_errors.watched_records()] == [ctypes.addressof(drv.host_allocations[1][0])]
    assert drv.global_value("module2", b"__oxide_error_ptr") == ctypes.addressof(drv.host_allocations[1][0]) + FakeDriver.DEVICE_OFFSET
    old_record[0] = 1  # the old context's record is no longer read (its context is gone)
    m.scale[1, 32](2.0, x, out)
    fail_on_device(drv, 1, 1, index=3, length=3)  # writes record 0: the old one
    fail_words = record_words(drv, 1)
    fail_words[0], fail_words[1], fail_words[2], fail_words[3], fail_words[4] = 1, 1, 1, 9, 8
    with pytest.raises(oxide.KernelError, match="with index 9 but length 8$"):
        m.scale[1, 32](2.0, x, out)


def test_a_reset_that_leaves_no_context_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """numba.cuda.close() resets the primary context and pops it: no context is current, and
    the primary context oxide retained before is destroyed. The next launch retains it again."""
    drv = ResettableDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv, error_sites=SITES)
    x, out = FakeArray(8), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    m.scale[1, 32](2.0, x, out)
    assert drv.retained == 1
    drv.reset(destroy=True)
    drv.ctx = 0
    m.scale[1, 32](2.0, x, out)
    m.scale[1, 32](2.0, x, out)
    assert (drv.retained, drv.ctx, len(drv.loaded)) == (2, 0xC0, 2)
    assert paths(drv) == ["python", path, "python", path]
    drv.reset(destroy=True)  # the same, found by an allocation first
    drv.ctx = 0
    monkeypatch.setattr(drv, "cuMemAlloc", lambda nbytes: (drv.OK, 0x5000), raising=False)
    assert DeviceArray.empty(4, "f32").ptr == 0x5000
    assert drv.retained == 3


def test_error_records_live_in_memory_oxide_owns(fake_driver: FakeDriver) -> None:
    """The driver never allocates a record (cuMemHostAlloc memory dies with its context, and a
    launch that read it then crashed the interpreter): oxide maps a page and registers it."""
    fake_driver.cuMemHostAlloc = None  # type: ignore[attr-defined]
    rec = kernel_errors.record_for_context(0xC0)
    buf, flags = fake_driver.host_allocations[0]
    assert rec.host_address == ctypes.addressof(buf) and rec.host_address % 4096 == 0
    assert list(rec.words) == [0] * 5


# ---------------------------------------------------------------------------------------------
# races between threads (both launch paths), reproduced with a tiny switch interval


@pytest.fixture
def fast_switching() -> Any:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


class SwitchingArray:
    """A CUDA array interface object whose interface is computed in Python and yields the GIL
    while it is read (as a producer library's property may): another thread runs meanwhile."""

    def __init__(self, ptr: int, stream: int | None) -> None:
        self._cai = {"version": 3, "shape": (8,), "typestr": "<f4", "data": (ptr, False), "strides": None,
                     "stream": stream}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        time.sleep(0)
        return self._cai


def test_threads_do_not_share_a_launch_stream(tmp_path: Path, c_driver: CFakeDriver, path: str, fast_switching: Any) -> None:
    """Thread A launches on stream 0xA arrays ordered on 0xA (no wait needed); thread B launches
    on stream 0xB arrays ordered on 0xA: each of B's launches must wait for 0xA. A launch
    stream kept outside the call (a static in the C launcher) let B compare with A's stream."""
    m = saxpy_module(tmp_path, c_driver)
    own = [SwitchingArray(0x1000 + 0x100 * i, 0xA) for i in range(3)]
    foreign = [SwitchingArray(0x8000 + 0x100 * i, 0xA) for i in range(3)]
    m.saxpy[1, 32, 0xA](1.0, *own)
    m.saxpy[1, 32, 0xB](1.0, *foreign)
    settle(path)
    c_driver.stream_order.clear()
    c_driver.launches.clear()
    n = 300

    def run(stream: int, arrays: list[SwitchingArray]) -> None:
        for _ in range(n):
            m.saxpy[1, 32, stream](1.0, *arrays)

    threads = [threading.Thread(target=run, args=(0xA, own)), threading.Thread(target=run, args=(0xB, foreign))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    on_b = [launch for launch in c_driver.launches if launch["stream"] == 0xB]
    assert len(on_b) == n
    assert [launch["path"] for launch in on_b] == ["python"] * n  # each waited: the Python path
    waits = [o for o in c_driver.stream_order if o[0] == "wait"]
    assert len(waits) == n and {o[1] for o in waits} == {0xB}


class EventDriver(FakeDriver):
    """Events with state: a wait captures what the event was last recorded on. Recording yields
    the GIL, so a thread between its record and its wait lets another thread record."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded: dict[int, int] = {}
        self.captured: list[tuple[int, int]] = []  # (waiting stream, stream it now waits for)
        self.n_events = 0
        self.lock = threading.Lock()

    def cuEventCreate(self, flags: Any) -> tuple[Any, int]:
        with self.lock:
            self.n_events += 1
            return self.OK, 0xE00 + self.n_events

    def cuEventRecord(self, event: int, stream: int) -> tuple[Any]:
        self.recorded[event] = stream
        time.sleep(0)
        return (self.OK,)

    def cuStreamWaitEvent(self, stream: int, event: int, flags: int) -> tuple[Any]:
        self.captured.append((stream, self.recorded[event]))
        return (self.OK,)


def test_threads_do_not_share_an_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_switching: Any) -> None:
    """Two threads ordering their launch streams after different producer streams: each wait
    must capture its own producer's record (one event per context, shared, did not)."""
    drv = EventDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv)
    n = 200

    def run(producer: int, consumer: int) -> None:
        arrays = [FakeArray(8, stream=producer) for _ in range(3)]
        for _ in range(n):
            m.saxpy[1, 32, consumer](1.0, *arrays)

    threads = [threading.Thread(target=run, args=(0x10 + k, 0x20 + k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(drv.captured) == 4 * n
    assert all(producer == consumer - 0x10 for consumer, producer in drv.captured)
    assert drv.n_events <= 4  # pooled: no event per wait


@pytest.mark.skipif(not launcher.ENABLED or not sys.platform.startswith("linux"), reason="needs the C launcher on Linux")
def test_the_gil_is_released_while_cuLaunchKernel_blocks(tmp_path: Path, c_driver: CFakeDriver) -> None:
    """cuLaunchKernel blocks when the launch queue is full. Stood in for by libc's usleep (the
    function handle is its first argument: 0.4 s), which runs without the GIL only if the
    launcher released it: meanwhile another Python thread keeps running."""
    m = saxpy_module(tmp_path, c_driver)
    x, out = FakeArray(8), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    usleep = ctypes.cast(ctypes.CDLL(None).usleep, ctypes.c_void_p).value
    assert usleep
    launcher._ext.set_driver(usleep, ctypes.cast(c_driver._c_ctx, ctypes.c_void_p).value)
    for variant in m.scale._dispatch.variants:
        for uid in variant.planned:
            m.scale._plan.set_function(variant.index, 0xC0, 400_000, 0, uid)  # usleep(400000)
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    start = time.perf_counter()
    m.scale[1, 32](2.0, x, out)  # usleep(400 ms), in C
    elapsed = time.perf_counter() - start
    done.set()
    ticker.join()
    assert elapsed >= 0.35
    during = [t for t in ticks if start <= t <= start + elapsed]
    assert len(during) >= 20, f"the other thread ran {len(during)} times in {elapsed:.2f} s"
    assert len(c_driver.launches) == 1  # the usleep launch went through C, not the fake driver


@pytest.mark.skipif(not launcher.ENABLED or not sys.platform.startswith("linux"), reason="needs the C launcher on Linux")
def test_a_launch_with_a_device_array_that_blocks_lets_other_threads_run(tmp_path: Path, c_driver: CFakeDriver) -> None:
    """cuLaunchKernel blocks on a full launch queue until the GPU drains it, and a host function
    (cuLaunchHostFunc) ahead in the queue that runs Python needs the GIL to finish. Stood in for by
    libc's sem_wait (the function handle, its first argument, is a semaphore) that only another
    Python thread posts: the C launcher kept the GIL through cuLaunchKernel when a DeviceArray was
    passed (for the ordering with free()), so this deadlocked (here: until the 5 s alarm
    interrupted sem_wait). It holds DeviceArray._uses_lock instead, as the Python path does: a
    free() in a third thread meanwhile returns only after the launch was queued."""
    import signal

    m = saxpy_module(tmp_path, c_driver)
    x, out = DeviceArray(0x1000, (8,), "f32"), FakeArray(8)
    m.scale[1, 32](2.0, x, out)
    m.scale[1, 32](2.0, x, out)
    assert len(c_driver.launches) == 2
    libc = ctypes.CDLL(None, use_errno=True)
    sem = ctypes.create_string_buffer(64)  # a sem_t is 32 bytes on x86-64 and aarch64 glibc
    assert libc.sem_init(sem, 0, 0) == 0
    sem_wait = ctypes.cast(libc.sem_wait, ctypes.c_void_p).value
    launcher._ext.set_driver(sem_wait, ctypes.cast(c_driver._c_ctx, ctypes.c_void_p).value)
    for variant in m.scale._dispatch.variants:
        for uid in variant.planned:
            m.scale._plan.set_function(variant.index, 0xC0, ctypes.addressof(sem), 0, uid)
    events: list[str] = []

    def post() -> None:  # Python code: runs only while the launching thread has let the GIL go
        time.sleep(0.2)
        events.append("post")
        libc.sem_post(sem)

    def free() -> None:
        time.sleep(0.05)
        x.free()
        events.append("freed")

    c_driver.cuMemFree = lambda ptr: (events.append("cuMemFree"), (c_driver.OK,))[1]  # type: ignore[attr-defined]
    threads = [threading.Thread(target=post), threading.Thread(target=free)]
    previous = signal.signal(signal.SIGALRM, lambda *a: None)  # interrupts sem_wait: EINTR, not a hang
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    try:
        for t in threads:
            t.start()
        m.scale[1, 32](2.0, x, out)  # sem_wait, in C: returns 0 (CUDA_SUCCESS) once posted
        events.append("launched")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        libc.sem_post(sem)
        for t in threads:
            t.join(5.0)
    assert sorted(events) == ["cuMemFree", "freed", "launched", "post"], events  # nothing timed out
    assert events.index("post") < events.index("cuMemFree"), events  # the free waited for the launch
    assert len(c_driver.launches) == 2  # the blocking launch went through C, not the fake driver


def test_stress_threads_with_producers_and_consumers(tmp_path: Path, c_driver: CFakeDriver, path: str, fast_switching: Any) -> None:
    """8 threads, each launching on its own stream and consuming what another stream produced
    (a stream-ordered DeviceArray and a CUDA array interface 'stream'), on one launch path:
    every consumer launch waits for its producer's stream, and every launch is recorded."""
    m = saxpy_module(tmp_path, c_driver)
    warm = SwitchingArray(0x50, 0x1)
    m.saxpy[1, 32, 0x1](1.0, warm, warm, FakeArray(8))
    m.saxpy[1, 32, 0x1](1.0, DeviceArray(0x60, (8,), "f32", owned=False), warm, FakeArray(8))
    settle(path)
    c_driver.launches.clear()
    c_driver.stream_order.clear()
    n, errors = 150, []

    def run(k: int) -> None:
        mine, producer = 0x100 + k, 0x100 + (k + 1) % 8
        try:
            for i in range(n):
                produced = (DeviceArray(0x9000 + k, (8,), "f32", owned=False, stream=producer) if i % 2
                            else SwitchingArray(0x9000 + k, producer))
                m.saxpy[1, 32, mine](1.0, produced, SwitchingArray(0x7000 + k, mine), FakeArray(8))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(c_driver.launches) == 8 * n
    waits = sorted(o[1] for o in c_driver.stream_order if o[0] == "wait")
    assert waits == sorted(0x100 + k for k in range(8) for _ in range(n))  # one wait per launch, by its stream
