"""The CUDA driver, the current context and the device behind it.

Everything here is lazy: importing this module does not import ``cuda.bindings``. The first
call to :func:`driver` loads the driver and runs ``cuInit``; a machine without a driver or GPU
gets one :class:`~oxide.errors.CudaError` line instead of a traceback from the bindings.
"""
from __future__ import annotations

import contextlib
import sys
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from typing import TYPE_CHECKING, Any, Iterator, NoReturn

from oxide.errors import CudaError

if TYPE_CHECKING:  # type checkers see NamedTuple; oxide.abi.records_base says why not at run time
    from typing import NamedTuple as Record
else:
    from oxide.abi.records_base import Record

__all__ = [
    "DriverBindingsWarning",
    "NO_DRIVER_MESSAGE",
    "NO_DEVICE_MESSAGE",
    "DeviceInfo",
    "driver",
    "check",
    "raise_cuda_error",
    "current_context",
    "current",
    "context_uid",
    "context_device",
    "primary_context",
]

_DRIVER_LIB = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so"

# what a machine without a GPU can do instead: the CPU device (device_choice.py)
CPU_DEVICE_HINT = ", or run them on the CPU device: OXIDE_DEVICE=cpu"
NO_DRIVER_MESSAGE = (
    f"no CUDA driver found ({_DRIVER_LIB} could not be loaded): "
    f"oxide kernels need an NVIDIA GPU and driver{CPU_DEVICE_HINT}"
)
NO_DEVICE_MESSAGE = f"no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE): oxide kernels need an NVIDIA GPU{CPU_DEVICE_HINT}"
NO_BINDINGS_MESSAGE = (
    "cuda-bindings is not installed (cuda.bindings.driver could not be imported): "
    "pip install cuda-bindings"
)


class DriverBindingsWarning(RuntimeWarning):
    """cuda-bindings is made for a newer CUDA major release than the driver supports (cuda-bindings
    13 on a CUDA 12 driver): the runtime runs, but a driver call may fail."""


_lock = _thread.allocate_lock()
_drv: Any = None
_primary: dict[int, Any] = {}  # device ordinal -> retained primary CUcontext (never released)
_devices: dict[int, DeviceInfo] = {}  # context handle -> the device it runs on


class DeviceInfo(Record):
    """A GPU as the code selection sees it."""

    ordinal: int
    name: str
    major: int
    minor: int

    @property
    def arch(self) -> str:
        """The real architecture, e.g. ``"sm_90"``."""
        return f"sm_{self.major}{self.minor}"


def _import_bindings() -> Any:
    # A separate function so tests can replace it to simulate a machine without cuda-bindings.
    from cuda.bindings import driver as drv

    return drv


def driver() -> Any:
    """``cuda.bindings.driver`` after a successful ``cuInit``; CudaError when there is no GPU."""
    drv = _drv
    if drv is not None:
        return drv
    return _init_driver()


def _init_driver() -> Any:
    global _drv
    with _lock:
        if _drv is not None:
            return _drv
        from oxide.runtime import device_choice

        problem = device_choice.environment_problem()
        if problem is not None:
            raise CudaError(problem)
        if device_choice.ON_CPU:
            from oxide.runtime.cpu_driver import cpu_driver

            _drv = cpu_driver()
            return _drv
        try:
            drv = _import_bindings()
        except ImportError:
            raise CudaError(NO_BINDINGS_MESSAGE) from None
        try:
            (err,) = drv.cuInit(0)
        except Exception:
            # cuda.bindings raises from deep inside its loader (DynamicLibNotFoundError, OSError).
            raise CudaError(NO_DRIVER_MESSAGE) from None
        if int(err) == int(drv.CUresult.CUDA_ERROR_NO_DEVICE):
            raise CudaError(NO_DEVICE_MESSAGE, code=int(err), name="CUDA_ERROR_NO_DEVICE")
        _check_with(drv, err, "cuInit")
        _warn_if_bindings_outrun_driver(drv)
        _drv = drv
        return drv


# the oldest cuda-bindings of a CUDA major release that the runtime was checked with (docs/toolchain.md)
_BINDINGS_FLOOR = {12: "12.8"}


