"""Stand-ins the runtime tests share: a fake ``cuda.bindings.driver`` (``FakeDriver``, which
decodes the ``kernelParams`` it is handed, so the packed ABI is checked byte for byte; ``CFakeDriver``
for the compiled launcher), fake arrays (CUDA array interface, DLPack, the DLPack exchange API),
fake torch and CuPy modules, a module of kernels with its manifest (``make_module``), and the
fixtures (``fresh_runtime``, autouse where imported; ``fake_driver``, ``c_driver``).

A test module imports the fixtures it uses by name (and ``fresh_runtime``).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import itertools
import shutil
import subprocess
import sys
import textwrap
import types
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda.bindings import driver as real_driver

import oxide
from oxide.runtime import artifacts, device, device_choice, kernel_errors, launcher, loader
from oxide.runtime.arrays import _DLDataType, _DLDevice, _DLTensor
from oxide.runtime.manifest import (
    ErrorSite,
    KernelSpec,
    ModuleManifest,
    ParamSpec,
    manifest_path,
)

__all__ = [
    "CFakeDriver", "FILL_KERNELS", "FUNC_ATTRIBUTES", "STAND_IN_DRIVER", "FakeArray", "FakeDLPack", "FakeDriver", "REPEAT_KERNELS",
    "SAXPY_KERNELS", "SAXPY_SOURCE", "SCALAR_GENERIC_SOURCE", "SCALE_SLOTS", "SITES", "TADD_PARAMS",
    "TENSOR_KERNELS", "TENSOR_SOURCE", "_Exchange", "_fake_cupy", "_fake_torch", "c_driver",
    "expect_type_error", "fail_on_device", "fake_driver", "fresh_runtime", "make_module", "paths",
    "record_words", "saxpy_params", "slot_types", "build_launch_program", "build_stand_in_driver", "needs_compilers",
]


_FAKE_ADDRESSES = itertools.count(0x7F0000001000, 0x100000)


class FakeArray:
    """A device array as far as the CUDA array interface goes; its memory does not exist."""

    def __init__(
        self,
        n: int = 4,
        typestr: str = "<f4",
        *,
        ptr: int | None = None,
        shape: tuple[int, ...] | None = None,
        strides: tuple[int, ...] | None = None,
        readonly: bool = False,
        mask: Any = None,
        stream: int | None = None,
    ) -> None:
        if ptr is None:  # distinct fake allocations: views must not alias writable ones
            ptr = next(_FAKE_ADDRESSES)
        self.__cuda_array_interface__ = {
            "version": 3,
            "shape": shape if shape is not None else (n,),
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "stream": stream,
            "mask": mask,
        }


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeDLPack:
    """An array that only speaks DLPack (a real "dltensor" capsule over a hand-built struct)."""

    def __init__(
        self,
        shape: tuple[int, ...],
        code: int = 2,
        bits: int = 32,
        *,
        device_type: int = 2,
        ptr: int = 0x7F0000002000,
        strides: tuple[int, ...] | None = None,
        byte_offset: int = 0,
    ) -> None:
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
        self._t = _DLManagedTensor()
        t = self._t.dl_tensor  # a view into self._t
        t.data = ptr
        t.device = _DLDevice(device_type, 0)
        t.ndim = len(shape)
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = byte_offset
        self.device_type = device_type

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, 0)

    def __dlpack__(self, stream: Any = None) -> Any:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


_C_TYPES = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16, "f32": ctypes.c_float, "f64": ctypes.c_double,
    "bool": ctypes.c_uint8,
}  # fmt: skip


class FakeDriver:
    """Enough of ``cuda.bindings.driver`` for a launch; decodes each launch's parameters."""

    CUresult = real_driver.CUresult
    CUdevice_attribute = real_driver.CUdevice_attribute
    CUpointer_attribute = real_driver.CUpointer_attribute
    CUfunction_attribute = real_driver.CUfunction_attribute
    CU_MEMHOSTALLOC_DEVICEMAP = real_driver.CU_MEMHOSTALLOC_DEVICEMAP
    CU_MEMHOSTALLOC_PORTABLE = real_driver.CU_MEMHOSTALLOC_PORTABLE
    CU_MEMHOSTREGISTER_DEVICEMAP = real_driver.CU_MEMHOSTREGISTER_DEVICEMAP
    CU_MEMHOSTREGISTER_PORTABLE = real_driver.CU_MEMHOSTREGISTER_PORTABLE
    OK = real_driver.CUresult.CUDA_SUCCESS
    DEVICE_OFFSET = 0x100000000000  # fake device address of mapped host memory: host + this

    def __init__(self, capability: tuple[int, int] = (9, 0)) -> None:
        self.capability = capability
        self.ctx = 0
        self.loaded: list[bytes] = []
        self.functions: list[str] = []
        self.launches: list[dict[str, Any]] = []
        self.signatures: dict[str, list[str]] = {}  # symbol -> slot types, to decode kernelParams
        self.launch_result = self.OK
        self.load_result = self.OK
        self.host_allocations: list[tuple[Any, int]] = []  # (buffer, flags): cuMemHostRegister
        self.error_globals = True  # loaded modules have __oxide_error_ptr and __oxide_module_id
        self.globals: dict[tuple[Any, bytes], int] = {}  # (module, name) -> fake device address
        self.device_memory: dict[int, bytes] = {}  # what cuMemcpyHtoD wrote where
        self.synchronized = 0
        self.function_attributes: dict[tuple[str, Any], int] = {}  # cuFuncSetAttribute
        self.attribute_calls: list[tuple[Any, ...]] = []  # cuFuncGetAttribute and cuFuncSetAttribute, in order
        self.stream_order: list[tuple[Any, ...]] = []  # event calls: one stream waiting for another
        self.driver_version = 13000  # cuDriverGetVersion: CUDA 13.0

    def cuInit(self, flags: int) -> tuple[Any]:
        return (self.OK,)

    def cuDriverGetVersion(self) -> tuple[Any, int]:
        return self.OK, self.driver_version

    def cuCtxGetCurrent(self) -> tuple[Any, int]:
        return self.OK, self.ctx

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:
        return self.OK, ordinal

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Any, int]:
        return self.OK, 0xC0 if dev == 0 else 0xC00 + dev  # device d > 0: the context its pointers name

    def cuCtxSetCurrent(self, ctx: int) -> tuple[Any]:
        self.ctx = int(ctx)
        if 0xC00 < self.ctx < 0xD00 or self.ctx == 0xC0:
            self.current_device = 0 if self.ctx == 0xC0 else self.ctx - 0xC00
        return (self.OK,)

    def cuCtxGetDevice(self) -> tuple[Any, int]:
        return self.OK, self.current_device

    current_device = 0  # the device of the current context
    devices = 1  # cuDeviceGetCount
    pointer_devices: dict[int, int] = {}  # device pointer -> device ordinal (0 if not listed)
    pushed: list[tuple[int, int]] = []  # (context, device) made current by cuCtxPushCurrent

    def cuDeviceGetCount(self) -> tuple[Any, int]:
        return self.OK, self.devices

    def cuPointerGetAttribute(self, attr: Any, ptr: int) -> tuple[Any, int]:
        assert attr == real_driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT
        return self.OK, 0xC00 + self.pointer_devices.get(int(ptr), 0)  # device d's context: 0xC00 + d

    def cuCtxPushCurrent(self, ctx: int) -> tuple[Any]:
        self.pushed.append((self.ctx, self.current_device))
        self.ctx, self.current_device = int(ctx), int(ctx) - 0xC00
        return (self.OK,)

    def cuCtxPopCurrent(self) -> tuple[Any, int]:
        popped = self.ctx
        self.ctx, self.current_device = self.pushed.pop()
        return self.OK, popped

    def cuDeviceGetAttribute(self, attr: Any, dev: int) -> tuple[Any, int]:
        a = self.CUdevice_attribute
        if attr == a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
            return self.OK, self.capability[0]
        if attr == a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
            return self.OK, 132
        if attr == a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
            return self.OK, self.shared_optin
        return self.OK, self.capability[1]

    CUlaunchConfig = real_driver.CUlaunchConfig
    CUlaunchAttribute = real_driver.CUlaunchAttribute
    CUlaunchAttributeID = real_driver.CUlaunchAttributeID
    blocks_per_sm = 8  # cuOccupancyMaxActiveBlocksPerMultiprocessor

    CUevent_flags = real_driver.CUevent_flags

    def cuEventCreate(self, flags: Any) -> tuple[Any, int]:
        self.stream_order.append(("create",))
        return self.OK, 0xE0

    def cuEventRecord(self, event: int, stream: int) -> tuple[Any]:
        self.stream_order.append(("record", event, stream))
        return (self.OK,)

    def cuStreamWaitEvent(self, stream: int, event: int, flags: int) -> tuple[Any]:
        self.stream_order.append(("wait", stream, event))
        return (self.OK,)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, fn: str, threads: int, shared: int) -> tuple[Any, int]:
        return self.OK, self.blocks_per_sm

    shared_optin = 232448  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 KiB, as on sm_90
    static_shared = 0  # every function's SHARED_SIZE_BYTES

    def cuFuncSetAttribute(self, fn: str, attr: Any, value: int) -> tuple[Any]:
        self.function_attributes[(fn, attr)] = value
        self.attribute_calls.append(("set", fn, attr, value))
        return (self.OK,)

    def cuFuncGetAttribute(self, attr: Any, fn: str) -> tuple[Any, int]:
        """What was set, else the driver's defaults (MAX_DYNAMIC_SHARED_SIZE_BYTES: 48 KiB less
        the static shared memory)."""
        self.attribute_calls.append(("get", fn, attr))
        a = self.CUfunction_attribute
        if (fn, attr) in self.function_attributes:
            return self.OK, self.function_attributes[(fn, attr)]
        if attr == a.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return self.OK, 49152 - self.static_shared
        if attr == a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
            return self.OK, self.static_shared
        return self.OK, 0

    def cuLaunchKernelEx(self, config: Any, fn: str, params: int, extra: int) -> tuple[Any]:
        """Records the launch like cuLaunchKernel, with its cluster and cooperative attributes."""
        ids = real_driver.CUlaunchAttributeID
        (err,) = self.cuLaunchKernel(fn, config.gridDimX, config.gridDimY, config.gridDimZ, config.blockDimX,
                                     config.blockDimY, config.blockDimZ, config.sharedMemBytes, int(config.hStream),
                                     params, extra)  # fmt: skip
        if err == self.OK:
            for attr in config.attrs[: config.numAttrs]:
                if attr.id == ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
                    d = attr.value.clusterDim
                    self.launches[-1]["cluster"] = (d.x, d.y, d.z)
                elif attr.id == ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
                    self.launches[-1]["cooperative"] = bool(attr.value.cooperative)
        return (err,)

    def cuDeviceGetName(self, n: int, dev: int) -> tuple[Any, bytes]:
        return self.OK, b"Fake GPU\0\0\0"

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, Any]:
        if self.load_result != self.OK:
            return self.load_result, None
        self.loaded.append(bytes(image))
        return self.OK, f"module{len(self.loaded)}"

    def cuModuleGetFunction(self, mod: Any, name: bytes) -> tuple[Any, Any]:
        if name.decode() not in self.signatures:
            return self.CUresult.CUDA_ERROR_NOT_FOUND, None
        self.functions.append(name.decode())
        return self.OK, name.decode()

    def cuLaunchKernel(self, fn: str, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream: Any, params: int, extra: int) -> tuple[Any]:  # fmt: skip
        if self.launch_result != self.OK:
            return (self.launch_result,)
        slots = self.signatures[fn]
        pointers = (ctypes.c_void_p * max(len(slots), 1)).from_address(params) if slots else []
        values = [ctypes.string_at(pointers[i], 128) if t == "tensor_map" else _C_TYPES[t].from_address(pointers[i]).value
                  for i, t in enumerate(slots)]
        self.launches.append(
            {"fn": fn, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared, "stream": stream, "values": values,
             "ctx": self.ctx}
        )
        return (self.OK,)

    def cuGetErrorString(self, err: Any) -> tuple[Any, bytes]:
        return self.OK, b"fake description"

    def cuMemHostRegister(self, host: int, nbytes: int, flags: int) -> tuple[Any]:
        buf = (ctypes.c_char * nbytes).from_address(host)
        buf[:] = b"\xff" * nbytes  # garbage: the runtime must zero the record
        self.host_allocations.append((buf, flags))
        return (self.OK,)

    def cuEventDestroy(self, event: Any) -> tuple[Any]:
        self.stream_order.append(("destroy", event))
        return (self.OK,)

    def cuMemHostGetDevicePointer(self, host: int, flags: int) -> tuple[Any, int]:
        return self.OK, host + self.DEVICE_OFFSET

    def cuModuleGetGlobal(self, mod: Any, name: bytes) -> tuple[Any, int, int]:
        if not self.error_globals:
            return self.CUresult.CUDA_ERROR_NOT_FOUND, 0, 0
        address = self.globals.setdefault((mod, name), 0xD0000 + 0x100 * len(self.globals))
        return self.OK, address, 8

    def cuMemcpyHtoD(self, dst: int, src: Any, nbytes: int) -> tuple[Any]:
        self.device_memory[int(dst)] = bytes(src)[:nbytes]
        return (self.OK,)

    def cuCtxSynchronize(self) -> tuple[Any]:
        self.synchronized += 1
        return (self.OK,)

    def global_value(self, mod: Any, name: bytes) -> int:
        return int.from_bytes(self.device_memory[self.globals[(mod, name)]], "little")


