"""The one array-kind classifier (oxide/runtime/array_kinds.py) and the four places that ask it:
the readers (arrays.view_of), the C launcher's registration (launcher.array_kind), the framework
whose stream a launch takes (streams.framework_of) and the stream order (stream_order)."""
from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from fakes import FakeArray, FakeDLPack, _fake_cupy, _fake_torch, fresh_runtime  # noqa: F401
from oxide.abi.launcher import ARRAY_KINDS
from oxide.runtime import array_kinds, arrays, launcher, stream_order, streams
from oxide.runtime.device_array import DeviceArray

__all__: list[str] = []


@pytest.fixture
def libs(monkeypatch: pytest.MonkeyPatch) -> tuple[types.ModuleType, types.ModuleType]:
    torch, cupy = _fake_torch(), _fake_cupy()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return torch, cupy


def _device_array(stream: int | None = None) -> DeviceArray:
    a = DeviceArray.__new__(DeviceArray)  # no CUDA here: the fields a launch reads
    a.ptr, a.shape, a.dtype, a._stream, a._freed = 0x7F00AA000000, (8,), np.dtype(np.float32), stream, False
    a._host = False  # GPU memory (the CPU device's DeviceArrays are host memory)
    return a


def test_each_kind_is_recognised_in_the_readers_order(libs: Any) -> None:
    torch, cupy = libs
    cases = [
        (_device_array(), "device_array"),
        (torch.Tensor(8, torch.float32, 0x100), "torch"),
        (cupy.ndarray(8, np.float32, 0x200), "cupy"),
        (FakeArray(8), "cai"),
        (FakeDLPack((8,)), "dlpack"),
        (np.zeros(3), "host"),  # host memory: read on the CPU device; on the GPU its reader says how to copy it
        (object(), None),
        (3.0, None),
    ]
    for obj, kind in cases:
        assert array_kinds.array_kind(obj) == kind, type(obj)
        assert launcher.array_kind(obj) == ARRAY_KINDS.get(kind or "", 0)  # DLPack-only: the Python path
        assert array_kinds.framework_kind(obj) == (kind if kind in ("torch", "cupy") else None)


def test_a_library_not_imported_has_no_arrays(monkeypatch: pytest.MonkeyPatch, libs: Any) -> None:
    torch, _ = libs
    t = torch.Tensor(8, torch.float32, 0x100)
    monkeypatch.delitem(sys.modules, "torch")
    assert array_kinds.array_kind(t) is None
    assert streams.framework_of([t]) is None


def test_a_failing_interface_is_the_interfaces_reader_to_explain() -> None:
    class Broken:
        @property
        def __cuda_array_interface__(self) -> Any:
            raise RuntimeError("cannot export a tensor that requires grad")

    assert array_kinds.array_kind(Broken()) == "cai"
    with pytest.raises(TypeError, match="reading __cuda_array_interface__ of a .*Broken failed: cannot export"):
        arrays.view_of(Broken())


def test_the_readers_the_streams_and_the_stream_order_agree(libs: Any) -> None:
    torch, cupy = libs
    t = torch.Tensor(8, torch.float32, 0x100)
    c = cupy.ndarray(8, np.float32, 0x200)
    d = _device_array(stream=0x5A)
    a = FakeArray(8, stream=0x77)
    assert arrays.view_of(d).ptr == d.ptr and arrays.view_of(a).length == 8
    assert streams.framework_of([d, a, c, t]) == ("torch", 0) and streams.framework_of([d, a, c])[0] == "cupy"
    assert streams.framework_of([d, a]) is None
    owners = [types.SimpleNamespace(owner=x) for x in (t, c, d, a)]
    # torch and CuPy carry no stream; the DeviceArray's and the interface's are waited for
    assert stream_order.producer_streams(owners, 0) == {0x5A, 0x77}
    assert stream_order.producer_streams(owners, 0x77) == {0x5A}
