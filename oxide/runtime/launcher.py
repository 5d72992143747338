"""The compiled launch path (``oxide/runtime/_launcher*.c``) and what it needs from Python.

Why C: a launch is a ``cuLaunchKernel`` of ~3 µs on our reference host; reading two arrays,
converting two scalars and packing the parameter block in Python costs more than that again
(``cuda.bindings`` alone costs 2 µs over C per call). The C launcher does the whole hot path
with the GIL held and no allocation, and hands every case it does not handle identically
(unknown array type, out-of-range value, a failed check, a pending kernel error,
a context it has no function for) to the Python path, which launches or raises its usual error.
So the C path only ever has to agree with Python on what succeeds; every error text is
Python's.

What the C side learns from Python, all from the Python path's first successful launches:

- the driver entry points ``cuLaunchKernel``, ``cuCtxGetCurrent`` and ``cuCtxGetId``
  (addresses from the libcuda that ``cuda.bindings`` loaded);
- the array types it has seen and how to read them (the ``ARRAY_`` kinds), the dtype objects of
  PyTorch and NumPy, compared by identity, and the NumPy scalar types it has seen;
- per kernel, a ``Plan``: parameters, specializations (by view dtypes), their launch
  preconditions (evaluated in C; a failing one leaves the launch to Python, which raises), and
  the ``CUfunction`` of each specialization in each context it has been loaded in, by the
  context's uid (a reset context gets a new one, and its old functions are never launched),
  with the dynamic shared memory per block each takes (a launch asking more goes to Python,
  which raises the function's limit: ``dynamic_shared.py``);
- the addresses of the device-error records, read before every launch (host memory oxide
  owns, so a context reset cannot unmap them);
- ``torch.autograd.graph.increment_version``, called on every tensor a launch writes.

The C launcher releases the GIL around ``cuLaunchKernel`` (a full launch queue blocks the
call). It keeps no launch state outside the call, so launches from several threads are safe;
its module does not declare free-threading support, so a free-threaded (3.13t) interpreter
re-enables the GIL when it imports it (``OXIDE_PURE_PYTHON=1`` avoids the import).

``OXIDE_PURE_PYTHON=1`` (read at import) turns the C path off; so does a missing or unbuildable
extension (the wheel still works, launches cost more).
"""
from __future__ import annotations

import os
import sys
from typing import Any

from oxide.abi.launcher import ABI_VERSION, ARRAY_KINDS, DTYPE_CODES

__all__ = [
    "ENABLED",
    "LaunchBase",
    "KernelBase",
    "MAX_NDIM",
    "DTYPE_CODES",
    "ARRAY_TORCH",
    "ARRAY_CUPY",
    "ARRAY_DEVICE_ARRAY",
    "ARRAY_CAI",
    "new_plan",
    "bind_driver",
    "unbind_driver",
    "learn_array",
    "learn_scalar",
    "driver_entry_points",
]

# the C side reads the same values from _abi.h, generated from oxide.abi.launcher
ARRAY_TORCH = ARRAY_KINDS["torch"]
ARRAY_CUPY = ARRAY_KINDS["cupy"]
ARRAY_DEVICE_ARRAY = ARRAY_KINDS["device_array"]
ARRAY_CAI = ARRAY_KINDS["cai"]

_ext: Any = None
if os.environ.get("OXIDE_PURE_PYTHON", "").strip() not in ("1", "true", "yes"):
    try:
        from oxide.runtime import _launcher as _ext  # type: ignore[attr-defined, no-redef]
    except ImportError:
        _ext = None
    if _ext is not None and getattr(_ext, "ABI_VERSION", 0) != ABI_VERSION:
        _ext = None  # built from another version of _launcher.c: rebuild it (setup.py build_ext)


