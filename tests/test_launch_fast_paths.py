"""Calls the C launcher makes without a Python frame, to keep the launch overhead (#17) down, and
their fallbacks: autograd learns of a launch's writes in one call of ``torch._C._increment_version``
(what ``torch.autograd.graph.increment_version`` calls), per tensor where torch has no such
function; CuPy's current stream comes from ``cupy.cuda.get_current_stream`` called from C, through
``streams.cupy_current_stream`` where that call fails."""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oxide.runtime import launcher
from fakes import _fake_cupy

from test_runtime_soundness import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    CFakeDriver,
    _autograd_torch,
    c_driver,
    fresh_runtime,
    path,
    paths,
    saxpy_module,
    settle,
)


def test_one_bump_call_for_the_written_tensors(tmp_path: Path, c_driver: CFakeDriver, path: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _autograd_torch(monkeypatch)
    batches: list[tuple[int, ...]] = []

    def increment_version(tensors: Any) -> None:
        assert isinstance(tensors, tuple)  # what torch._C._increment_version takes from the C launcher
        batches.append(tuple(t.data_ptr() for t in tensors))

    c_module = types.ModuleType("torch._C")
    c_module._increment_version = increment_version  # type: ignore[attr-defined]
    c_module._cuda_getCurrentRawStream = lambda ordinal: 0  # type: ignore[attr-defined]  # the legacy stream
    torch._C = c_module
    monkeypatch.setitem(sys.modules, "torch._C", c_module)
    m = saxpy_module(tmp_path, c_driver)
    x = torch.Tensor(8, torch.float32, 0x1000)
    out = torch.Tensor(8, torch.float32, 0x2000)
    m.scale[1, 32](2.0, x, out)  # the Python path: increment_version per tensor
    settle(path)
    m.scale[1, 32](2.0, x, out)
    m.scale[1, 32](2.0, x, out)
    assert paths(c_driver) == ["python", path, path]
    if path == "c":
        assert torch.bumped == [0x2000] and batches == [(0x2000,), (0x2000,)]  # the input's version never
    else:
        assert torch.bumped == [0x2000] * 3 and batches == []


def test_a_failing_batch_bumps_one_by_one(tmp_path: Path, c_driver: CFakeDriver, path: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _autograd_torch(monkeypatch)

    def broken(tensors: Any) -> None:
        raise RuntimeError("not this torch")

    c_module = types.ModuleType("torch._C")
    c_module._increment_version = broken  # type: ignore[attr-defined]
    c_module._cuda_getCurrentRawStream = lambda ordinal: 0  # type: ignore[attr-defined]  # the legacy stream
    torch._C = c_module
    monkeypatch.setitem(sys.modules, "torch._C", c_module)
    m = saxpy_module(tmp_path, c_driver)
    x = torch.Tensor(8, torch.float32, 0x1000)
    out = torch.Tensor(8, torch.float32, 0x2000)
    m.scale[1, 32](2.0, x, out)
    settle(path)
    m.scale[1, 32](2.0, x, out)
    assert paths(c_driver) == ["python", path]
    assert torch.bumped == [0x2000, 0x2000]


@pytest.mark.parametrize("device_argument", [True, False])
def test_cupys_current_stream_read_from_c(tmp_path: Path, c_driver: CFakeDriver, path: str, device_argument: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cupy = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    reads: list[Any] = []

    def get_current_stream(*ordinal: int) -> Any:
        if ordinal and not device_argument:
            raise TypeError("get_current_stream() takes no arguments")  # an older CuPy
        reads.append(ordinal)
        return types.SimpleNamespace(ptr=cupy.current_streams.get(0, 0))

    cupy.cuda.get_current_stream = get_current_stream
    cupy.cuda.Device = lambda ordinal: _NoDevice()
    python_reads: list[int] = []
    getter = launcher._ext.set_stream_getters if launcher.ENABLED else None
    m = saxpy_module(tmp_path, c_driver)
    x, y, out = (cupy.ndarray(8, np.float32, 0x2000 + 0x100 * i) for i in range(3))
    m.saxpy[1, 32](2.0, x, y, out)
    settle(path)
    if getter is not None and path == "c":
        from oxide.runtime import streams

        def counted(ordinal: int) -> int:
            python_reads.append(ordinal)
            return streams.cupy_current_stream(ordinal)

        getter(None, counted)  # what Python's getter is asked, beside the C read
    reads.clear()
    for s in (0x5100, 0x5200):
        cupy.current_streams[0] = s
        m.saxpy[1, 32](2.0, x, y, out)
        assert c_driver.launches[-1]["stream"] == s and paths(c_driver)[-1] == path
    if path == "c":
        # with the device argument, C's own call; without, C's call fails and Python's getter reads it
        assert python_reads == ([] if device_argument else [0, 0])
        assert reads == ([(0,), (0,)] if device_argument else [(), ()])


class _NoDevice:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