def slot_types(params: tuple[ParamSpec, ...]) -> list[str]:
    out: list[str] = []
    for p in params:
        if p.kind == "constexpr":
            continue
        if p.is_tensor:
            out += ["u64"] + ["i64"] * (2 * p.ndim)
        elif p.is_aggregate:  # a struct or vector: one slot per scalar field
            out += [dtype for _, dtype in p.fields]
        elif p.is_tensor_map:  # the 128-byte CUtensorMap (one kernel parameter), its box's elements
            out += ["tensor_map", "i64"]
        else:
            out += ["u64", "i64"] if p.is_view else [p.dtype]
        if p.optional:  # its flag (oxide.abi.params.PRESENT_SLOTS)
            out.append("bool")
    return out


@pytest.fixture(autouse=True)
def fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    def reset() -> None:
        device_choice.set_device("cuda")  # these tests fake the GPU's driver, whatever OXIDE_DEVICE says
        device._reset_for_tests()
        artifacts._reset_for_tests()
        loader._modules.clear()
        loader._driver_version.clear()
        kernel_errors._reset_for_tests()
        launcher._reset_for_tests()

    reset()
    monkeypatch.setenv("OXIDE_JIT", "0")
    yield
    reset()


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    drv = FakeDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    return drv


SAXPY_SOURCE = """
import oxide as ox
from oxide import kernel, f32, f64, Slice, DisjointSlice

T = ox.TypeVar("T", f32, f64)


@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    pass


@kernel
def scale(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    pass
"""