def _bindings_version() -> str | None:
    """cuda-bindings' version (``"13.5.0"``): its major is the CUDA release it is made for."""
    try:
        from cuda import bindings
    except ImportError:
        return None
    return getattr(bindings, "__version__", None)


def _warn_if_bindings_outrun_driver(drv: Any) -> None:
    """One warning when cuda-bindings is made for a newer CUDA major release than the driver
    supports, naming the installed driver, the one the bindings are made for and the bindings
    that match it (docs/toolchain.md: the runtime's own driver bound)."""
    version = _bindings_version()
    try:
        made_for = int(str(version).split(".")[0])
        err, have = drv.cuDriverGetVersion()
        have = int(have)
    except Exception:  # a stand-in driver or bindings without a version: nothing to compare
        return
    if int(err) != 0 or have <= 0 or have // 1000 >= made_for:
        return
    import warnings

    from oxide.runtime.driver_release import DRIVER_RELEASE_OF_CUDA, installed_driver_release

    release = installed_driver_release()
    installed = f"driver {release}, which supports" if release else "driver supports"
    needed = DRIVER_RELEASE_OF_CUDA.get(made_for)
    major = have // 1000
    warnings.warn(
        f"oxide: cuda-bindings {version}, the runtime's driver bindings, is made for CUDA {made_for} drivers"
        + (f" ({needed} or newer)" if needed else "")
        + f"; this machine's {installed} CUDA {major}.{have % 1000 // 10}, so a driver call may fail. Update the "
        f"NVIDIA driver, or install the bindings of this driver's release: pip install \"cuda-bindings>={_BINDINGS_FLOOR.get(major, f'{major}.0')},"
        f"<{major + 1}\" (docs/toolchain.md, \"Which driver a wheel needs\")",
        DriverBindingsWarning,
        stacklevel=2,
    )


def _forget_driver() -> None:
    """The next :func:`driver` is the one of the device chosen now (``device_choice``): what is
    cached of the other's stays (contexts and functions are known by uid, which differ)."""
    global _drv
    with _lock:
        _drv = None
        _count.clear()


def _reset_for_tests() -> None:
    global _drv
    _count.clear()
    _context_ordinals.clear()
    with _events_lock:
        _events.clear()
    with _lock:
        _drv = None
        _primary.clear()
        _devices.clear()


def _error_name(drv: Any, err: Any) -> str:
    try:
        return str(drv.CUresult(int(err)).name)
    except Exception:
        return f"CUresult {int(err)}"


def _error_text(drv: Any, err: Any) -> str:
    try:
        e, text = drv.cuGetErrorString(err)
        if int(e) == 0 and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:
        pass
    return ""


def raise_cuda_error(err: Any, what: str, hint: str = "") -> NoReturn:
    """Raises CudaError for a failed driver call ``what`` with the error's name and text."""
    drv = _drv if _drv is not None else _import_bindings()
    name = _error_name(drv, err)
    text = _error_text(drv, err)
    message = f"{what} failed: {name}" + (f" ({text})" if text else "")
    if hint:
        message += f"; {hint}"
    raise CudaError(message, code=int(err), name=name)


def _check_with(drv: Any, err: Any, what: str) -> None:
    if int(err) != 0:
        raise_cuda_error(err, what)


def check(err: Any, what: str) -> None:
    """Turns a CUresult other than CUDA_SUCCESS into CudaError naming ``what``."""
    if err != 0:
        raise_cuda_error(err, what)


def current_context() -> int:
    """The handle of the calling thread's current context.

    With none current, retains the primary context of device 0 and makes it current: PyTorch,
    CuPy and the CUDA runtime use primary contexts, so memory they allocate works here. A
    current primary context that was reset (destroyed under its handle) is retained again.
    """
    return current()[0]


def current() -> tuple[int, int]:
    """The current context, as :func:`current_context` makes it, and its uid
    (:func:`context_uid`)."""
    drv = driver()
    err, ctx = drv.cuCtxGetCurrent()
    check(err, "cuCtxGetCurrent")
    handle = int(ctx)
    if handle:
        uid = _uid(drv, handle)
        if uid is not None:
            return handle, uid
        return _revive(drv, handle)
    primary = _retain_primary(drv, 0, reuse=True)
    uid = _uid(drv, primary)
    if uid is None:  # numba.cuda.close() resets the primary context and leaves none current
        return _revive(drv, primary)
    return primary, uid


