"""The stream a launch takes when it is given none (#17): PyTorch's current stream for tensors,
CuPy's for CuPy arrays, PyTorch's when both are passed, the legacy default stream otherwise; a
given stream always wins. Each on the C and the Python launch path, with the fake driver and
the fake torch/CuPy of tests/fakes.py (the GPU side is in test_framework_streams_gpu.py)."""
from __future__ import annotations

import ctypes
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import oxide
from oxide.runtime import launcher, streams
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    CFakeDriver,
    FakeArray,
    _Exchange,
    _fake_cupy,
    _fake_torch,
    c_driver,
    fresh_runtime,
    paths,
)
from test_runtime_soundness import path, saxpy_module, settle  # noqa: F401


@pytest.fixture
def libs(monkeypatch: pytest.MonkeyPatch) -> tuple[types.ModuleType, types.ModuleType]:
    torch, cupy = _fake_torch(), _fake_cupy()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return torch, cupy


def tensors(torch: Any, base: int) -> tuple[Any, Any, Any]:
    return tuple(torch.Tensor(8, torch.float32, base + 0x100 * i) for i in range(3))  # type: ignore[return-value]


def test_torch_tensors_take_torchs_current_stream(tmp_path: Path, c_driver: CFakeDriver, libs: Any, path: str) -> None:
    """As inside ``with torch.cuda.stream(s):``: each launch reads the stream current then."""
    torch, _ = libs
    m = saxpy_module(tmp_path, c_driver)
    x, y, out = tensors(torch, 0x1000)
    m.saxpy[1, 32](2.0, x, y, out)  # the first launch: Python's, on the default stream
    settle(path)
    assert c_driver.launches[-1]["stream"] == 0
    for s in (0xAB00, 0xCD00, 0):
        torch.current_streams[0] = s
        m.saxpy[1, 32](2.0, x, y, out)
        assert c_driver.launches[-1]["stream"] == s
        assert paths(c_driver)[-1] == path
    torch.current_streams[0] = 0xAB00
    m.saxpy[1, 32, 0x77](2.0, x, y, out)  # a given stream wins
    assert c_driver.launches[-1]["stream"] == 0x77 and paths(c_driver)[-1] == path
    m.saxpy.launch(2.0, x, y, out, grid=1, block=32)
    assert c_driver.launches[-1]["stream"] == 0xAB00


def test_cupy_arrays_take_cupys_current_stream(tmp_path: Path, c_driver: CFakeDriver, libs: Any, path: str) -> None:
    _, cupy = libs
    m = saxpy_module(tmp_path, c_driver)
    x, y, out = (cupy.ndarray(8, np.float32, 0x2000 + 0x100 * i) for i in range(3))
    m.saxpy[1, 32](2.0, x, y, out)
    settle(path)
    for s in (0x5100, 0x5200):
        cupy.current_streams[0] = s
        m.saxpy[1, 32](2.0, x, y, out)
        assert c_driver.launches[-1]["stream"] == s and paths(c_driver)[-1] == path


def test_mixed_arguments_take_torchs_stream(tmp_path: Path, c_driver: CFakeDriver, libs: Any, path: str) -> None:
    """PyTorch's current stream wins over CuPy's, wherever the tensor is in the arguments."""
    torch, cupy = libs
    m = saxpy_module(tmp_path, c_driver)
    torch.current_streams[0], cupy.current_streams[0] = 0x7000, 0xC000
    c = cupy.ndarray(8, np.float32, 0x3000)
    t, out = torch.Tensor(8, torch.float32, 0x3100), torch.Tensor(8, torch.float32, 0x3200)
    for _ in range(2):
        m.saxpy[1, 32](2.0, c, t, out)
        settle(path)
        assert c_driver.launches[-1]["stream"] == 0x7000
    assert paths(c_driver) == ["python", path]