def saxpy_params(t: str) -> tuple[ParamSpec, ...]:
    return (
        ParamSpec("a", "scalar", t),
        ParamSpec("x", "slice", t),
        ParamSpec("y", "slice", t),
        ParamSpec("out", "disjoint_slice", t),
    )


SAXPY_KERNELS = (
    KernelSpec("saxpy", "saxpy__f32", saxpy_params("f32"), {"T": "f32"}),
    KernelSpec("saxpy", "saxpy__f64", saxpy_params("f64"), {"T": "f64"}),
    KernelSpec(
        "scale",
        "scale",
        (ParamSpec("a", "scalar", "f32"), ParamSpec("x", "slice", "f32"), ParamSpec("out", "disjoint_slice", "f32")),
    ),
)


def make_module(
    tmp_path: Path,
    source: str = SAXPY_SOURCE,
    kernels: tuple[KernelSpec, ...] = SAXPY_KERNELS,
    *,
    cubins: dict[str, str] | None = None,
    ptx: dict[str, str] | None = None,
    write_manifest: bool = True,
    sha: str | None = None,
    error_sites: tuple[ErrorSite, ...] = (),
    sources: dict[str, str] | None = None,
    cuda_driver: int = 0,
) -> types.ModuleType:
    """Writes a kernel module, its manifest and code files; imports the module."""
    name = f"oxtest_{uuid.uuid4().hex[:12]}"
    src = tmp_path / f"{name}.py"
    src.write_text(textwrap.dedent(source))
    cubins = {"sm_90": f"{name}.sm_90.cubin"} if cubins is None else cubins
    ptx = {} if ptx is None else ptx
    if write_manifest:
        m = ModuleManifest(
            module=name,
            source=src.name,
            source_sha256=sha if sha is not None else hashlib.sha256(src.read_bytes()).hexdigest(),
            kernels=kernels,
            cubins=cubins,
            ptx=ptx,
            error_sites=error_sites,
            sources=sources or {},
            cuda_driver=cuda_driver,
        )
        path = manifest_path(tmp_path, name)
        path.parent.mkdir(exist_ok=True)
        path.write_text(m.to_json())
        for arch, f in cubins.items():
            (path.parent / f).write_bytes(b"CUBIN " + arch.encode())
        for arch, f in ptx.items():
            (path.parent / f).write_text(f"// PTX {arch}")
    spec = importlib.util.spec_from_file_location(name, src)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def expect_type_error(call: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


SCALAR_GENERIC_SOURCE = """
import oxide as ox
from oxide import kernel, i32, i64, MutSlice

T = ox.TypeVar("T", i32, i64)


@kernel
def fill(value: T, out: MutSlice[i64]) -> None:
    pass
"""


FILL_KERNELS = tuple(
    KernelSpec("fill", f"fill__{t}", (ParamSpec("value", "scalar", t), ParamSpec("out", "mut_slice", "i64")), {"T": t})
    for t in ("i32", "i64")
)


# ---------------------------------------------------------------------------------------------
# device-side errors: the failure record's sites and words

SITES = (
    ErrorSite(1, "bounds", "scale", "pkg/kernels.py", 12, 18, "x[i]"),
    ErrorSite(2, "assert", "scale", "pkg/kernels.py", 14, 5, "a > 0: a must be positive"),
)
SCALE_SLOTS = slot_types(SAXPY_KERNELS[2].params)


def record_words(drv: FakeDriver, which: int = 0) -> Any:
    buf, _ = drv.host_allocations[which]
    return (ctypes.c_int64 * 5).from_address(ctypes.addressof(buf))


def fail_on_device(drv: FakeDriver, module_id: int, site: int, index: int = 0, length: int = 0) -> None:
    """What ``__oxide_fail`` does: claim the record, then write its fields."""
    words = record_words(drv)
    words[0] = 1
    words[1], words[2], words[3], words[4] = module_id, site, index, length

_C_LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
    ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
)  # fmt: skip
_C_CTX = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))


