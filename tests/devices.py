"""Arrays for the GPU tests on whichever device runs them: the GPU, or the CPU device when the
machine has no GPU (conftest.py runs the ``gpu``-marked tests there; docs/runtime.md, "The CPU
device"). A test written with these helpers runs unchanged on both:

- ``array(np_array)``: the data on the device (a torch CUDA tensor on the GPU when torch is
  installed, else a ``DeviceArray``; a NumPy copy on the CPU device);
- ``full(shape, value, dtype)``, ``zeros(...)``: a poisoned or zeroed output there;
- ``to_numpy(a)``: a host copy of any of them; ``synchronize()``: wait, then raise kernel errors;
- ``bf16(values)``: bfloat16 data on the device, a torch tensor (CUDA, or CPU on the CPU device;
  NumPy has no bfloat16): the test skips, saying it needs torch, where torch is not installed;
  ``needs_torch(why)``: torch, or that skip; ``torch_device()``: "cuda" or "cpu";
- ``permuted(a, axes)``: a strided view of an array made here, its axes permuted;
- ``sized(gpu_n, cpu_n)``: a problem size for each device (the CPU device runs every thread on
  two cores: keep the GPU's odd remainders, not its millions);
- ``backends()``: the GPU backends a test compiles its kernels with (one on the CPU device, which
  compiles the source itself), ``compiled_package(...)``: kernels copied into a package, compiled
  for the GPU (the CPU device compiles them at the first launch).

``on_cpu()`` says which; ``gpu_only(reason)`` marks a test or module that cannot run on the CPU
device (conftest skips it there with the reason: "uses CuPy", "tensor cores", ...).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import functools
import tempfile
from pathlib import Path

__all__ = ["on_cpu", "gpu_only", "array", "full", "zeros", "to_numpy", "synchronize", "sized", "torch_or_none",
           "gpu_available", "cpu_device_problem", "gpu_tests_on_cpu", "backends", "compiled_package", "fill",
           "needs_torch", "torch_device", "bf16", "permuted"]


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when the CUDA driver loads and sees at least one device."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:
        return False


_PROBE = """
from oxide import kernel, f32, Slice, DisjointSlice, thread


@kernel
def probe(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i] + 1.0
"""


@functools.lru_cache(maxsize=1)
def cpu_device_problem() -> str | None:
    """Why kernels cannot run on the CPU device here (its engine is missing or cannot compile a
    saxpy-like kernel), None when they can."""
    try:
        from oxide_build.jit import cpu_module
    except ImportError as e:
        return f"the CPU device's engine cannot be imported ({e})"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "oxide_cpu_probe.py"
        path.write_text(_PROBE)
        try:
            cpu_module(path, "oxide_cpu_probe")
        except NotImplementedError as e:
            return f"the CPU device's engine is not built yet ({e})"
        except ImportError as e:
            return f"the CPU device's engine cannot be imported ({e})"
        except Exception as e:  # any failure of the engine: said once, as the skip reason
            return f"the CPU device's engine failed on a saxpy-like kernel ({type(e).__name__}: {e})"
    return None


@functools.lru_cache(maxsize=1)
def gpu_tests_on_cpu() -> bool:
    """Whether this session runs the ``gpu``-marked tests on the CPU device: no GPU here, and the
    CPU device works."""
    return not gpu_available() and cpu_device_problem() is None


def on_cpu() -> bool:
    """Whether the GPU tests run on the CPU device (decided once per session: collection-time
    parameters may ask), or launches run there now."""
    from oxide.runtime import device_choice

    return device_choice.ON_CPU or gpu_tests_on_cpu()


def gpu_only(reason: str) -> pytest.MarkDecorator:
    """Marks what needs a real GPU: skipped on the CPU device with ``reason``."""
    return pytest.mark.gpu_only(reason)


def torch_or_none() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def needs_torch(why: str) -> Any:
    """torch; where it is not installed the test skips saying it needs torch for ``why`` (torch is
    no test dependency: its CPU build is not PyPI's default wheel)."""
    torch = torch_or_none()
    if torch is None:
        pytest.skip(f"needs torch ({why}): not installed")
    return torch


def torch_device() -> str:
    """The torch device of the launches' arrays: "cpu" on the CPU device, else "cuda"."""
    return "cpu" if on_cpu() else "cuda"


def bf16(values: Any) -> Any:
    """``values`` rounded to bfloat16, a torch tensor on the device (NumPy has no bfloat16)."""
    torch = needs_torch("bfloat16 arrays: NumPy has none")
    return torch.as_tensor(np.ascontiguousarray(values, np.float32)).to(torch.bfloat16).to(torch_device())


_TORCH_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16", "int32": "int32",
                 "int64": "int64", "uint8": "uint8", "int8": "int8", "int16": "int16", "bool": "bool"}