def test_other_arrays_take_the_legacy_default_stream(tmp_path: Path, c_driver: CFakeDriver, libs: Any, path: str) -> None:
    torch, _ = libs
    torch.current_streams[0] = 0x7000  # imported, but no tensor among the arguments
    m = saxpy_module(tmp_path, c_driver)
    x, y, out = FakeArray(8, ptr=0x4000), FakeArray(8, ptr=0x4100), FakeArray(8, ptr=0x4200)
    d = oxide.runtime.DeviceArray(0x4300, (8,), "f32", owned=False)
    for _ in range(2):
        m.saxpy[1, 32](2.0, x, y, out)
        settle(path)
        m.saxpy[1, 32](2.0, x, y, d)
    assert [launch["stream"] for launch in c_driver.launches] == [0, 0, 0, 0]
    assert paths(c_driver)[-1] == path


def test_a_cuda_array_interface_stream_is_waited_for(tmp_path: Path, c_driver: CFakeDriver, libs: Any) -> None:
    """An array whose interface names another stream than the framework's: the launch (on
    PyTorch's current stream) waits for it, as with a given stream."""
    torch, _ = libs
    m = saxpy_module(tmp_path, c_driver)
    torch.current_streams[0] = 0x7000
    t, out = torch.Tensor(8, torch.float32, 0x5000), torch.Tensor(8, torch.float32, 0x5100)
    other = FakeArray(8, ptr=0x5200, stream=0x9000)
    waits: list[tuple[int, int]] = []
    from oxide.runtime import device

    original = device.stream_wait
    device.stream_wait = lambda stream, producer, uid=None: waits.append((stream, producer))  # type: ignore[assignment]
    try:
        for _ in range(2):
            m.saxpy[1, 32](2.0, t, other, out)
    finally:
        device.stream_wait = original  # type: ignore[assignment]
    assert waits == [(0x7000, 0x9000)] * 2
    assert paths(c_driver) == ["python", "python"]  # the C path leaves waits to Python
    assert [launch["stream"] for launch in c_driver.launches] == [0x7000, 0x7000]


_CURRENT_WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


@pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")
def test_c_launcher_reads_the_stream_through_the_dlpack_exchange_api(
    tmp_path: Path, c_driver: CFakeDriver, libs: Any
) -> None:
    """PyTorch >= 2.10 publishes ``current_work_stream`` in its DLPack exchange API: the C path
    calls it (no Python) instead of torch._C._cuda_getCurrentRawStream."""
    torch, _ = libs
    asked: list[tuple[int, int]] = []

    def current(device_type: int, device_id: int, out: Any) -> int:
        asked.append((device_type, device_id))
        out[0] = 0xE100
        return 0

    exchange = _Exchange()
    callback = _CURRENT_WORK_STREAM(current)
    exchange.api.current_work_stream = ctypes.cast(callback, ctypes.c_void_p).value
    torch.Tensor.__dlpack_c_exchange_api__ = exchange.capsule
    torch._C._cuda_getCurrentRawStream = lambda ordinal: pytest.fail("the C path called the Python getter")
    m = saxpy_module(tmp_path, c_driver)
    x, y, out = tensors(torch, 0x6000)
    streams_seen = []
    original = streams.torch_current_stream
    streams.torch_current_stream = lambda ordinal: streams_seen.append(ordinal) or 0xE100  # type: ignore[assignment, func-returns-value]
    try:
        for _ in range(3):
            m.saxpy[1, 32](2.0, x, y, out)
    finally:
        streams.torch_current_stream = original  # type: ignore[assignment]
    assert paths(c_driver) == ["python", "c", "c"]
    assert [launch["stream"] for launch in c_driver.launches] == [0xE100] * 3
    assert asked == [(2, 0), (2, 0)] and streams_seen == [0]
    del callback


def test_framework_of_follows_the_rule(libs: Any) -> None:
    torch, cupy = libs
    t = torch.Tensor(8, torch.float32, 0x100)
    t.device_index = 3
    c = cupy.ndarray(8, np.float32, 0x200)
    c.device = types.SimpleNamespace(id=2)
    assert streams.framework_of([c, t]) == ("torch", 3)
    assert streams.framework_of([FakeArray(8), c]) == ("cupy", 2)
    assert streams.framework_of([FakeArray(8)]) is None
    torch.current_streams[3], cupy.current_streams[2] = 0x33, 0x22
    assert streams.current_stream("torch", 3) == 0x33 and streams.current_stream("cupy", 2) == 0x22
