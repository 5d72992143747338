"""Device intrinsics. The compiler recognises these by name; calling them on the host is an error."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, NoReturn

from .types import ThreadIndex

__all__ = ["thread", "block", "grid", "unsafe"]


def _device_only(name: str) -> NoReturn:
    raise RuntimeError(f"oxide.{name}() exists only inside a kernel or device function compiled by oxide")


class _Dim3Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def x(self) -> int:
        _device_only(f"{self._name}.x")

    @property
    def y(self) -> int:
        _device_only(f"{self._name}.y")

    @property
    def z(self) -> int:
        _device_only(f"{self._name}.z")


class _Thread:
    idx = _Dim3Marker("thread.idx")

    @staticmethod
    def index_1d() -> ThreadIndex:
        """blockIdx.x * blockDim.x + threadIdx.x, as the calling thread's ThreadIndex."""
        _device_only("thread.index_1d")


class _Block:
    idx = _Dim3Marker("block.idx")
    dim = _Dim3Marker("block.dim")

    @staticmethod
    def sync() -> None:
        _device_only("block.sync")


class _Grid:
    dim = _Dim3Marker("grid.dim")


thread = _Thread()
block = _Block()
grid = _Grid()


@contextmanager
def unsafe() -> Iterator[None]:
    """Marks code allowed to write a ``MutSlice`` anywhere."""
    yield