class CFakeDriver(FakeDriver):
    """A FakeDriver whose functions are integer handles and whose ``cuLaunchKernel`` and
    ``cuCtxGetCurrent`` also exist as C function pointers, for the compiled launcher."""

    def __init__(self) -> None:
        super().__init__()
        self.symbols: dict[int, str] = {}
        self.c_result = 0
        self._c_launch = _C_LAUNCH(self._launch_from_c)
        self._c_ctx = _C_CTX(self._ctx_from_c)

    def _oxide_entry_points(self) -> tuple[int, int]:
        return ctypes.cast(self._c_launch, ctypes.c_void_p).value or 0, ctypes.cast(self._c_ctx, ctypes.c_void_p).value or 0

    def cuModuleGetFunction(self, mod: Any, name: bytes) -> tuple[Any, Any]:
        err, fn = super().cuModuleGetFunction(mod, name)
        if fn is None:
            return err, None
        handle = 0xF000 + 0x10 * list(self.signatures).index(fn)
        self.symbols[handle] = fn
        return err, handle

    def cuLaunchKernel(self, fn: Any, *rest: Any) -> tuple[Any]:
        result = super().cuLaunchKernel(self.symbols[int(fn)], *rest)
        if self.launches and "path" not in self.launches[-1]:
            self.launches[-1]["path"] = "python"
        return result

    def _ctx_from_c(self, out: Any) -> int:
        out[0] = self.ctx or None
        return 0

    def _launch_from_c(self, fn: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                       stream: int | None, params: int | None, extra: int | None) -> int:  # fmt: skip
        if self.c_result:
            return self.c_result
        super().cuLaunchKernel(self.symbols[fn], gx, gy, gz, bx, by, bz, shared, stream or 0, params or 0, 0)
        self.launches[-1]["path"] = "c"
        return 0