def _use_torch(dtype: np.dtype) -> Any:
    torch = torch_or_none()
    if torch is None or dtype.name not in _TORCH_DTYPES or dtype.fields:
        return None
    return torch


def array(a: Any) -> Any:
    """A copy of ``a`` (anything ``numpy.asarray`` takes) on the device launches run on."""
    host = np.ascontiguousarray(a)
    if on_cpu():
        return host.copy()
    torch = _use_torch(host.dtype)
    if torch is not None:
        return torch.as_tensor(host, device="cuda")
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(host)


def full(shape: int | tuple[int, ...], value: Any, dtype: Any = np.float32) -> Any:
    """An array of ``shape`` filled with ``value`` (a poison: NaN, -12345.5) on the device."""
    return array(np.full(shape, value, dtype))


def zeros(shape: int | tuple[int, ...], dtype: Any = np.float32) -> Any:
    return array(np.zeros(shape, dtype))


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy copy of an array made here (or a torch tensor, CuPy array, DeviceArray)."""
    if isinstance(a, np.ndarray):
        return a.copy()
    to_host = getattr(a, "to_numpy", None)
    if to_host is not None:
        return np.asarray(to_host())
    if hasattr(a, "cpu"):
        tensor = a.detach()
        if str(tensor.dtype) == "torch.bfloat16":  # NumPy has no bfloat16: widened, exactly, to float32
            tensor = tensor.float()
        return tensor.cpu().numpy()
    get = getattr(a, "get", None)  # CuPy
    if get is not None:
        return np.asarray(get())
    return np.asarray(a)


def permuted(a: Any, axes: tuple[int, ...]) -> Any:
    """A view of ``a`` (made here: NumPy or torch) with its axes permuted (non-contiguous)."""
    if isinstance(a, np.ndarray):
        return a.transpose(axes)
    if hasattr(a, "permute"):
        return a.permute(*axes)
    pytest.skip("needs torch (a strided view of GPU memory: DeviceArray has none): not installed")


def fill(a: Any, value: Any) -> None:
    """Sets every element of ``a`` (made here) to ``value``, in place."""
    if isinstance(a, np.ndarray):
        a.fill(value)
    elif hasattr(a, "fill_"):
        a.fill_(value)
    else:  # a DeviceArray
        from oxide.runtime import device

        host = np.full(a.shape, value, a.dtype)
        (err,) = device.driver().cuMemcpyHtoD(a.ptr, host, host.nbytes)
        device.check(err, "cuMemcpyHtoD")


def synchronize() -> None:
    """Waits for the device's work (nothing to wait for on the CPU device), then raises a kernel error."""
    from oxide.runtime import synchronize as oxide_synchronize

    torch = torch_or_none()
    if torch is not None and not on_cpu() and torch.cuda.is_available():
        torch.cuda.synchronize()
    oxide_synchronize()


def sized(gpu_n: Any, cpu_n: Any) -> Any:
    """``gpu_n`` on the GPU, ``cpu_n`` on the CPU device."""
    return cpu_n if on_cpu() else gpu_n


def backends() -> list[str]:
    """``["nvptx", "nvvm"]`` on the GPU; ``["nvptx"]`` on the CPU device, where the GPU backend
    makes no difference (it compiles the module's source for the host)."""
    return ["nvptx"] if on_cpu() else ["nvptx", "nvvm"]


def compiled_package(sources: list[Path], name: str, root: Path, backend: str = "nvptx", **options: Any) -> Any:
    """``root/name/``: a package of ``sources`` (its modules), each compiled with ``backend`` for
    this GPU and its artifacts written beside it; on the CPU device only copied, the launches
    compiling it. Returns the package's first module, imported (``root`` stays on sys.path)."""
    import importlib
    import shutil
    import sys

    pkg = root / name
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for source in sources:
        shutil.copy(source, pkg / source.name)
    if not on_cpu():
        from oxide.runtime import device
        from oxide_build.compile import CompileOptions, compile_module
        from oxide_build.package.artifacts import write_module_artifacts

        arch = device.context_device(device.current_context()).arch
        for source in sources:
            compiled = compile_module(pkg / source.name, f"{name}.{source.stem}",
                                      CompileOptions(archs=(arch,), backend=backend, **options), root=root)
            write_module_artifacts(compiled, pkg)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"{name}.{sources[0].stem}")
