"""Device intrinsics. The compiler recognises these by name; calling them on the host is an error."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, NoReturn

from .types import ThreadIndex

__all__ = ["thread", "block", "grid", "warp", "shared", "local", "atomic", "math", "fence", "unsafe", "static_range"]


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

    @staticmethod
    def index_2d() -> tuple[ThreadIndex, ThreadIndex]:
        """(row, col): the y and x global indices of the calling thread."""
        _device_only("thread.index_2d")


class _Block:
    idx = _Dim3Marker("block.idx")
    dim = _Dim3Marker("block.dim")

    @staticmethod
    def sync() -> None:
        _device_only("block.sync")


class _Grid:
    dim = _Dim3Marker("grid.dim")


class _Warp:
    """Warp-level operations (32 lanes). Shuffles and votes use the full mask."""

    def __getattr__(self, name: str) -> Any:
        if name in ("lane", "id", "sync", "all", "any", "ballot", "match_any", "shfl_idx", "shfl_up",
                    "shfl_down", "shfl_xor", "reduce_sum", "reduce_min", "reduce_max"):
            return lambda *a, **k: _device_only(f"warp.{name}")
        raise AttributeError(name)


class _Space:
    """``shared.array(shape, dtype)`` / ``shared.dynamic(dtype)`` / ``local.array(shape, dtype)``."""

    def __init__(self, name: str, ops: tuple[str, ...]) -> None:
        self._name, self._ops = name, ops

    def __getattr__(self, name: str) -> Any:
        if name in self._ops:
            return lambda *a, **k: _device_only(f"{self._name}.{name}")
        raise AttributeError(name)


thread = _Thread()
warp = _Warp()
shared = _Space("shared", ("array", "dynamic"))
local = _Space("local", ("array",))
atomic = _Space("atomic", ("add", "sub", "min", "max", "exch", "cas", "and_", "or_", "xor", "inc", "dec"))
math = _Space("math", ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "tanh",
                       "erf", "abs", "floor", "ceil", "trunc", "round", "pow", "min", "max", "atan2",
                       "fmod", "fma", "isnan", "isinf", "isfinite"))
fence = _Space("fence", ("block", "device", "system"))


def static_range(*args: int) -> range:
    """A range the compiler unrolls completely; its bounds must be compile-time constants."""
    return range(*args)
block = _Block()
grid = _Grid()


@contextmanager
def unsafe() -> Iterator[None]:
    """Marks code allowed to write a ``MutSlice`` anywhere."""
    yield