@pytest.fixture
def c_driver(monkeypatch: pytest.MonkeyPatch) -> CFakeDriver:
    drv = CFakeDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    return drv


def paths(drv: FakeDriver) -> list[str]:
    return [launch["path"] for launch in drv.launches]


class _FakeTorchDType:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


def _fake_torch() -> types.ModuleType:
    torch = types.ModuleType("torch")
    for name in ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"):
        setattr(torch, name, _FakeTorchDType(name))

    class Size(tuple):  # type: ignore[type-arg]
        pass

    class Tensor:
        def __init__(self, n: int, dtype: Any, ptr: int, stride: int = 1, cuda: bool = True, shape: Any = None,
                     strides: Any = None) -> None:  # fmt: skip
            self.shape = Size(shape if shape is not None else (n,))
            self.dtype, self._ptr, self._stride, self.is_cuda = dtype, ptr, stride, cuda
            self._strides = tuple(strides) if strides is not None else (stride,) * len(self.shape)
            self.device = types.SimpleNamespace(type="cuda" if cuda else "cpu")

        def dim(self) -> int:
            return len(self.shape)

        def stride(self, i: int | None = None) -> Any:
            return self._strides if i is None else self._strides[i]

        def is_contiguous(self) -> bool:
            return self._stride == 1 or self.shape[0] <= 1

        def data_ptr(self) -> int:
            return self._ptr

        def get_device(self) -> int:
            return self.device_index if self.is_cuda else -1

    Tensor.device_index = 0  # type: ignore[attr-defined]  # torch's get_device(): the CUDA ordinal
    Tensor.__module__ = "torch"
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    # torch.cuda.current_stream(ordinal): the stream a launch without one takes, per ordinal
    torch.current_streams = {}  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(  # type: ignore[attr-defined]
        _cuda_getCurrentRawStream=lambda ordinal: torch.current_streams.get(ordinal, 0))  # type: ignore[attr-defined]
    return torch


