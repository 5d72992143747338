"""The tools the GPU benchmarks use, imported on demand with a clear reason when missing.

A benchmark that needs a missing tool raises :class:`Unavailable`; the runner records it as
skipped with that message and goes on.
"""
from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Unavailable", "REPO", "require_torch", "require_cupy", "require_numba_cuda", "DeviceInfo", "device_info",
    "git_commit", "subprocess_env",
]

REPO = Path(__file__).resolve().parent.parent


class Unavailable(RuntimeError):
    """A tool or device a benchmark needs is missing (recorded as "skipped", not "error")."""


@functools.lru_cache(maxsize=1)
def require_torch() -> Any:
    """PyTorch with a usable CUDA device."""
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"PyTorch is not importable ({e}): the GPU benchmarks allocate, time and check with torch") from None
    if not torch.cuda.is_available():
        raise Unavailable("torch.cuda.is_available() is False: no NVIDIA GPU or driver on this machine")
    return torch


@functools.lru_cache(maxsize=1)
def require_cupy() -> Any:
    """CuPy (``cupy.RawModule`` compiles the CUDA C++ versions with NVRTC)."""
    try:
        import cupy
    except ImportError as e:
        raise Unavailable(f"CuPy is not importable ({e}): pip install cupy-cuda13x for the CUDA C++ baselines") from None
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy raises its own CUDARuntimeError
        raise Unavailable(f"CuPy sees no GPU: {e}") from None
    return cupy


@functools.lru_cache(maxsize=1)
def require_numba_cuda() -> Any:
    """``numba.cuda`` with a usable device."""
    try:
        import numpy as np

        if not hasattr(np, "row_stack"):  # removed in NumPy 2.x; numba-cuda still references it
            np.row_stack = np.vstack  # type: ignore[attr-defined]
        from numba import cuda
    except Exception as e:
        raise Unavailable(f"numba-cuda is not importable ({type(e).__name__}: {e})") from None
    try:
        ok = cuda.is_available()
    except Exception as e:
        raise Unavailable(f"numba.cuda cannot use the GPU: {e}") from None
    if not ok:
        raise Unavailable("numba.cuda.is_available() is False")
    return cuda


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    arch: str  # "sm_90"
    sm_count: int
    memory_gib: float
    driver: str  # "570.86.15 (CUDA 13.0)" as far as it can be found
    torch: str
    cupy: str
    numba_cuda: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _driver_version() -> str:
    parts = []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        )
        if out.returncode == 0 and out.stdout.strip():
            parts.append(out.stdout.strip().splitlines()[0])
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from cuda.bindings import driver as drv

        err, version = drv.cuDriverGetVersion()
        if int(err) == 0:
            parts.append(f"CUDA {int(version) // 1000}.{int(version) % 1000 // 10}")
    except Exception:
        pass
    if len(parts) == 2:
        return f"{parts[0]} ({parts[1]})"
    return parts[0] if parts else "unknown"


def _version(module: str) -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        for dist in {"cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"), "numba_cuda": ("numba-cuda",),
                     "torch": ("torch",)}[module]:
            try:
                return version(dist)
            except PackageNotFoundError:
                continue
    except Exception:
        pass
    return "not installed"


def device_info() -> DeviceInfo:
    """The GPU the benchmarks run on (torch's device 0)."""
    torch = require_torch()
    props = torch.cuda.get_device_properties(0)
    return DeviceInfo(
        name=props.name,
        arch=f"sm_{props.major}{props.minor}",
        sm_count=int(props.multi_processor_count),
        memory_gib=round(props.total_memory / 2**30, 1),
        driver=_driver_version(),
        torch=_version("torch"),
        cupy=_version("cupy"),
        numba_cuda=_version("numba_cuda"),
    )


def git_commit() -> str:
    """``git rev-parse --short HEAD`` of the repository, plus ``+dirty`` when it has changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment with the checkout first on ``PYTHONPATH`` (oxide is not necessarily installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env