@contextlib.contextmanager
def primary_context(ordinal: int) -> Iterator[int]:
    """The primary context of device ``ordinal`` current (PyTorch's and CuPy's, for their
    arrays on that device) for the ``with`` block; the context current before is current again
    after it."""
    drv = driver()
    err, before = drv.cuCtxGetCurrent()
    check(err, "cuCtxGetCurrent")
    primary = _retain_primary(drv, ordinal, reuse=True)
    try:
        yield primary
    finally:
        (err,) = drv.cuCtxSetCurrent(before)
        check(err, "cuCtxSetCurrent")


def _retain_primary(drv: Any, ordinal: int, *, reuse: bool) -> int:
    """Retains the primary context of device ``ordinal`` (once, unless ``reuse`` is False: after
    a reset, retaining creates it again) and makes it current."""
    with _lock:
        primary = _primary.get(ordinal) if reuse else None
        if primary is None:
            err, dev = drv.cuDeviceGet(ordinal)
            check(err, f"cuDeviceGet({ordinal})")
            err, primary = drv.cuDevicePrimaryCtxRetain(dev)
            check(err, "cuDevicePrimaryCtxRetain")
            _primary[ordinal] = primary
    (err,) = drv.cuCtxSetCurrent(primary)
    check(err, "cuCtxSetCurrent")
    return int(primary)


def _uid(drv: Any, ctx: int) -> int | None:
    """cuCtxGetId of ``ctx``; None when the context is destroyed; the handle without cuCtxGetId."""
    get_id = getattr(drv, "cuCtxGetId", None)
    if get_id is None:
        return ctx
    err, uid = get_id(ctx)
    if err == 0:
        return int(uid)
    if _error_name(drv, err) in ("CUDA_ERROR_CONTEXT_IS_DESTROYED", "CUDA_ERROR_INVALID_CONTEXT"):
        return None
    raise_cuda_error(err, f"cuCtxGetId of the current context {ctx:#x}")


def _revive(drv: Any, dead: int) -> tuple[int, int]:
    """The calling thread's current context was destroyed: a reset of the primary context
    (``cudaDeviceReset``, ``numba.cuda.close()``, ``cuDevicePrimaryCtxReset``) leaves its handle
    current. Retaining the device's primary context creates it again; it is made current."""
    info = _devices.get(dead)
    ordinal = info.ordinal if info is not None else next((o for o, c in _primary.items() if int(c) == dead), None)
    if ordinal is None and device_count() == 1:
        ordinal = 0
    if ordinal is None:
        raise CudaError(
            f"the current CUDA context {dead:#x} was destroyed (cuCtxDestroy, or a reset: cudaDeviceReset, "
            "numba.cuda.close(), cuDevicePrimaryCtxReset): make a live context current, e.g. "
            "torch.cuda.set_device(i)", name="CUDA_ERROR_CONTEXT_IS_DESTROYED")
    try:
        primary = _retain_primary(drv, ordinal, reuse=False)
    except CudaError as e:
        raise CudaError(f"the current CUDA context was destroyed, and creating the primary context of cuda:{ordinal} "
                        f"again failed ({e}): after a sticky error (an illegal address, a trap) the GPU cannot be used "
                        "again in this process; start a new one", code=e.code, name=e.name) from None
    uid = _uid(drv, primary)
    if uid is None:
        raise CudaError(f"the primary context of cuda:{ordinal} could not be created again after a reset",
                        name="CUDA_ERROR_CONTEXT_IS_DESTROYED")
    if primary != dead and info is not None:
        _devices[primary] = info
    return primary, uid


_count: list[int] = []


def device_count() -> int:
    """How many CUDA devices this process sees (0 without a driver)."""
    if not _count:
        drv = driver()
        err, n = drv.cuDeviceGetCount()
        _count.append(int(n) if err == 0 else 0)
    return _count[0]


