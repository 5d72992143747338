"""The CPU device's "driver": the part of the CUDA driver API the runtime calls, on the host.

With the CPU device chosen (``OXIDE_DEVICE=cpu``, ``oxide.runtime.set_device("cpu")``:
:mod:`oxide.runtime.device_choice`), ``device.driver()`` returns the :class:`CpuDriver` of this
module instead of ``cuda.bindings.driver``, so the launch path (argument checks, preconditions,
slot packing, DeviceArray, the device-error record, module arrays) runs unchanged:

- one device, ordinal 0, named "oxide CPU device", with the attributes of an sm_90 GPU (132
  multiprocessors, 227 KiB of opt-in shared memory per block, 1024 threads per block), and
  one context that is always current;
- memory is host memory: ``cuMemAlloc`` (and ``cuMemAllocManaged``) gives 256-byte aligned host buffers, copies are
  ``memmove``, a device pointer is the host address (``cuMemHostGetDevicePointer`` is the
  identity);
- streams run nothing of their own: every launch has finished when ``cuLaunchKernel`` returns,
  so synchronizing, events and stream waits have nothing left to wait for;
- a "module" is the kernel module compiled for the host by ``oxide_build``'s CPU engine
  (``artifacts.locate_manifest`` compiles it from the module's Python source); a function is
  one entry point of it, launched with exactly what ``cuLaunchKernel`` takes (the parameter
  block's ``void**``). A check that fails in a kernel writes the device-error record as on the
  GPU; the launch raises it (``Kernel._launch_in_context``) before it returns, and
  what the engine raises itself (a barrier that cannot complete, a sanitizer's finding)
  propagates from the launch.

``OXIDE_SANITIZE`` (a comma-separated subset of memcheck, racecheck, initcheck, synccheck) is
read once and handed to every launch. The C launcher is never bound to this driver
(``launcher.driver_entry_points`` knows only libcuda), so every CPU launch takes the Python path.
"""
from __future__ import annotations

import ctypes
import enum
import itertools
import os
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from typing import Any

from oxide.errors import CompileError
from oxide.numpy_dependency import import_numpy

__all__ = ["CPU_CONTEXT", "CPU_DEVICE_NAME", "SANITIZERS", "CpuCode", "CpuDriver", "CpuFunction", "cpu_driver",
           "sanitizers"]

CPU_DEVICE_NAME = "oxide CPU device"
CPU_CONTEXT = 0x0C9_0000  # the handle of the one context; never a GPU context's (a pointer)
_CPU_CONTEXT_UID = 1 << 62  # its cuCtxGetId: GPU contexts count up from 1
_ALIGNMENT = 256  # what cuMemAlloc guarantees
SANITIZERS = ("memcheck", "racecheck", "initcheck", "synccheck")


class Result(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NOT_SUPPORTED = 801


_ERROR_TEXT = {
    Result.CUDA_SUCCESS: "no error",
    Result.CUDA_ERROR_INVALID_VALUE: "invalid argument",
    Result.CUDA_ERROR_OUT_OF_MEMORY: "out of memory",
    Result.CUDA_ERROR_INVALID_DEVICE: "invalid device ordinal: the CPU device is device 0",
    Result.CUDA_ERROR_INVALID_IMAGE: "not code compiled for the CPU device",
    Result.CUDA_ERROR_INVALID_HANDLE: "invalid resource handle",
    Result.CUDA_ERROR_NOT_FOUND: "named symbol not found",
    Result.CUDA_ERROR_NOT_SUPPORTED: "not supported on the CPU device",
}


class DeviceAttribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95


# an H200's figures (sm_90): what the runtime's checks and a kernel's launch code read
_DEVICE_ATTRIBUTES = {
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE: 32,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: 2048,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
    DeviceAttribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: 1,
}
_BLOCKS_PER_MULTIPROCESSOR = 32


class FunctionAttribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_PTX_VERSION = 5
    CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 16


class PointerAttribute(enum.IntEnum):
    CU_POINTER_ATTRIBUTE_CONTEXT = 1


class EventFlags(enum.IntEnum):
    CU_EVENT_DEFAULT = 0
    CU_EVENT_DISABLE_TIMING = 2


class MemAttachFlags(enum.IntEnum):
    CU_MEM_ATTACH_GLOBAL = 1
    CU_MEM_ATTACH_HOST = 2
    CU_MEM_ATTACH_SINGLE = 4


class LaunchAttributeID(enum.IntEnum):
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


class _Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self) -> None:
        self.x = self.y = self.z = 1


class _LaunchAttributeValue:
    __slots__ = ("clusterDim", "cooperative")

    def __init__(self) -> None:
        self.clusterDim = _Dim3()
        self.cooperative = 0