class _PythonKernelBase:
    """``k[grid, block]`` without the extension: the same cache, looked up in Python."""

    _configs: dict[Any, Any]

    def __getitem__(self, config: Any) -> Any:
        try:
            cached = self._configs.get(config)
        except TypeError:  # unhashable (a list, a stream object without __hash__)
            cached = None
        if cached is not None:
            return cached
        return self._make_config(config)

    def _make_config(self, config: Any) -> Any:
        raise NotImplementedError


ENABLED: bool = _ext is not None
LaunchBase: Any = _ext.LaunchBase if _ext is not None else object
KernelBase: Any = _ext.KernelBase if _ext is not None else _PythonKernelBase
MAX_NDIM: int = _ext.MAX_NDIM if _ext is not None else 0

_known_types: set[type] = set()
_bound_driver: Any = None  # the driver module whose entry points the C launcher has
_listening = False  # the C launcher follows the device-error records
_torch_registered = False
_numpy_registered = False
_torch_bump: Any = None  # torch.autograd.graph.increment_version, once torch is seen


def new_plan() -> Any:
    """An empty plan (every launch takes the Python path until it is configured), or None."""
    return _ext.Plan() if _ext is not None else None


def torch_version_bump() -> Any:
    """``torch.autograd.graph.increment_version`` when PyTorch is imported and has it, else None."""
    global _torch_bump
    if _torch_bump is None:
        torch = sys.modules.get("torch")
        graph = getattr(getattr(torch, "autograd", None), "graph", None)
        _torch_bump = getattr(graph, "increment_version", None)
    return _torch_bump


def driver_entry_points(drv: Any) -> tuple[int, ...] | None:
    """Addresses of ``cuLaunchKernel``, ``cuCtxGetCurrent`` and ``cuCtxGetId`` (0 before CUDA
    12.0) behind ``drv``; None if unknown.

    A test driver may provide ``_oxide_entry_points()``. For ``cuda.bindings.driver`` they come
    from the libcuda the process has loaded, with the default-stream semantics cuda.bindings
    uses (``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``).
    """
    hook = getattr(drv, "_oxide_entry_points", None)
    if hook is not None:
        return hook()  # type: ignore[no-any-return]
    if getattr(drv, "__name__", "") != "cuda.bindings.driver":
        return None
    import ctypes

    try:
        lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
        per_thread = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip() not in ("", "0")
        launch = getattr(lib, "cuLaunchKernel_ptsz" if per_thread else "cuLaunchKernel")
        ctx = lib.cuCtxGetCurrent
    except (OSError, AttributeError):
        return None
    ctx_id = getattr(lib, "cuCtxGetId", None)
    return tuple(0 if f is None else ctypes.cast(f, ctypes.c_void_p).value or 0 for f in (launch, ctx, ctx_id))


def bind_driver(drv: Any) -> bool:
    """Gives the C launcher the entry points of ``drv`` (once per driver); whether it has them."""
    global _bound_driver, _listening
    if _ext is None:
        return False
    if _bound_driver is drv:
        return bool(_ext.has_driver())
    points = driver_entry_points(drv)
    _ext.set_driver(*(points or (0, 0)))
    _bound_driver = drv
    if points:
        from oxide.runtime import device

        _ext.set_device_checks(device.device_count() > 1)  # then each array's device is read too
    if points:
        from oxide.runtime import kernel_errors
        from oxide.runtime.arrays import TYPESTR_DTYPES

        _ext.set_typestrs({k: DTYPE_CODES[v] for k, v in TYPESTR_DTYPES.items()})
        if not _listening:
            _listening = True
            kernel_errors.add_record_listener(_ext.set_records)
    return bool(points)


def unbind_driver() -> None:
    """Takes the driver's entry points from the C launcher, which then leaves every launch to
    Python until :func:`bind_driver` gives them again: the CPU device was chosen
    (``device_choice.set_device``), and the C path launches on the GPU only."""
    global _bound_driver
    if _ext is None:
        return
    _ext.set_driver(0, 0)
    _bound_driver = None