_context_ordinals: dict[int, int] = {}  # context handle -> its device's ordinal


def pointer_device(ptr: int) -> int | None:
    """The ordinal of the device that owns device pointer ``ptr``, or None if the driver cannot
    say (host memory, or a pointer it does not know). Asked through the pointer's context: the
    DEVICE_ORDINAL attribute read 0 for every device on our two-GPU host."""
    drv = driver()
    err, ctx = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, ptr)
    handle = int(ctx) if err == 0 else 0
    if not handle:
        return None
    ordinal = _context_ordinals.get(handle)
    if ordinal is None:
        (err,) = drv.cuCtxPushCurrent(ctx)
        if err != 0:
            return None
        try:
            err, dev = drv.cuCtxGetDevice()
        finally:
            drv.cuCtxPopCurrent()
        if err != 0:
            return None
        ordinal = _context_ordinals[handle] = int(dev)
    return ordinal


def context_uid(ctx: int) -> int:
    """A number naming context ``ctx`` for the life of the process: its ``cuCtxGetId``. A
    context's handle outlives a reset (``cuDevicePrimaryCtxReset``, ``cudaDeviceReset``,
    ``numba.cuda.close()``), which destroys every module, allocation and host mapping made in it;
    the context that comes back has a new id, so what is cached by it (modules, functions, the
    device-error record, events) is made again rather than used dead. The handle itself where
    the driver has no ``cuCtxGetId`` (before CUDA 12.0)."""
    uid = _uid(driver(), ctx)
    if uid is None:
        raise CudaError(f"context {ctx:#x} was destroyed (cuCtxGetId: CUDA_ERROR_CONTEXT_IS_DESTROYED)",
                        name="CUDA_ERROR_CONTEXT_IS_DESTROYED")
    return uid


# Events for ordering one stream after another, per context (by uid). Each wait takes one from
# the pool and gives it back once cuStreamWaitEvent has captured it: two threads never record
# into the same event between another's record and wait.
_events_lock = _thread.allocate_lock()
_events: dict[int, list[Any]] = {}


def _take_event(drv: Any, key: int) -> Any:
    with _events_lock:
        pool = _events.get(key)
        if pool:
            return pool.pop()
    err, event = drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    check(err, "cuEventCreate")
    return event


def _give_event(key: int, event: Any) -> None:
    with _events_lock:
        _events.setdefault(key, []).append(event)


def stream_wait(consumer: int, producer: int, context_uid: int | None = None) -> None:
    """Makes work queued later on stream ``consumer`` wait for the work queued so far on
    ``producer`` (an event recorded on one, waited for by the other; the GPU waits, not the
    host). Both are handles in the current context, whose uid (:func:`current`) a caller that
    knows it passes. Safe from several threads at once."""
    drv = driver()
    key = current()[1] if context_uid is None else context_uid
    event = _take_event(drv, key)
    try:
        (err,) = drv.cuEventRecord(event, producer)
        check(err, f"cuEventRecord on stream {producer:#x}")
        (err,) = drv.cuStreamWaitEvent(consumer, event, 0)
        check(err, f"cuStreamWaitEvent of stream {consumer:#x}")
    finally:
        _give_event(key, event)  # the wait has captured the event's work: it may be recorded again


def new_event() -> Any:
    """A new CUDA event of the current context, without timing (for ordering)."""
    drv = driver()
    err, event = drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    check(err, "cuEventCreate")
    return event


def context_device(ctx: int) -> DeviceInfo:
    """The device of context ``ctx``, which must be current on the calling thread."""
    info = _devices.get(ctx)
    if info is not None:
        return info
    drv = driver()
    err, dev = drv.cuCtxGetDevice()
    check(err, "cuCtxGetDevice")
    attr = drv.CUdevice_attribute
    err, major = drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    check(err, "cuDeviceGetAttribute")
    err, minor = drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    check(err, "cuDeviceGetAttribute")
    err, raw = drv.cuDeviceGetName(256, dev)
    check(err, "cuDeviceGetName")
    name = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    info = DeviceInfo(ordinal=int(dev), name=name, major=int(major), minor=int(minor))
    _devices[ctx] = info
    return info