def _fake_cupy() -> types.ModuleType:
    cupy = types.ModuleType("cupy")

    class ndarray:
        def __init__(self, n: int, dtype: Any, ptr: int, stride: int | None = None, shape: Any = None,
                     strides: Any = None) -> None:  # fmt: skip
            self.dtype = np.dtype(dtype)
            self.shape = tuple(shape) if shape is not None else (n,)
            self.ndim = len(self.shape)
            self.itemsize = self.dtype.itemsize
            if strides is None:
                strides = (stride if stride is not None else self.itemsize,) if shape is None else tuple(
                    int(x) for x in np.empty(self.shape, self.dtype).strides)
            self.strides = tuple(strides)
            self.data = types.SimpleNamespace(ptr=ptr)

    ndarray.__module__ = "cupy"
    cupy.ndarray = ndarray  # type: ignore[attr-defined]
    # cupy.cuda.get_current_stream(ordinal).ptr: the stream a launch without one takes
    cupy.current_streams = {}  # type: ignore[attr-defined]
    cupy.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        get_current_stream=lambda ordinal=0: types.SimpleNamespace(ptr=cupy.current_streams.get(ordinal, 0)))  # type: ignore[attr-defined]
    return cupy


_DLTENSOR_READER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_DLTensor))


class _ExchangeAPI(ctypes.Structure):
    """DLPack's DLPackExchangeAPI: a version header, then five function pointers."""

    _fields_ = [
        ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator", ctypes.c_void_p), ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
        ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p), ("dltensor_from_py_object_no_sync", _DLTENSOR_READER),
        ("current_work_stream", ctypes.c_void_p),
    ]  # fmt: skip


class _Exchange:
    """A DLPack C exchange API over the fake torch tensors: its DLTensor reader describes a
    tensor from the same fields its attributes show (strides in elements), and counts calls."""

    CODES = {"float32": (2, 32), "float64": (2, 64), "int32": (0, 32), "bool": (6, 8)}

    def __init__(self, major: int = 1, minor: int = 3, fail: bool = False) -> None:
        self.calls, self.fail = 0, fail
        self.reader = _DLTENSOR_READER(self._read)
        self.api = _ExchangeAPI(major, minor, None, None, None, None, self.reader, None)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = new(ctypes.addressof(self.api), b"dlpack_exchange_api", None)
        self.keep: list[Any] = []

    def _read(self, obj: int, out: Any) -> int:
        self.calls += 1
        t = ctypes.cast(obj, ctypes.py_object).value
        if self.fail:
            return -1
        shape = (ctypes.c_int64 * len(t.shape))(*t.shape)
        strides = (ctypes.c_int64 * len(t.shape))(*t.stride())
        self.keep[:] = [shape, strides]  # alive until the launcher has read them
        code, bits = self.CODES[t.dtype.name]
        out[0].data, out[0].byte_offset = t.data_ptr() - 8, 8  # the pointer is data + byte_offset
        out[0].device = _DLDevice(2, t.get_device()) if t.is_cuda else _DLDevice(1, 0)
        out[0].ndim, out[0].dtype = len(t.shape), _DLDataType(code, bits, 1)
        out[0].shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        out[0].strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        return 0


