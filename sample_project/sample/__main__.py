"""``python -m sample``: runs every operation of sample on the GPU with fresh random inputs,
checks every element against a float64 NumPy reference, and prints a table (op, array library,
size, time per call, max error, ok). Outputs are poisoned (NaN) first where the op writes every
element, so an element never written fails.

Exit status: 0 when every check passes, 1 when one fails, 2 when there is no usable GPU (one
line saying why).

With ``OXIDE_DEVICE=cpu`` it runs on oxide's CPU device instead, on NumPy arrays, DeviceArrays
(host memory there) and CPU tensors; the CUDA C++ runs there as the Python implementations
``sample.kernels`` names (``cpu=``), and the row launched from C++ host code says it needs a GPU
and is skipped.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

REPEATS = 20


@dataclass(frozen=True)
class ArrayLibrary:
    """How to move NumPy arrays to the GPU and back with one array library."""

    name: str
    to_device: Callable[[np.ndarray], Any]
    to_host: Callable[[Any], np.ndarray]
    synchronize: Callable[[], None]


def array_libraries() -> list[ArrayLibrary]:
    from oxide.runtime import DeviceArray, device_kind, synchronize

    found = [ArrayLibrary("oxide", DeviceArray.from_numpy, lambda a: a.to_numpy(), synchronize)]
    if device_kind() == "cpu":  # host memory: NumPy arrays, CPU tensors
        found.append(ArrayLibrary("numpy", lambda a: a.copy(), lambda a: np.asarray(a).copy(), synchronize))
        try:
            import torch

            found.append(ArrayLibrary("torch", lambda a: torch.from_numpy(a.copy()), lambda t: t.numpy().copy(),
                                      synchronize))
        except ImportError:
            pass
        return found
    try:
        import torch

        if torch.cuda.is_available():
            found.append(ArrayLibrary("torch", lambda a: torch.from_numpy(a).to("cuda"),
                                      lambda t: t.cpu().numpy(), torch.cuda.synchronize))
    except ImportError:
        pass
    try:
        import cupy

        found.append(ArrayLibrary("cupy", cupy.asarray, cupy.asnumpy, cupy.cuda.Device().synchronize))
    except ImportError:
        pass
    return found


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
    except Exception as exc:  # no libcuda.so: no NVIDIA driver
        return _first_line(exc)
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {err.name}"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "the CUDA driver reports no device"
    return None


# --- references (float64) -----------------------------------------------------------------------

def gelu_reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def softmax_reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def blur_reference(image: np.ndarray) -> np.ndarray:
    padded = np.pad(image.astype(np.float64), 1, mode="edge")
    rows, cols = image.shape
    return sum(padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols] for dr in (-1, 0, 1) for dc in (-1, 0, 1)) / 9.0


@dataclass
class Row:
    op: str
    library: str
    size: str
    ms: float
    error: float
    ok: bool
    note: str = ""


class CannotRunHere(Exception):
    """An op that cannot run on the CPU device: the row is skipped, saying why."""


def _cannot_run_here(exc: BaseException) -> bool:
    """Whether ``exc`` is the CPU device refusing a kernel (C++ host code, CUDA C++, a GPU-only feature)."""
    import oxide

    from sample.arrays import on_cpu_device
    from sample.ops import NeedsGpuError

    return on_cpu_device() and isinstance(exc, (oxide.CompileError, NeedsGpuError))


def _timed(lib: ArrayLibrary, call: Callable[[], Any]) -> tuple[Any, float]:
    try:
        result = call()  # the first call loads the module: not timed
    except Exception as exc:
        if _cannot_run_here(exc):
            raise CannotRunHere(_first_line(exc)) from None
        raise
    lib.synchronize()
    started = time.perf_counter()
    for _ in range(REPEATS):
        call()
    lib.synchronize()
    return result, (time.perf_counter() - started) / REPEATS * 1e3


def _max_error(got: np.ndarray, want: np.ndarray) -> float:
    diff = np.abs(got.astype(np.float64) - want)
    return float(np.max(diff)) if diff.size else 0.0  # NaN (never written) propagates


def check_all(lib: ArrayLibrary, rng: np.random.Generator) -> list[Row]:
    rows: list[Row] = []
    for check in (_check_gelu, _check_softmax, _check_histogram, _check_dropout, _check_blur, _check_saxpy):
        try:
            check(lib, rng, rows)
        except CannotRunHere as exc:
            rows.append(Row(check.__name__.removeprefix("_check_"), lib.name, "-", 0.0, 0.0, True,
                            f"skipped on the CPU device: {exc}"))
    return rows


def _check_gelu(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    n = 1_000_003  # not a multiple of the block size
    x = rng.uniform(-6.0, 6.0, n).astype(np.float32)
    want = gelu_reference(x)
    dx = lib.to_device(x)
    for impl in ("python", "cpp", "native"):
        if impl == "native":
            try:
                from sample import _native  # noqa: F401
            except ImportError:
                rows.append(Row("gelu [native]", lib.name, f"{n}", 0.0, 0.0, True,
                                "skipped: sample._native is not built (install the package)"))
                continue
        try:
            out, ms = _timed(lib, lambda: sample.gelu(dx, impl=impl))
        except CannotRunHere as exc:
            rows.append(Row(f"gelu [{impl}]", lib.name, f"{n}", 0.0, 0.0, True, f"skipped on the CPU device: {exc}"))
            continue
        err = _max_error(lib.to_host(out), want)
        rows.append(Row(f"gelu [{impl}]", lib.name, f"{n}", ms, err, err <= 2e-5 * (1 + np.abs(want).max())))


def _check_softmax(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    m, k = 4097, 1000
    x2 = rng.standard_normal((m, k)).astype(np.float32) * 4
    dx2 = lib.to_device(x2)
    out, ms = _timed(lib, lambda: sample.softmax(dx2))
    got = lib.to_host(out)
    err = _max_error(got, softmax_reference(x2))
    rows.append(Row("softmax", lib.name, f"{m}x{k}", ms, err, err <= 1e-5 and got.shape == (m, k)))


def _check_histogram(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    data = rng.integers(0, 256, 3_000_001, dtype=np.uint8)
    ddata = lib.to_device(data)
    counts, ms = _timed(lib, lambda: sample.histogram(ddata))
    got = lib.to_host(counts)
    want_counts = np.bincount(data, minlength=256)
    err = float(np.max(np.abs(got.astype(np.int64) - want_counts)))
    rows.append(Row("histogram", lib.name, f"{data.size}", ms, err, err == 0 and got.sum() == data.size))


def _check_dropout(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    n = 1_000_003
    p, seed = 0.25, 1234
    x = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1.0, 1.0], n).astype(np.float32)
    dx = lib.to_device(x)
    out, ms = _timed(lib, lambda: sample.dropout(dx, p, seed))
    got = lib.to_host(out)
    again = lib.to_host(sample.dropout(dx, p, seed))
    other = lib.to_host(sample.dropout(dx, p, seed + 1))
    kept = got != 0
    scale = np.float32(1.0 / (1.0 - p))
    err = _max_error(got[kept], (x[kept] * scale).astype(np.float64))
    keep_rate = float(kept.mean())
    ok = (err == 0.0 and np.array_equal(got, again) and not np.array_equal(got, other)
          and abs(keep_rate - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n) and bool(np.all(got[~kept] == 0)))
    rows.append(Row("dropout p=0.25", lib.name, f"{n}", ms, err, ok, f"kept {keep_rate:.4f}"))


def _check_blur(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    image = rng.uniform(0.0, 1.0, (1080, 1921)).astype(np.float32)
    dimage = lib.to_device(image)
    out, ms = _timed(lib, lambda: sample.blur(dimage))
    err = _max_error(lib.to_host(out), blur_reference(image))
    rows.append(Row("blur 3x3", lib.name, "1080x1921", ms, err, err <= 1e-6))


def _check_saxpy(lib: ArrayLibrary, rng: np.random.Generator, rows: list[Row]) -> None:
    import sample

    n = 1_000_003
    for dtype, tol in ((np.float32, 1.2e-7), (np.float64, 2.3e-16)):
        a = 2.0
        x = rng.uniform(-1, 1, n).astype(dtype)
        y = rng.uniform(-1, 1, n).astype(dtype)
        dx, dy = lib.to_device(x), lib.to_device(y)
        out, ms = _timed(lib, lambda: sample.saxpy(a, dx, dy))
        want = a * x.astype(np.float64) + y.astype(np.float64)
        err = _max_error(lib.to_host(out), want)
        rows.append(Row(f"saxpy {np.dtype(dtype).name}", lib.name, f"{n}", ms, err, err <= tol * max(1.0, np.abs(want).max())))


def main() -> int:
    import oxide
    from oxide.runtime import device_kind

    reason = None if device_kind() == "cpu" else gpu_unavailable_reason()
    if reason is not None:
        print(f"no CUDA GPU available: {reason}")
        return 2
    try:
        libraries = array_libraries()
        libraries[0].to_device(np.zeros(1, dtype=np.float32))  # the first use initializes CUDA
    except oxide.CudaError as exc:
        print(f"no CUDA GPU available: {_first_line(exc)}")
        return 2
    rng = np.random.default_rng(2026)
    rows: list[Row] = []
    for lib in libraries:
        rows += check_all(lib, rng)
    print(f"{'op':<16} {'array':<6} {'size':>12} {'time':>10} {'max error':>10}  ok")
    for r in rows:
        print(f"{r.op:<16} {r.library:<6} {r.size:>12} {r.ms:>7.3f} ms {r.error:>10.2e}  "
              f"{'-  ' if r.note.startswith('skipped') else 'yes' if r.ok else 'NO'}{'  ' + r.note if r.note else ''}")
    ok = all(r.ok for r in rows)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
