"""The C launcher tells autograd of a launch's writes in one call of ``torch._C._increment_version``
(the call ``torch.autograd.graph.increment_version`` makes, without its Python frame), and falls
back to ``increment_version`` per tensor where torch has no such function."""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

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
