"""sample's operations on CUDA arrays: PyTorch tensors, CuPy arrays, ``oxide.runtime.DeviceArray``.

Each takes C-contiguous arrays on the GPU, checks their shape and dtype (``TypeError`` /
``ValueError`` naming the argument), returns a new array of the caller's own library, and is
queued on the default stream like any oxide launch (synchronize before timing).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sample import kernels
from sample.arrays import describe, empty_like, flat, zeros_like

__all__ = ["gelu", "softmax", "histogram", "dropout", "blur", "saxpy", "NeedsGpuError"]


class NeedsGpuError(RuntimeError):
    """An operation that cannot run on oxide's CPU device (it launches from C++ host code)."""

_F32 = np.dtype(np.float32)
_BLOCK = 256


def _need(name: str, a: Any, dtype: np.dtype[Any], ndim: int | None = None) -> tuple[int, ...]:
    info = describe(a, name)
    if info.dtype != dtype:
        raise TypeError(f"{name} must be {dtype.name}, got {info.dtype.name}")
    if ndim is not None and len(info.shape) != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {info.shape}")
    return info.shape


def _blocks(n: int) -> int:
    return max(1, (n + _BLOCK - 1) // _BLOCK)


def gelu(x: Any, *, impl: str = "python") -> Any:
    """GELU (tanh approximation) of a float32 array of any shape, elementwise.

    ``impl`` says which code runs: "python" (the Python kernel ``gelu_forward``, calling the C++
    ``fast_tanh``), "cpp" (the C++ kernel ``sample_gelu_cpp``, calling the Python ``gelu``), or
    "native" (the Python kernel launched from C++ host code, ``sample._native``).
    """
    shape = _need("x", x, _F32)
    out = empty_like(x, shape, _F32)
    n = int(np.prod(shape))
    if n == 0:
        return out
    fx, fout = flat(x), flat(out)
    if impl == "python":
        kernels.gelu_forward[_blocks(n), _BLOCK](fx, fout)
    elif impl == "cpp":
        kernels.gelu_cpp[_blocks(n), _BLOCK](fx, fout)
    elif impl == "native":
        from sample import _native  # a pybind11 module built by CMake (absent in a source checkout)
        from sample.arrays import on_cpu_device

        if on_cpu_device():
            raise NeedsGpuError("gelu(impl='native') launches from C++ host code (oxide/launch.hpp), which needs a "
                               "GPU: the CPU device runs launches made from Python")

        cai = fx.__cuda_array_interface__, fout.__cuda_array_interface__
        _native.gelu(int(cai[0]["data"][0]), int(cai[1]["data"][0]), n, 0)
    else:
        raise ValueError(f"impl must be 'python', 'cpp' or 'native', got {impl!r}")
    return out


def softmax(x: Any) -> Any:
    """Softmax of each row of a 2-D float32 array (rows, cols), cols >= 1."""
    rows, cols = _need("x", x, _F32, ndim=2)
    if cols == 0:
        raise ValueError("x must have at least one column")
    if cols > 2**31 - 1:
        raise ValueError(f"x has {cols} columns; at most 2**31 - 1")
    out = empty_like(x, (rows, cols), _F32)
    if rows:
        kernels.softmax_rows[rows, kernels.SOFTMAX_THREADS](flat(x), np.int32(cols), flat(out))
    return out


def histogram(data: Any) -> Any:
    """Counts of each value 0..255 of a uint8 array of any shape: an int32 array of 256."""
    shape = _need("data", data, np.dtype(np.uint8))
    hist = zeros_like(data, (kernels.HISTOGRAM_BINS,), np.dtype(np.int32))
    n = int(np.prod(shape))
    if n:
        kernels.histogram256[min(_blocks(n), 1024), _BLOCK](flat(data), hist)
    return hist


def dropout(x: Any, p: float, seed: int) -> Any:
    """Inverted dropout of a float32 array: each element is zeroed with probability ``p`` and
    the others scaled by 1 / (1 - p). The mask depends only on ``seed`` and the element's flat
    index (cuRAND Philox), so a call is reproducible."""
    shape = _need("x", x, _F32)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p must be in [0, 1), got {p!r}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed!r}")
    out = empty_like(x, shape, _F32)
    n = int(np.prod(shape))
    if n:
        scale = np.float32(1.0 / (1.0 - p))
        kernels.dropout_forward[_blocks(n), _BLOCK](flat(x), np.float32(p), scale, np.uint64(seed), flat(out))
    return out


def blur(image: Any) -> Any:
    """3x3 box blur of a 2-D float32 image (rows, cols); edge pixels repeat outward."""
    rows, cols = _need("image", image, _F32, ndim=2)
    if rows > 2**31 - 1 or cols > 2**31 - 1:
        raise ValueError(f"image is {rows}x{cols}; each side at most 2**31 - 1")
    out = empty_like(image, (rows, cols), _F32)
    if rows and cols:
        grid = ((cols + 15) // 16, (rows + 15) // 16)
        kernels.box_blur3[grid, (16, 16)](flat(image), np.int32(rows), np.int32(cols), flat(out))
    return out


def saxpy(a: float, x: Any, y: Any) -> Any:
    """a * x + y for float32 or float64 arrays of one shape."""
    info = describe(x, "x")
    if info.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"x must be float32 or float64, got {info.dtype.name}")
    if _need("y", y, info.dtype) != info.shape:
        raise ValueError(f"x and y differ in shape: {info.shape} and {describe(y, 'y').shape}")
    out = empty_like(x, info.shape, info.dtype)
    n = int(np.prod(info.shape))
    if n:
        kernels.saxpy[_blocks(n), _BLOCK](info.dtype.type(a), flat(x), flat(y), flat(out))
    return out