def _register_torch(torch: Any) -> None:
    global _torch_registered
    from oxide.runtime.arrays import _TORCH_DTYPES

    for text, name in _TORCH_DTYPES.items():
        dtype = getattr(torch, text.split(".", 1)[1], None)
        if dtype is not None:
            _ext.register_dtype(dtype, DTYPE_CODES[name])
    to_dlpack = getattr(getattr(torch, "_C", None), "_to_dlpack", None)
    if callable(to_dlpack) and hasattr(_ext, "set_torch_dlpack"):
        _ext.set_torch_dlpack(to_dlpack, torch.Tensor)  # one call per tensor instead of five reads
    _ext.set_torch_autograd(torch_version_bump())
    _set_stream_getters()
    _torch_registered = True


def _set_stream_getters() -> None:
    """The current-stream readers of the frameworks imported now (where a type's DLPack
    exchange API has no ``current_work_stream``, the C launcher calls these)."""
    from oxide.runtime import streams

    _ext.set_stream_getters(streams.torch_current_stream if "torch" in sys.modules else None,
                            streams.cupy_current_stream if "cupy" in sys.modules else None)


def _register_numpy() -> None:
    global _numpy_registered
    import numpy as np

    from oxide.runtime.arrays import TYPESTR_DTYPES

    for typestr, name in TYPESTR_DTYPES.items():
        _ext.register_dtype(np.dtype(typestr), DTYPE_CODES[name])
    _numpy_registered = True


def array_kind(obj: Any) -> int:
    """How the C launcher reads ``obj`` (one of the ARRAY_ kinds), the way ``view_of`` does
    (``array_kinds.array_kind``); 0: it does not (DLPack-only objects stay on the Python path)."""
    from oxide.runtime.array_kinds import array_kind as kind_of

    kind = kind_of(obj)
    return ARRAY_KINDS.get(kind, 0) if kind is not None else 0


def learn_array(obj: Any) -> None:
    """Teaches the C launcher the type of ``obj``, an array the Python path has just accepted."""
    cls = type(obj)
    if _ext is None or cls in _known_types:
        return
    _known_types.add(cls)
    kind = array_kind(obj)
    if not kind:
        return
    if kind == ARRAY_TORCH and not _torch_registered:
        _register_torch(sys.modules["torch"])
    elif kind in (ARRAY_CUPY, ARRAY_DEVICE_ARRAY) and not _numpy_registered:
        _register_numpy()
    if kind == ARRAY_CUPY:
        _set_stream_getters()
    api_type = None
    if kind == ARRAY_TORCH:
        torch = sys.modules["torch"]
        # a Parameter only marks a tensor (no __torch_function__ of its own): torch.Tensor's
        # DLPack exchange API reads it as its attributes do
        if cls is getattr(getattr(torch, "nn", None), "Parameter", None):
            api_type = torch.Tensor
    _ext.register_array_type(cls, kind, api_type)


def learn_scalar(value: Any) -> None:
    """Teaches the C launcher the type of ``value`` if it is a NumPy integer or float scalar."""
    cls = type(value)
    if _ext is None or cls in _known_types or cls.__module__ != "numpy":
        return
    _known_types.add(cls)
    import numpy as np  # already imported: value is a NumPy scalar

    if isinstance(value, (np.integer, np.floating)):
        _ext.register_scalar_type(cls)


def _reset_for_tests() -> None:
    global _bound_driver, _torch_registered, _numpy_registered, _torch_bump
    _torch_bump = None
    if _ext is None:
        return
    _ext.set_torch_autograd(None)
    _ext.set_stream_getters(None, None)
    _ext.set_driver(0, 0)
    _ext.set_device_checks(False)
    _ext.set_records(())
    _ext.forget_types()
    _known_types.clear()
    _bound_driver = None
    _torch_registered = _numpy_registered = False  # a test's fake torch has dtypes of its own