TENSOR_SOURCE = """
from oxide import kernel, f32, i32, Tensor, MutTensor, DisjointTensor, Slice, DisjointSlice, Constexpr


@kernel
def tadd(a: Tensor[f32, 2], s: f32, out: MutTensor[f32, 2]) -> None:
    pass


@kernel(constexprs={"REPS": [1, 3]})
def repeat(x: Slice[f32], REPS: Constexpr[int], k: i32, out: DisjointSlice[f32]) -> None:
    pass
"""

TADD_PARAMS = (ParamSpec("a", "tensor", "f32", 2), ParamSpec("s", "scalar", "f32"), ParamSpec("out", "mut_tensor", "f32", 2))
REPEAT_KERNELS = tuple(
    KernelSpec(
        "repeat", f"repeat_REPS{r}",
        (ParamSpec("x", "slice", "f32"), ParamSpec("REPS", "constexpr", "i64"), ParamSpec("k", "scalar", "i32"),
         ParamSpec("out", "disjoint_slice", "f32")),
        {"REPS": str(r)},
    )
    for r in (1, 3)
)  # fmt: skip
TENSOR_KERNELS = (KernelSpec("tadd", "tadd", TADD_PARAMS),) + REPEAT_KERNELS


# ---- a stand-in libcuda.so.1 and a program that includes oxide/launch.hpp -------------------------

# What oxide/launch.hpp opens of the driver, but cuFuncGetAttribute, cuFuncSetAttribute and
# cuLaunchKernel, which each test writes (``FUNC_ATTRIBUTES`` where it does not care): one
# device of sm_90, one context, a module of any image (its handle holds the image's first 63
# bytes); a function's handle is its name (one handle per name, as the driver's), and
# fake_image_of(f) is the image of the module it was found in.
STAND_IN_DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static int ctx_obj;
static char names[16][64], images[16][64];
static const char *image_of[16];
static int n_names, n_images;
int cuInit(unsigned f) { return 0; }
int cuCtxGetCurrent(void **c) { *c = &ctx_obj; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = &ctx_obj; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : a == 76 ? 0 : a == 97 ? 232448 : -1; return 0; }
int cuModuleLoadData(void **m, const void *image) {
  int i = n_images < 16 ? n_images++ : 15;
  snprintf(images[i], sizeof images[0], "%s", (const char *)image);
  *m = images[i];
  return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name) {
  int i = 0;
  while (i < n_names && strcmp(names[i], name) != 0) i++;
  if (i == n_names) snprintf(names[n_names++], sizeof names[0], "%s", name);
  image_of[i] = (const char *)m;
  *f = names[i];
  return 0;
}
const char *fake_image_of(const void *f) {
  for (int i = 0; i < n_names; i++)
    if (f == names[i]) return image_of[i];
  return "?";
}
int cuGetErrorName(int r, const char **n) { *n = "CUDA_ERROR_FAKE"; return 0; }
"""

# a function's attributes as a fresh one has them: 48 KiB of dynamic shared memory, nothing else
FUNC_ATTRIBUTES = r"""
int cuFuncGetAttribute(int *v, int a, void *f) { *v = a == 8 ? 49152 : 0; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { return 0; }
"""

needs_compilers = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("g++") is None,
    reason="no gcc/g++ to build the stand-in driver and the program")


def build_stand_in_driver(directory: Path, functions: str, *cflags: str) -> Path:
    """``directory``/lib/libcuda.so.1: ``STAND_IN_DRIVER`` and ``functions`` (C defining at least
    cuFuncGetAttribute, cuFuncSetAttribute and cuLaunchKernel); the folder to put on
    LD_LIBRARY_PATH."""
    lib = directory / "lib"
    lib.mkdir(exist_ok=True)
    source = directory / "fake.c"
    source.write_text(STAND_IN_DRIVER + functions)
    subprocess.run(["gcc", "-shared", "-fPIC", *cflags, "-o", str(lib / "libcuda.so.1"), str(source)], check=True)
    return lib


def build_launch_program(directory: Path, main: str) -> Path:
    """``main`` (C++17 that includes <oxide/launch.hpp>), built with -Wall -Werror as ``directory``/main."""
    (directory / "main.cpp").write_text(main)
    include = Path(oxide.__file__).parent / "include"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(include), str(directory / "main.cpp"), "-o",
                    str(directory / "main"), "-ldl"], check=True)
    return directory / "main"
