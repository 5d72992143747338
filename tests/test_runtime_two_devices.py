"""Two GPUs on the fake driver (issue 32, the CPU part): code loaded once per device's context
and each launch given the function of its own context, a launch's stream taken per device,
stream-ordered DeviceArrays made on the device that is current, and arrays on the wrong device
refused naming the parameter and both devices; on both launch paths.

The fake driver's device d has the primary context 0xC0 (d = 0) or 0xC00 + d; a pointer's
device is what ``pointer_devices`` says (cuPointerGetAttribute), a fake torch tensor's what its
``device_index`` says (as ``get_device()``, which the C launcher reads).
"""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

import oxide
from fakes import SAXPY_KERNELS, CFakeDriver, _fake_torch, make_module, slot_types
from fakes import fresh_runtime  # noqa: F401  (autouse)
from oxide.runtime import device, launcher

__all__: list[str] = []

DeviceArray = oxide.runtime.DeviceArray
CTX = {0: 0xC0, 1: 0xC01}  # the fake driver's primary contexts


class TwoDevices(CFakeDriver):
    """Two devices; each module load is noted with the context current then, and each
    function handle is its context's own (a CUfunction of one context is no good in another)."""

    devices = 2

    def __init__(self) -> None:
        super().__init__()
        self.pointer_devices = {}
        self.loaded_in: list[int] = []  # the current context at each cuModuleLoadData
        self.modules: dict[Any, int] = {}  # module -> its context
        self.function_context: dict[int, int] = {}  # function handle -> its module's context
        self.used: list[tuple[int, int]] = []  # (function handle, current context) of each launch
        self.next_ptr = 0x100000

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, Any]:
        err, module = super().cuModuleLoadData(image)
        self.loaded_in.append(self.ctx)
        self.modules[module] = self.ctx
        return err, module

    def cuModuleGetFunction(self, mod: Any, name: bytes) -> tuple[Any, Any]:
        err, fn = super().cuModuleGetFunction(mod, name)
        if fn is None:
            return err, None
        handle = fn + 0x100000 * self.modules[mod]  # the function in this module's context
        self.symbols[handle] = self.symbols[fn]
        self.function_context[handle] = self.modules[mod]
        return err, handle

    def cuLaunchKernel(self, fn: Any, *rest: Any) -> tuple[Any]:
        self.used.append((int(fn), self.ctx))
        return super().cuLaunchKernel(fn, *rest)

    def _launch_from_c(self, fn: int, *rest: Any) -> int:
        self.used.append((fn, self.ctx))
        return super()._launch_from_c(fn, *rest)

    def cuMemAllocAsync(self, nbytes: int, stream: int) -> tuple[Any, int]:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000
        self.pointer_devices[ptr] = self.current_device
        return self.OK, ptr

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, int]:
        return self.cuMemAllocAsync(nbytes, 0)

    def cuMemFree(self, ptr: int) -> tuple[Any]:
        return (self.OK,)

    def cuMemFreeAsync(self, ptr: int, stream: int) -> tuple[Any]:
        return (self.OK,)

    def make_current(self, ordinal: int) -> None:
        """What torch.cuda.set_device(ordinal) does to the driver: its primary context current."""
        self.cuCtxSetCurrent(CTX[ordinal])


@pytest.fixture
def drv(monkeypatch: pytest.MonkeyPatch) -> TwoDevices:
    d = TwoDevices()
    monkeypatch.setattr(device, "_import_bindings", lambda: d)
    return d