class LaunchAttribute:
    """``cuda.bindings.driver.LaunchAttribute``, as far as ``Kernel._launch_ex`` fills it."""

    def __init__(self) -> None:
        self.id = 0
        self.value = _LaunchAttributeValue()


class LaunchConfig:
    """``cuda.bindings.driver.LaunchConfig``, as far as ``Kernel._launch_ex`` fills it."""

    def __init__(self) -> None:
        self.gridDimX = self.gridDimY = self.gridDimZ = 1
        self.blockDimX = self.blockDimY = self.blockDimZ = 1
        self.sharedMemBytes = 0
        self.hStream = 0
        self.attrs: list[LaunchAttribute] = []
        self.numAttrs = 0


_sanitize: list[frozenset[str]] = []


def sanitizers() -> frozenset[str]:
    """The sanitizers ``OXIDE_SANITIZE`` names (read once); a ``ValueError`` naming the known
    ones for a name that is not one."""
    if not _sanitize:
        names = frozenset(n.strip().lower() for n in os.environ.get("OXIDE_SANITIZE", "").split(",") if n.strip())
        unknown = sorted(names - set(SANITIZERS))
        if unknown:
            raise ValueError(f"OXIDE_SANITIZE names {', '.join(map(repr, unknown))}, which the CPU device does not "
                             f"have: it takes a comma-separated subset of {', '.join(SANITIZERS)}")
        _sanitize.append(names)
    return _sanitize[0]


class CpuCode:
    """What ``cuModuleLoadData`` takes on the CPU device: a kernel module compiled for the host
    (the engine's ``CpuModule``: ``function(symbol)``, ``global_address(name)``)."""

    __slots__ = ("module", "name")

    def __init__(self, module: Any, name: str) -> None:
        self.module = module
        self.name = name

    def __repr__(self) -> str:
        return f"<module {self.name} compiled for the CPU device>"


class CpuFunction:
    """A ``CUfunction`` of the CPU device: one entry point of a :class:`CpuCode`."""

    __slots__ = ("entry", "symbol", "dynamic_shared_limit")

    def __init__(self, entry: Any, symbol: str) -> None:
        self.entry = entry  # the engine's CpuFunction
        self.symbol = symbol
        self.dynamic_shared_limit = 49152 - self.static_shared  # the driver's default, as on the GPU

    @property
    def static_shared(self) -> int:
        return int(getattr(self.entry, "static_shared_bytes", 0))

    def __repr__(self) -> str:
        return f"<CPU function {self.symbol}>"


