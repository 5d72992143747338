"""``python -m sample``: runs the precompiled saxpy kernel for f32 and f64 and checks every
element against a float64 NumPy reference.

Exit status: 0 when every element matches, 1 on a mismatch, 2 when there is no usable GPU.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

N = 1_000_003  # not a multiple of the block size: the last block has idle threads
BLOCK = 256
A = 2.0


@dataclass(frozen=True)
class ArrayBackend:
    """How to move NumPy arrays to the GPU and back with whatever library is installed."""

    name: str
    to_device: Callable[[np.ndarray], Any]
    to_host: Callable[[Any], np.ndarray]


def _oxide_backend() -> ArrayBackend | None:
    try:
        from oxide.runtime import DeviceArray
    except ImportError:
        return None
    return ArrayBackend("oxide.runtime.DeviceArray", DeviceArray.from_numpy, lambda a: a.to_numpy())


def _torch_backend() -> ArrayBackend | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return ArrayBackend(
        "torch", lambda a: torch.from_numpy(a).to("cuda"), lambda t: t.cpu().numpy()
    )


def _cupy_backend() -> ArrayBackend | None:
    try:
        import cupy
    except ImportError:
        return None
    return ArrayBackend("cupy", cupy.asarray, cupy.asnumpy)


def array_backend() -> ArrayBackend | None:
    for find in (_oxide_backend, _torch_backend, _cupy_backend):
        backend = find()
        if backend is not None:
            return backend
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def gpu_unavailable_reason() -> str | None:
    """Why no kernel can run here, or None when the CUDA driver finds a device."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        return f"cuda-bindings is not installed ({exc})"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # libcuda.so itself is missing: no NVIDIA driver on this machine
        return _first_line(exc)
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {err.name}"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "the CUDA driver reports no device"
    return None


def check(dtype: type[np.floating[Any]], backend: ArrayBackend, rng: np.random.Generator) -> bool:
    from sample.kernels import saxpy

    x = rng.uniform(-1.0, 1.0, N).astype(dtype)
    y = rng.uniform(-1.0, 1.0, N).astype(dtype)
    poison = np.full(N, np.nan, dtype=dtype)
    dx, dy, dout = backend.to_device(x), backend.to_device(y), backend.to_device(poison)
    saxpy[saxpy.grid_for(N), BLOCK](A, dx, dy, dout)
    out = backend.to_host(dout)

    reference = A * x.astype(np.float64) + y.astype(np.float64)
    # 2*x is exact, so the kernel's result is the reference rounded once (or fused): within
    # half an ulp of the result in its own precision; one ulp leaves room for either.
    tolerance = np.finfo(dtype).eps * np.abs(reference)
    error = np.abs(out.astype(np.float64) - reference)
    bad = ~(error <= tolerance)  # NaN (an element never written) counts as bad
    name = np.dtype(dtype).name
    if bad.any():
        first = int(np.argmax(bad))
        print(
            f"{name}: MISMATCH in {int(bad.sum())} of {N} elements; first at [{first}]: "
            f"got {out[first]!r}, expected {reference[first]!r}"
        )
        return False
    finite = reference != 0
    rel = float(np.max(error[finite] / np.abs(reference[finite]))) if finite.any() else 0.0
    print(f"{name}: {N} elements match the float64 reference (max relative error {rel:.2e}) via {backend.name}")
    return True


def main() -> int:
    import oxide

    reason = gpu_unavailable_reason()
    backend = array_backend() if reason is None else None
    if reason is None and backend is None:
        reason = "no GPU array library found (oxide.runtime.DeviceArray, torch or cupy)"
    if reason is not None or backend is None:
        print(f"no CUDA GPU available: {reason}")
        return 2
    try:
        backend.to_device(np.zeros(1, dtype=np.float32))  # the first use initializes CUDA
    except oxide.CudaError as exc:
        print(f"no CUDA GPU available: {_first_line(exc)}")
        return 2
    rng = np.random.default_rng(2026)
    ok = True
    for dtype in (np.float32, np.float64):
        ok = check(dtype, backend, rng) and ok
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