@pytest.fixture(params=["c", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "c" and not launcher.ENABLED:
        pytest.skip("the C launcher is not built (or OXIDE_PURE_PYTHON=1)")
    if request.param == "python":
        monkeypatch.setattr(launcher, "bind_driver", lambda drv: False)  # the C launcher never learns
    return str(request.param)


@pytest.fixture
def torch(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    fake = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


def saxpy(tmp_path: Path, drv: TwoDevices) -> types.ModuleType:
    m = make_module(tmp_path)
    drv.signatures.update({k.symbol: slot_types(k.params) for k in SAXPY_KERNELS})
    return m


def tensors(torch: types.ModuleType, drv: TwoDevices, ordinal: int, base: int) -> list[Any]:
    out = []
    for i in range(3):
        t = torch.Tensor(8, torch.float32, base + 0x1000 * i)  # type: ignore[attr-defined]
        t.device_index = ordinal
        drv.pointer_devices[base + 0x1000 * i] = ordinal
        out.append(t)
    return out


def test_code_is_loaded_per_device_and_each_launch_takes_its_contexts_function(
        tmp_path: Path, drv: TwoDevices, torch: types.ModuleType, path: str) -> None:
    m = saxpy(tmp_path, drv)
    on0, on1 = tensors(torch, drv, 0, 0x10000), tensors(torch, drv, 1, 0x90000)
    for _ in range(3):  # alternating devices, each current in turn (explicit stream 0)
        drv.make_current(0)
        m.saxpy[1, 32, 0](2.0, *on0)
        drv.make_current(1)
        m.saxpy[1, 32, 0](2.0, *on1)
    assert drv.loaded_in == [CTX[0], CTX[1]]  # once per device's context, not per launch
    assert len(drv.used) == 6
    for fn, ctx in drv.used:
        assert drv.function_context[fn] == ctx  # never a function of the other context
    assert [ctx for _, ctx in drv.used] == [CTX[0], CTX[1]] * 3
    expected = ["python", "python", "c", "c", "c", "c"] if path == "c" else ["python"] * 6
    assert [launch["path"] for launch in drv.launches] == expected
    assert [launch["values"][1] for launch in drv.launches] == [0x10000, 0x90000] * 3


def test_a_launch_without_a_stream_takes_each_devices_current_stream(
        tmp_path: Path, drv: TwoDevices, torch: types.ModuleType, path: str) -> None:
    """PyTorch's current stream is per device: a launch of cuda:1's tensors runs in cuda:1's
    context on cuda:1's current stream, whichever device is current, and leaves the current
    context as it was."""
    m = saxpy(tmp_path, drv)
    torch.current_streams.update({0: 0x5000, 1: 0x5001})  # type: ignore[attr-defined]
    on0, on1 = tensors(torch, drv, 0, 0x10000), tensors(torch, drv, 1, 0x90000)
    drv.make_current(0)
    for _ in range(2):
        m.saxpy[1, 32](2.0, *on0)
        m.saxpy[1, 32](2.0, *on1)
        assert (drv.ctx, drv.current_device) == (CTX[0], 0)
    drv.make_current(1)
    for _ in range(2):
        m.saxpy[1, 32](2.0, *on1)
        m.saxpy[1, 32](2.0, *on0)
        assert (drv.ctx, drv.current_device) == (CTX[1], 1)
    assert [(launch["ctx"], launch["stream"]) for launch in drv.launches] == [
        (CTX[0], 0x5000), (CTX[1], 0x5001)] * 2 + [(CTX[1], 0x5001), (CTX[0], 0x5000)] * 2
    for fn, ctx in drv.used:
        assert drv.function_context[fn] == ctx
    if path == "c":  # the current device's tensors take the C path once it knows that context
        assert [launch["path"] for launch in drv.launches] == ["python", "python"] + ["c", "python"] * 3


def test_device_arrays_are_made_on_the_current_device_and_refused_on_another(
        tmp_path: Path, drv: TwoDevices, path: str) -> None:
    """A DeviceArray (plain, or stream-ordered on a stream of that device) belongs to the device
    current when it was made. Launched while another device is current it is refused, naming
    the parameter and both devices, and nothing is launched; arrays of two devices are refused
    naming each. Made current, the device launches it."""
    m = saxpy(tmp_path, drv)
    drv.make_current(1)
    x1 = DeviceArray.empty(8, "f32")
    y1 = DeviceArray.empty(8, "f32", stream=0x7001)
    out1 = DeviceArray.empty(8, "f32", stream=0x7001)
    assert (x1.device, y1.device, out1.device) == (1, 1, 1)
    drv.make_current(0)
    x0 = DeviceArray.empty(8, "f32")
    out0 = DeviceArray.empty(8, "f32")
    assert (x0.device, out0.device) == (0, 0)
    for _ in range(2):
        m.saxpy[1, 32, 0](2.0, x0, x0, out0)
    before = len(drv.launches)
    for _ in range(2):
        with pytest.raises(TypeError) as info:
            m.saxpy[1, 32, 0x7001](2.0, x1, y1, out1)
        assert str(info.value) == (
            "parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0, where the kernel would run; "
            "make cuda:1 current first (torch.cuda.set_device(1), cupy.cuda.Device(1).use(), ...)")
        with pytest.raises(TypeError) as info:
            m.saxpy[1, 32, 0](2.0, x0, x1, out0)
        assert str(info.value) == ("the arrays passed to saxpy are on different GPUs ('x' on cuda:0, 'y' on cuda:1, "
                                   "'out' on cuda:0); put them on one device")
    assert len(drv.launches) == before
    drv.make_current(1)
    m.saxpy[1, 32, 0x7001](2.0, x1, y1, out1)
    assert (drv.launches[-1]["ctx"], drv.launches[-1]["stream"]) == (CTX[1], 0x7001)
    assert drv.function_context[drv.used[-1][0]] == CTX[1]
    assert drv.loaded_in == [CTX[0], CTX[1]]