def _host_address(obj: Any) -> tuple[int, Any]:
    """The address of host memory ``obj`` (an int address, bytes, a NumPy array or any buffer)
    and what keeps it alive."""
    if isinstance(obj, int):
        return obj, None
    if isinstance(obj, bytes):
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0, obj
    interface = getattr(obj, "__array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0]), obj
    np = import_numpy("the CPU device (OXIDE_DEVICE=cpu)")

    array = np.frombuffer(obj, np.uint8)
    return int(array.__array_interface__["data"][0]), array


class CpuDriver:
    """The CUDA driver calls of the runtime, for the CPU device (see the module's docstring).
    Every call returns what ``cuda.bindings.driver``'s does: a tuple whose first item is the
    ``Result``."""

    CUresult = Result
    CUdevice_attribute = DeviceAttribute
    CUfunction_attribute = FunctionAttribute
    CUpointer_attribute = PointerAttribute
    CUevent_flags = EventFlags
    CUmemAttach_flags = MemAttachFlags
    CUlaunchAttributeID = LaunchAttributeID
    CUlaunchAttribute = LaunchAttribute
    CUlaunchConfig = LaunchConfig
    CU_MEMHOSTREGISTER_PORTABLE = 1
    CU_MEMHOSTREGISTER_DEVICEMAP = 2
    CU_MEMHOSTALLOC_PORTABLE = 1
    CU_MEMHOSTALLOC_DEVICEMAP = 2
    OK = Result.CUDA_SUCCESS

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._allocations: dict[int, Any] = {}  # aligned address -> the buffer holding it
        self._events = itertools.count(1)

    def __repr__(self) -> str:
        return "<oxide CPU device driver>"

    # the device and its context ---------------------------------------------------------

    def cuInit(self, flags: int) -> tuple[Result]:
        return (self.OK,)

    def cuDriverGetVersion(self) -> tuple[Result, int]:
        return self.OK, 13000  # a module's cuda_driver is a GPU driver's: any runs here

    def cuDeviceGetCount(self) -> tuple[Result, int]:
        return self.OK, 1

    def cuDeviceGet(self, ordinal: int) -> tuple[Result, int]:
        return (self.OK, 0) if int(ordinal) == 0 else (Result.CUDA_ERROR_INVALID_DEVICE, 0)

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[Result, bytes]:
        return self.OK, CPU_DEVICE_NAME.encode()[: max(int(length) - 1, 0)] + b"\0"

    def cuDeviceGetAttribute(self, attr: Any, dev: int) -> tuple[Result, int]:
        value = _DEVICE_ATTRIBUTES.get(attr)  # type: ignore[call-overload]
        return (self.OK, value) if value is not None else (Result.CUDA_ERROR_INVALID_VALUE, 0)

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Result, int]:
        return self.OK, CPU_CONTEXT

    def cuCtxGetCurrent(self) -> tuple[Result, int]:
        return self.OK, CPU_CONTEXT

    def cuCtxSetCurrent(self, ctx: Any) -> tuple[Result]:
        return (self.OK,)

    def cuCtxPushCurrent(self, ctx: Any) -> tuple[Result]:
        return (self.OK,)

    def cuCtxPopCurrent(self) -> tuple[Result, int]:
        return self.OK, CPU_CONTEXT

    def cuCtxGetId(self, ctx: Any) -> tuple[Result, int]:
        return self.OK, _CPU_CONTEXT_UID

    def cuCtxGetDevice(self) -> tuple[Result, int]:
        return self.OK, 0

    def cuCtxSynchronize(self) -> tuple[Result]:
        return (self.OK,)  # every launch and copy finished before it returned

    def cuStreamSynchronize(self, stream: Any) -> tuple[Result]:
        return (self.OK,)

    def cuGetErrorString(self, err: Any) -> tuple[Result, bytes]:
        try:
            return self.OK, _ERROR_TEXT[Result(int(err))].encode()
        except (ValueError, KeyError):
            return Result.CUDA_ERROR_INVALID_VALUE, b""

    def cuPointerGetAttribute(self, attr: Any, ptr: int) -> tuple[Result, int]:
        return self.OK, CPU_CONTEXT

    # events and streams: the work is done when it is queued ------------------------------

    def cuEventCreate(self, flags: Any) -> tuple[Result, int]:
        return self.OK, next(self._events)

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Result]:
        return (self.OK,)

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Result]:
        return (self.OK,)

    def cuEventDestroy(self, event: Any) -> tuple[Result]:
        return (self.OK,)

    # memory: the host's ----------------------------------------------------------------

    def cuMemAlloc(self, nbytes: int) -> tuple[Result, int]:
        np = import_numpy("the CPU device (OXIDE_DEVICE=cpu)")

        nbytes = int(nbytes)
        if nbytes <= 0:
            return Result.CUDA_ERROR_INVALID_VALUE, 0
        try:
            buffer = np.empty(nbytes + _ALIGNMENT, np.uint8)
        except MemoryError:
            return Result.CUDA_ERROR_OUT_OF_MEMORY, 0
        base = int(buffer.__array_interface__["data"][0])
        address = (base + _ALIGNMENT - 1) // _ALIGNMENT * _ALIGNMENT
        with self._lock:
            self._allocations[address] = buffer
        return self.OK, address

    def cuMemAllocManaged(self, nbytes: int, flags: int) -> tuple[Result, int]:
        """Managed memory: host memory, as every allocation of the CPU device is."""
        if int(flags) not in (MemAttachFlags.CU_MEM_ATTACH_GLOBAL, MemAttachFlags.CU_MEM_ATTACH_HOST):
            return Result.CUDA_ERROR_INVALID_VALUE, 0
        return self.cuMemAlloc(nbytes)

    def cuMemAllocAsync(self, nbytes: int, stream: Any) -> tuple[Result, int]:
        return self.cuMemAlloc(nbytes)

    def cuMemFree(self, ptr: Any) -> tuple[Result]:
        with self._lock:
            buffer = self._allocations.pop(int(ptr), None)
        return (self.OK if buffer is not None else Result.CUDA_ERROR_INVALID_VALUE,)

    def cuMemFreeAsync(self, ptr: Any, stream: Any) -> tuple[Result]:
        return self.cuMemFree(ptr)

    def cuMemcpyHtoD(self, dst: Any, src: Any, nbytes: int) -> tuple[Result]:
        address, keep = _host_address(src)
        ctypes.memmove(int(dst), address, int(nbytes))
        del keep
        return (self.OK,)

    def cuMemcpyHtoDAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Result]:
        return self.cuMemcpyHtoD(dst, src, nbytes)

    def cuMemcpyDtoH(self, dst: Any, src: Any, nbytes: int) -> tuple[Result]:
        address, keep = _host_address(dst)
        ctypes.memmove(address, int(src), int(nbytes))
        del keep
        return (self.OK,)

    def cuMemcpyDtoHAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Result]:
        return self.cuMemcpyDtoH(dst, src, nbytes)

    def cuMemsetD8(self, ptr: Any, value: int, nbytes: int) -> tuple[Result]:
        ctypes.memset(int(ptr), int(value) & 0xFF, int(nbytes))
        return (self.OK,)

    def cuMemsetD8Async(self, ptr: Any, value: int, nbytes: int, stream: Any) -> tuple[Result]:
        return self.cuMemsetD8(ptr, value, nbytes)

    def cuMemHostRegister(self, host: int, nbytes: int, flags: int) -> tuple[Result]:
        return (self.OK,)  # host memory is what kernels use here

    def cuMemHostGetDevicePointer(self, host: int, flags: int) -> tuple[Result, int]:
        return self.OK, int(host)

    # code -----------------------------------------------------------------------------

    def cuModuleLoadData(self, image: Any) -> tuple[Result, Any]:
        if not isinstance(image, CpuCode):  # a cubin or PTX: GPU code, which nothing here runs
            return Result.CUDA_ERROR_INVALID_IMAGE, None
        return self.OK, image

    def cuModuleGetFunction(self, mod: CpuCode, name: bytes) -> tuple[Result, Any]:
        symbol = name.decode()
        try:
            entry = mod.module.function(symbol)
        except (KeyError, LookupError):
            # not among the module's Python kernels: a CUDA C++ kernel (@ox.extern_kernel), whose
            # code only a GPU runs; refused as the kernels that reach C++ are (a CompileError)
            raise CompileError(
                f"the CPU device cannot run {symbol!r} of module {mod.module.module_name}: it is not one of "
                f"the module's Python kernels (a CUDA C++ kernel runs only on a GPU)",
                hint="launch it on a GPU; on the CPU device, call a Python kernel that does the same") from None
        if entry is None:
            return Result.CUDA_ERROR_NOT_FOUND, None
        return self.OK, CpuFunction(entry, symbol)

    def cuModuleGetGlobal(self, mod: CpuCode, name: bytes) -> tuple[Result, int, int]:
        try:
            address, size = mod.module.global_address(name.decode())
        except (KeyError, LookupError):
            return Result.CUDA_ERROR_NOT_FOUND, 0, 0
        return self.OK, int(address), int(size)

    def cuFuncGetAttribute(self, attr: Any, fn: CpuFunction) -> tuple[Result, int]:
        a = FunctionAttribute
        values = {
            a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: int(getattr(fn.entry, "max_threads_per_block", 1024)),
            a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: fn.static_shared,
            a.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: fn.dynamic_shared_limit,
            a.CU_FUNC_ATTRIBUTE_BINARY_VERSION: 90,
        }
        return self.OK, values.get(attr, 0)  # type: ignore[call-overload]

    def cuFuncSetAttribute(self, fn: CpuFunction, attr: Any, value: int) -> tuple[Result]:
        if attr == FunctionAttribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            fn.dynamic_shared_limit = int(value)
        return (self.OK,)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fn: CpuFunction, threads: int,
                                                    shared: int) -> tuple[Result, int]:
        return self.OK, max(1, min(_BLOCKS_PER_MULTIPROCESSOR, 2048 // max(int(threads), 1)))

    def cuTensorMapEncodeTiled(self, *args: Any) -> tuple[Result, None]:
        return Result.CUDA_ERROR_NOT_SUPPORTED, None

    # launches: run to completion here ---------------------------------------------------

    def cuLaunchKernel(self, fn: CpuFunction, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                       stream: Any, params: int, extra: Any) -> tuple[Result]:
        """Runs the kernel: every block, in order, before it returns (``Kernel._launch_in_context``
        then raises the failure a check of the kernel wrote into the device-error record)."""
        if not isinstance(fn, CpuFunction):
            return (Result.CUDA_ERROR_INVALID_HANDLE,)
        fn.entry.launch((int(gx), int(gy), int(gz)), (int(bx), int(by), int(bz)), int(shared), int(params),
                        sanitizers())
        return (self.OK,)

    def cuLaunchKernelEx(self, config: LaunchConfig, fn: CpuFunction, params: int, extra: Any) -> tuple[Result]:
        """A cluster or cooperative launch: the blocks run as :meth:`cuLaunchKernel` runs them
        (the engine runs a kernel that calls ``grid.sync()`` with every block resident)."""
        return self.cuLaunchKernel(fn, config.gridDimX, config.gridDimY, config.gridDimZ, config.blockDimX,
                                   config.blockDimY, config.blockDimZ, config.sharedMemBytes, config.hStream,
                                   params, extra)


_driver: list[CpuDriver] = []
_driver_lock = _thread.allocate_lock()


def cpu_driver() -> CpuDriver:
    """The process's CPU driver (one: its allocations outlive a switch of device and back)."""
    with _driver_lock:
        if not _driver:
            _driver.append(CpuDriver())
        return _driver[0]
