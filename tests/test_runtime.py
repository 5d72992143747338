"""The runtime without a GPU: argument checks and packing, specialization choice, code
selection, manifest discovery and staleness, and the errors a machine without CUDA gets.

A fake ``cuda.bindings.driver`` stands in for the driver where a test goes as far as the launch;
it decodes the ``kernelParams`` the runtime hands it, so the packed ABI is checked byte for byte.
"""
from __future__ import annotations

import itertools
import json

import ctypes
import hashlib
import importlib.util
import math
import struct
import sys
import textwrap
import time
import types
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import oxide
from oxide.errors import CudaError
from oxide.runtime import artifacts, device, kernel_errors, launcher, loader
from oxide.runtime.arrays import ArrayView, ViewError, _DLDataType, _DLDevice, _DLTensor, view_of
from oxide.runtime.kernel import Kernel
from oxide.runtime.launch import ArgPacker, grid_for, normalize_dims, scalar_converter
from oxide.runtime.loader import CodeChoice, parse_arch, select_code
from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleManifest, ParamSpec, Precondition, manifest_path
from oxide.runtime.streams import stream_handle

from cuda.bindings import driver as real_driver

# ---------------------------------------------------------------------------------------------
# helpers


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
        self.stream_order: list[tuple[Any, ...]] = []  # event calls: one stream waiting for another

    def cuInit(self, flags: int) -> tuple[Any]:
        return (self.OK,)

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

    def cuFuncSetAttribute(self, fn: str, attr: Any, value: int) -> tuple[Any]:
        self.function_attributes[(fn, attr)] = value
        return (self.OK,)

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
        values = [_C_TYPES[t].from_address(pointers[i]).value for i, t in enumerate(slots)]
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
        else:
            out += ["u64", "i64"] if p.is_view else [p.dtype]
    return out


@pytest.fixture(autouse=True)
def fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    def reset() -> None:
        device._reset_for_tests()
        artifacts._reset_for_tests()
        loader._modules.clear()
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


# ---------------------------------------------------------------------------------------------
# the Kernel handle


def test_kernel_construction_does_no_io_or_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> Any:
        raise AssertionError("constructing a kernel touched the driver")

    monkeypatch.setattr(device, "_import_bindings", boom)
    ns: dict[str, Any] = {}
    code = compile("def k(a, x):\n    '''doc'''\n", "/nonexistent/dir/kmod.py", "exec")
    exec(code, ns)
    k = oxide.kernel(ns["k"])
    assert isinstance(k, Kernel)
    assert k.__name__ == "k" and k.__doc__ == "doc" and k.name == "k"
    start = time.perf_counter()
    for _ in range(50):
        oxide.kernel(ns["k"])
    assert time.perf_counter() - start < 0.02


def test_kernel_options_are_kept() -> None:
    def k(x: Any) -> None: ...

    assert oxide.kernel(bounds_check=False)(k).options == {"bounds_check": False}


def test_calling_a_kernel_directly_is_refused(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale(1.0, FakeArray(), FakeArray()),
        "kernel scale runs on the GPU: launch it with scale[grid, block](...) or scale.launch(..., grid=..., block=...)",
    )


def test_bad_launch_configuration(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale[1],
        "launch scale with scale[grid, block], scale[grid, block, stream] or scale[grid, block, stream, "
        "shared_mem_bytes]; got scale[1]",
    )
    expect_type_error(lambda: m.scale[1.5, 256], "grid must be an int or a tuple of 1 to 3 ints; got 1.5")
    with pytest.raises(ValueError, match=r"a block has at most 1024 threads; got block \(64, 32, 1\) = 2048 threads"):
        m.scale[1, (64, 32)]
    with pytest.raises(ValueError, match="a block needs at least one thread"):
        m.scale[1, 0]
    with pytest.raises(ValueError, match="shared_mem must be a non-negative int"):
        m.scale[1, 32, None, -1]


def test_launch_configs_are_cached(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    assert m.scale[4, 256] is m.scale[4, 256]
    assert m.scale[4, 256].grid == (4, 1, 1)
    assert m.scale[(4, 2), (8, 8, 2), 7, 128].block == (8, 8, 2)
    assert m.scale[(4, 2), (8, 8, 2), 7, 128].stream == 7


def test_normalize_dims_and_grid_for() -> None:
    assert normalize_dims(10, 256) == ((10, 1, 1), (256, 1, 1))
    assert normalize_dims((2, 3), [4, 4, 4]) == ((2, 3, 1), (4, 4, 4))
    assert normalize_dims(np.int64(3), np.int32(32)) == ((3, 1, 1), (32, 1, 1))
    assert grid_for(0) == 0
    assert grid_for(1) == 1
    assert grid_for(256) == 1
    assert grid_for(257) == 2
    assert grid_for(1000, block=128) == 8
    assert Kernel.grid_for(2**24 + 3) == 65537
    with pytest.raises(ValueError):
        grid_for(10, block=0)


# ---------------------------------------------------------------------------------------------
# argument checks: exact messages, all raised before CUDA is touched


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> Any:
        raise AssertionError("an argument check reached the driver")

    monkeypatch.setattr(device, "_import_bindings", boom)


def test_wrong_argument_count(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(lambda: m.saxpy[1, 256](1.0, FakeArray(), FakeArray()), "saxpy() takes 4 arguments (a, x, y, out); got 3")
    expect_type_error(lambda: m.scale.launch(grid=1, block=32), "scale() takes 3 arguments (a, x, out); got 0")


def test_host_numpy_array(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.saxpy[1, 256](2.0, np.zeros(4, np.float32), FakeArray(), FakeArray()),
        "parameter 'x' of saxpy needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU "
        "first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x)",
    )


def test_not_an_array(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.saxpy[1, 256](2.0, FakeArray(), [1.0, 2.0], FakeArray()),
        "parameter 'y' of saxpy needs a device array (an object with __cuda_array_interface__ or __dlpack__); got a list",
    )


def test_wrong_dtype_non_generic(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(4, "<f8"), FakeArray()),
        "parameter 'x' of scale needs f32 elements; got f64",
    )
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(), FakeArray(4, "<c8")),
        "parameter 'out' of scale needs f32 elements; got unsupported element type '<c8'",
    )


def test_no_specialization_for_generic(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.saxpy[1, 256](2, FakeArray(4, "<i4"), FakeArray(4, "<i4"), FakeArray(4, "<i4")),
        "saxpy has no specialization for these arguments (x: i32, y: i32, out: i32); available: (T=f32), (T=f64)",
    )
    expect_type_error(
        lambda: m.saxpy[1, 256](2, FakeArray(4, "<f4"), FakeArray(4, "<f8"), FakeArray(4, "<f4")),
        "saxpy has no specialization for these arguments (x: f32, y: f64, out: f32); available: (T=f32), (T=f64)",
    )


def test_not_1d_and_not_contiguous(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(shape=(3, 4)), FakeArray()),
        "parameter 'x' of scale needs a 1-D array; got shape (3, 4)",
    )
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(4, strides=(8,)), FakeArray()),
        "parameter 'x' of scale needs a contiguous 1-D array; got a stride of 2 elements",
    )
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(4, strides=(6,)), FakeArray()),
        "parameter 'x' of scale needs a contiguous 1-D array; got a stride of 6 bytes",
    )
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(4, mask=object()), FakeArray()),
        "parameter 'x' of scale needs an array without a mask; got a masked __cuda_array_interface__",
    )


def test_read_only_output(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale[1, 256](2.0, FakeArray(readonly=True), FakeArray(readonly=True)),
        "parameter 'out' of scale is written by the kernel; got a read-only array",
    )


def test_bad_scalars(tmp_path: Path, no_cuda: None) -> None:
    m = make_module(tmp_path)
    expect_type_error(
        lambda: m.scale[1, 256]("2", FakeArray(), FakeArray()),
        "parameter 'a' of scale needs a number (f32); got str '2'",
    )
    expect_type_error(
        lambda: m.scale[1, 256](1 + 2j, FakeArray(), FakeArray()),
        "parameter 'a' of scale needs a number (f32); got complex (1+2j)",
    )
    expect_type_error(
        lambda: m.scale[1, 256](None, FakeArray(), FakeArray()),
        "parameter 'a' of scale needs a number (f32); got NoneType None",
    )


INTS_SOURCE = """
from oxide import kernel, i8, i32, i64, u8, u32, boolean, Slice


@kernel
def ints(a: i8, b: i32, c: i64, d: u8, e: u32, f: boolean, x: Slice[i32]) -> None:
    pass
"""
INTS_KERNELS = (
    KernelSpec(
        "ints",
        "ints",
        tuple(ParamSpec(n, "scalar", t) for n, t in zip("abcdef", ("i8", "i32", "i64", "u8", "u32", "bool")))
        + (ParamSpec("x", "slice", "i32"),),
    ),
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.5, 0, 0, 0, 0, True), "parameter 'a' of ints needs an integer (i8); got float 1.5"),
        ((2.0, 0, 0, 0, 0, True), "parameter 'a' of ints needs an integer (i8); got float 2.0"),
        ((np.float32(2), 0, 0, 0, 0, True), "parameter 'a' of ints needs an integer (i8); got numpy.float32 np.float32(2.0)"),
        ((128, 0, 0, 0, 0, True), "parameter 'a' of ints needs an integer in the range of i8 (-128..127); got 128"),
        ((0, 2**31, 0, 0, 0, True), "parameter 'b' of ints needs an integer in the range of i32 (-2147483648..2147483647); got 2147483648"),
        ((0, 0, 2**63, 0, 0, True), "parameter 'c' of ints needs an integer in the range of i64 (-9223372036854775808..9223372036854775807); got 9223372036854775808"),
        ((0, 0, 0, -1, 0, True), "parameter 'd' of ints needs an integer in the range of u8 (0..255); got -1"),
        ((0, 0, 0, 0, np.int64(-5), True), "parameter 'e' of ints needs an integer in the range of u32 (0..4294967295); got -5"),
        ((0, 0, 0, 0, "1", True), "parameter 'e' of ints needs an integer (u32); got str '1'"),
        ((0, 0, 0, 0, 0, 2), "parameter 'f' of ints needs a bool; got int 2"),
        ((0, 0, 0, 0, 0, 1.0), "parameter 'f' of ints needs a bool; got float 1.0"),
    ],
)
def test_bad_integer_scalars(tmp_path: Path, no_cuda: None, args: tuple[Any, ...], message: str) -> None:
    m = make_module(tmp_path, INTS_SOURCE, INTS_KERNELS)
    expect_type_error(lambda: m.ints[1, 32](*args, FakeArray(4, "<i4")), message)


def test_scalar_conversion() -> None:
    f32 = scalar_converter("f32")
    assert f32(2) == 2.0 and type(f32(2)) is float
    assert f32(np.float64(0.5)) == 0.5
    assert f32(np.int16(3)) == 3.0
    assert f32(True) == 1.0
    assert f32(1e40) == math.inf and f32(-1e40) == -math.inf
    assert math.isnan(f32(float("nan")))
    assert scalar_converter("f16")(1e6) == math.inf
    assert scalar_converter("f64")(1e300) == 1e300
    i32 = scalar_converter("i32")
    assert i32(np.int64(-7)) == -7 and type(i32(np.int64(-7))) is int
    assert i32(np.uint8(200)) == 200
    assert i32(True) == 1
    assert scalar_converter("u64")(2**64 - 1) == 2**64 - 1
    b = scalar_converter("bool")
    assert (b(True), b(False), b(np.bool_(True)), b(0), b(1)) == (1, 0, 1, 0, 1)
    bf16 = scalar_converter("bf16")
    assert bf16(1.0) == 0x3F80
    assert bf16(-2.0) == 0xC000
    assert bf16(1.0 + 2**-8) == 0x3F80  # a tie rounds to even
    assert bf16(1.0 + 3 * 2**-9) == 0x3F81
    assert bf16(float("inf")) == 0x7F80
    assert bf16(float("nan")) == 0x7FC0


# ---------------------------------------------------------------------------------------------
# arrays


def test_view_of_cuda_array_interface() -> None:
    v = view_of(FakeArray(10, "<f8", ptr=0x1234))
    assert (v.ptr, v.length, v.dtype, v.readonly) == (0x1234, 10, "f64", False)
    assert view_of(FakeArray(1, strides=(400,))).length == 1  # one element: any stride is contiguous
    assert view_of(FakeArray(3, strides=(4,))).length == 3
    assert view_of(FakeArray(3, "|b1")).dtype == "bool"
    assert view_of(FakeArray(3, "|u1")).dtype == "u8"
    assert view_of(FakeArray(0, ptr=0)).ptr == 0


def test_view_of_dlpack() -> None:
    a = FakeDLPack((5,), code=2, bits=32, ptr=0x5000, byte_offset=16)
    v = view_of(a)
    assert (v.ptr, v.length, v.dtype) == (0x5010, 5, "f32")
    assert view_of(FakeDLPack((5,), code=4, bits=16)).dtype == "bf16"
    assert view_of(FakeDLPack((5,), code=6, bits=8)).dtype == "bool"
    assert view_of(FakeDLPack((5,), code=0, bits=64)).dtype == "i64"
    assert view_of(FakeDLPack((5,), strides=(1,))).length == 5
    assert view_of(FakeDLPack((5,), device_type=13)).length == 5  # managed memory
    with pytest.raises(ViewError, match="needs a contiguous 1-D array; got a stride of 3 elements"):
        view_of(FakeDLPack((5,), strides=(3,)))
    with pytest.raises(ViewError, match=r"needs a 1-D array; got shape \(2, 3\)"):
        view_of(FakeDLPack((2, 3)))
    with pytest.raises(ViewError) as info:
        view_of(FakeDLPack((5,), device_type=1))
    assert info.value.render("x", "k") == (
        "parameter 'x' of k needs a device array; got a test_runtime.FakeDLPack (host memory) — copy it to the "
        "GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x)"
    )
    with pytest.raises(ViewError, match="needs a CUDA device array; got a test_runtime.FakeDLPack on DLPack device type 10"):
        view_of(FakeDLPack((5,), device_type=10))


def test_dlpack_array_through_a_kernel(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](2.0, FakeDLPack((7,), ptr=0x9000), FakeArray(7, ptr=0xA000))
    assert fake_driver.launches[0]["values"] == [2.0, 0x9000, 7, 0xA000, 7]


def test_array_interface_error_is_reported() -> None:
    class Refuses:
        @property
        def __cuda_array_interface__(self) -> Any:
            raise RuntimeError("Can't export a tensor that requires grad")

    with pytest.raises(ViewError) as info:
        view_of(Refuses())
    assert info.value.render("x", "k") == (
        "parameter 'x' of k needs a device array; reading __cuda_array_interface__ of a test_runtime.Refuses "
        "failed: Can't export a tensor that requires grad"
    )


# ---------------------------------------------------------------------------------------------
# specialization choice and the packed parameters (through the fake driver)


def test_generic_choice_by_view_dtypes(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    assert m.saxpy.specializations == [{"T": "f32"}, {"T": "f64"}]
    m.saxpy[3, 128](2, FakeArray(5, "<f8", ptr=0x100), FakeArray(5, "<f8", ptr=0x200), FakeArray(5, "<f8", ptr=0x300))
    m.saxpy[(2, 2), (16, 16), 0xBEEF, 64](np.float64(0.25), FakeArray(6, ptr=0x1000), FakeArray(6, ptr=0x2000), FakeArray(6, ptr=0x3000))
    first, second = fake_driver.launches
    assert first["fn"] == "saxpy__f64"
    assert first["values"] == [2.0, 0x100, 5, 0x200, 5, 0x300, 5]
    assert (first["grid"], first["block"], first["shared"], first["stream"]) == ((3, 1, 1), (128, 1, 1), 0, 0)
    assert second["fn"] == "saxpy__f32"
    assert second["values"] == [0.25, 0x1000, 6, 0x2000, 6, 0x3000, 6]
    assert (second["grid"], second["block"], second["shared"], second["stream"]) == ((2, 2, 1), (16, 16, 1), 64, 0xBEEF)
    assert fake_driver.loaded == [b"CUBIN sm_90"]  # one module load for both specializations
    assert fake_driver.functions == ["saxpy__f64", "saxpy__f32"]


def test_launch_method_and_stream_objects(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}

    class CoreStream:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 0x51)

    class CupyStream:
        cuda_stream = 0x52

    for stream, handle in ((None, 0), (7, 7), (real_driver.CUstream(0x53), 0x53), (CoreStream(), 0x51), (CupyStream(), 0x52)):
        m.scale.launch(1.5, FakeArray(), FakeArray(), grid=(1,), block=64, stream=stream, shared_mem=16)
        launch = fake_driver.launches[-1]
        assert (launch["stream"], launch["shared"], launch["values"][0]) == (handle, 16, 1.5)


def test_cluster_and_cooperative_launches(tmp_path: Path, fake_driver: FakeDriver) -> None:
    """``launch(cluster=, cooperative=)`` goes through cuLaunchKernelEx with those attributes;
    what the device cannot do is refused before anything is launched."""
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    x, out = FakeArray(), FakeArray()
    m.scale.launch(1.5, x, out, grid=(8, 2), block=64, cluster=(2, 2))
    m.scale.launch(1.5, x, out, grid=1056, block=256, cooperative=True, stream=7)  # 8 per SM x 132 SMs
    m.scale.launch(1.5, x, out, grid=32, block=32, cluster=16, cooperative=True)
    first, second, third = fake_driver.launches
    assert (first["grid"], first["cluster"], "cooperative" in first) == ((8, 2, 1), (2, 2, 1), False)
    assert (second["grid"], second["cooperative"], "cluster" in second, second["stream"]) == ((1056, 1, 1), True, False, 7)
    assert (third["cluster"], third["cooperative"]) == ((16, 1, 1), True)
    assert first["values"] == second["values"] == third["values"][:1] + third["values"][1:]
    non_portable = real_driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    assert fake_driver.function_attributes == {("scale", non_portable): 1}  # 16 blocks: more than portable
    for kwargs, error, message in [
        (dict(grid=(6, 2), cluster=4), ValueError,
         "grid (6, 2, 1) is not a whole number of clusters (4, 1, 1): each grid dimension must be a multiple of the cluster's"),
        (dict(grid=4, cluster=(2, 0)), ValueError, "a cluster has at least one block in each dimension; got cluster (2, 0)"),
        (dict(grid=4, cluster="2"), TypeError, "cluster must be an int or a tuple of 1 to 3 ints; got '2'"),
        (dict(grid=4, cooperative=1), TypeError, "cooperative must be True or False; got 1"),
        (dict(grid=1057, block=256, cooperative=True), ValueError,
         "a cooperative launch of scale needs all its blocks resident at once: at most 1056 blocks of 256 threads "
         "(8 per multiprocessor x 132) on Fake GPU; got grid (1057, 1, 1) = 1057 blocks"),
    ]:  # fmt: skip
        with pytest.raises(error) as info:
            m.scale.launch(1.5, x, out, **{"block": 64, **kwargs})
        assert str(info.value) == message
    fake_driver.capability = (8, 0)
    device._devices.clear()
    with pytest.raises(ValueError) as info:
        m.scale.launch(1.5, x, out, grid=4, block=64, cluster=2)
    assert str(info.value) == ("thread block clusters need a GPU of compute capability 9.0 or newer; Fake GPU (cuda:0) "
                               "is sm_80: launch scale without cluster=")
    assert len(fake_driver.launches) == 3
    m.scale.launch(1.5, x, out, grid=4, block=64, cooperative=True)  # cooperative launches need no sm_90
    assert fake_driver.launches[-1]["cooperative"] is True


def test_stream_handle_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="cannot use a str as a CUDA stream"):
        stream_handle("default")


def test_every_scalar_type_is_packed(tmp_path: Path, fake_driver: FakeDriver) -> None:
    names = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "bool")
    params = tuple(ParamSpec(f"p_{t}", "scalar", t) for t in names) + (ParamSpec("out", "mut_slice", "u64"),)
    source = "from oxide import kernel\n\n@kernel\ndef every(*args):\n    pass\n"
    m = make_module(tmp_path, source, (KernelSpec("every", "every", params),))
    fake_driver.signatures = {"every": slot_types(params)}
    args = (-5, -300, -70000, -(2**40), 250, 65000, 2**32 - 1, 2**64 - 1, 1.5, 1.0, 0.1, 1e300, True)
    m.every[1, 1](*args, FakeArray(10, "<u8", ptr=0xDEAD0))
    values = fake_driver.launches[0]["values"]
    f16_bits = int(np.array(1.5, np.float16).view(np.uint16))
    assert values == [-5, -300, -70000, -(2**40), 250, 65000, 2**32 - 1, 2**64 - 1, f16_bits, 0x3F80,
                      pytest.approx(0.1, rel=1e-7), 1e300, 1, 0xDEAD0, 10]  # fmt: skip
    assert np.float32(values[10]) == np.float32(0.1)


def test_packer_layout() -> None:
    p = ArgPacker(saxpy_params("f32"))
    assert p.slots == 7 and p.struct.size == 56
    address = p.pack([3.0, 1, 2, 3, 4, 5, 6])
    pointers = (ctypes.c_void_p * 7).from_address(address)
    assert [pointers[i] - ctypes.addressof(p.buffer) for i in range(7)] == [0, 8, 16, 24, 32, 40, 48]
    assert struct.unpack_from("=f", p.buffer, 0)[0] == 3.0
    assert ArgPacker(()).address == 0


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


def test_generic_choice_by_scalars(tmp_path: Path, fake_driver: FakeDriver) -> None:
    kernels = FILL_KERNELS
    m = make_module(tmp_path, SCALAR_GENERIC_SOURCE, kernels)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in kernels}
    out = FakeArray(3, "<i8")
    m.fill[1, 32](5, out)
    m.fill[1, 32](np.int64(5), out)
    m.fill[1, 32](2**40, out)  # does not fit i32
    assert [launch["fn"] for launch in fake_driver.launches] == ["fill__i32", "fill__i64", "fill__i64"]
    expect_type_error(
        lambda: m.fill[1, 32](2**70, out),
        "fill has no specialization for these arguments (out: i64, value: int); available: (T=i32), (T=i64)",
    )


def test_empty_grid_launches_nothing(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[m.scale.grid_for(0), 256](1.0, FakeArray(0), FakeArray(0))
    assert fake_driver.launches == []
    expect_type_error(lambda: m.scale[0, 256](1.0, [], FakeArray(0)), "parameter 'x' of scale needs a device array "
                      "(an object with __cuda_array_interface__ or __dlpack__); got a list")  # fmt: skip


def test_launch_failure_becomes_cuda_error(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    fake_driver.launch_result = real_driver.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(CudaError) as info:
        m.scale[2, 64](1.0, FakeArray(), FakeArray())
    assert str(info.value) == (
        "launching kernel scale (grid (2, 1, 1), block (64, 1, 1)) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES "
        "(fake description)"
    )
    assert info.value.name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    assert info.value.code == int(real_driver.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)


def test_missing_symbol_becomes_cuda_error(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {}
    with pytest.raises(CudaError, match=r"finding entry point 'scale' of kernel scale failed: CUDA_ERROR_NOT_FOUND"):
        m.scale[2, 64](1.0, FakeArray(), FakeArray())


def test_ptx_load_failure_explains(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, cubins={}, ptx={"sm_90": "m.ptx"})
    fake_driver.load_result = real_driver.CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    with pytest.raises(CudaError) as info:
        m.scale[2, 64](1.0, FakeArray(), FakeArray())
    assert "failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (fake description); the PTX for sm_90 is newer than " in str(info.value)


def test_ptx_is_loaded_null_terminated(tmp_path: Path, fake_driver: FakeDriver) -> None:
    fake_driver.capability = (10, 0)
    m = make_module(tmp_path, cubins={"sm_90": "m.sm_90.cubin"}, ptx={"sm_90": "m.ptx"})
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert fake_driver.loaded == [b"// PTX sm_90\0"]


def test_no_context_retains_the_primary_context(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    assert fake_driver.ctx == 0
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert fake_driver.ctx == 0xC0
    assert len(fake_driver.launches) == 1


def test_launch_overhead_is_small(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    fake_driver.cuLaunchKernel = lambda *a: (FakeDriver.OK,)  # type: ignore[method-assign]
    x, y, out = FakeArray(), FakeArray(), FakeArray()
    launch = m.saxpy[4, 256]
    launch(2.0, x, y, out)
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(1000):
            launch(2.0, x, y, out)
        best = min(best, (time.perf_counter() - start) / 1000)
    assert best < 50e-6, f"{best * 1e6:.1f} µs per launch on the host"


# ---------------------------------------------------------------------------------------------
# code selection


@pytest.mark.parametrize(
    ("cubins", "ptx", "capability", "expected"),
    [
        ({"sm_80": "a", "sm_90": "b"}, {}, (9, 0), CodeChoice("cubin", "sm_90", "b")),
        ({"sm_80": "a", "sm_90": "b"}, {}, (8, 0), CodeChoice("cubin", "sm_80", "a")),
        ({"sm_80": "a", "sm_90": "b"}, {}, (8, 6), CodeChoice("cubin", "sm_80", "a")),
        ({"sm_80": "a", "sm_86": "c", "sm_90": "b"}, {}, (8, 9), CodeChoice("cubin", "sm_86", "c")),
        ({"sm_80": "a", "sm_86": "c"}, {"sm_80": "p"}, (8, 6), CodeChoice("cubin", "sm_86", "c")),
        ({"sm_90": "b", "sm_90a": "x"}, {}, (9, 0), CodeChoice("cubin", "sm_90a", "x")),
        ({"sm_90a": "x"}, {"sm_90": "p"}, (9, 0), CodeChoice("cubin", "sm_90a", "x")),
        ({"sm_100a": "x"}, {"sm_90": "p"}, (10, 3), CodeChoice("ptx", "sm_90", "p")),
        ({"sm_100f": "f"}, {}, (10, 3), CodeChoice("cubin", "sm_100f", "f")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_90": "p"}, (12, 0), CodeChoice("ptx", "sm_90", "p")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_80": "p8", "sm_90": "p9"}, (10, 0), CodeChoice("ptx", "sm_90", "p9")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_80": "p8", "sm_90": "p9"}, (8, 9), CodeChoice("cubin", "sm_80", "a")),
        ({}, {"sm_80": "p8", "sm_120": "p12"}, (9, 0), CodeChoice("ptx", "sm_80", "p8")),
        ({"sm_120": "c12"}, {}, (12, 1), CodeChoice("cubin", "sm_120", "c12")),
        ({}, {"compute_75": "p"}, (8, 0), CodeChoice("ptx", "compute_75", "p")),
    ],
)
def test_select_code(
    cubins: dict[str, str], ptx: dict[str, str], capability: tuple[int, int], expected: CodeChoice
) -> None:
    assert select_code(cubins, ptx, capability) == expected


def test_select_code_without_a_match() -> None:
    with pytest.raises(CudaError) as info:
        select_code({"sm_90": "b", "sm_80": "a"}, {"sm_80": "p"}, (7, 5), module="sample.kernels", device_name="Tesla T4")
    assert str(info.value) == (
        "module sample.kernels has no code for this GPU: the device is sm_75 (Tesla T4); the package has cubins "
        "for sm_80, sm_90 and PTX for sm_80. Rebuild the package with sm_75 among its target architectures."
    )
    with pytest.raises(CudaError, match="the package has cubins for sm_90 and PTX for none"):
        select_code({"sm_90": "b"}, {}, (10, 0))


def test_parse_arch() -> None:
    assert parse_arch("sm_90") == (9, 0, "")
    assert parse_arch("sm_86") == (8, 6, "")
    assert parse_arch("sm_120") == (12, 0, "")
    assert parse_arch("sm_90a") == (9, 0, "a")
    assert parse_arch("compute_100f") == (10, 0, "f")
    assert parse_arch("gfx90a") is None
    assert parse_arch("sm_9") is None


# ---------------------------------------------------------------------------------------------
# manifest discovery, staleness and JIT


def test_kernel_source_and_module_name() -> None:
    def f() -> None: ...

    assert artifacts.kernel_source(f) == (Path(__file__), __name__)
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("def g():\n    pass\n", "/somewhere/script.py", "exec"), ns)
    assert artifacts.kernel_source(ns["g"]) == (Path("/somewhere/script.py"), "script")
    exec(compile("def h():\n    pass\n", "<stdin>", "exec"), ns)
    assert artifacts.kernel_source(ns["h"]) == (None, "__main__")


def test_manifest_found_next_to_the_source(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    source, module = artifacts.kernel_source(m.saxpy.func)
    located = artifacts.locate_manifest(source, module, lambda: pytest.fail("no device needed"))
    assert located.path == tmp_path / "_oxide" / f"{m.__name__}.json"
    assert located.directory == tmp_path / "_oxide"
    assert not located.jit
    assert [k.symbol for k in located.manifest.kernels_named("saxpy")] == ["saxpy__f32", "saxpy__f64"]
    assert artifacts.locate_manifest(source, module, lambda: "sm_90") is located  # cached


def test_no_manifest_without_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "_build_installed", lambda: False)
    monkeypatch.delenv("OXIDE_JIT")
    m = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError) as info:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    expected_path = tmp_path / "_oxide" / f"{m.__name__}.json"
    assert str(info.value) == (
        f"no precompiled code for module {m.__name__}: {expected_path} does not exist. Build the package with its "
        "oxide_build backend (pip install . installs it with its kernels compiled), or install oxide-cuda[build] "
        "to compile kernels on first launch"
    )


def test_no_manifest_with_jit_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "_build_installed", lambda: True)
    m = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError, match="or unset OXIDE_JIT=0 to let oxide_build compile it on first launch"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def _fake_jit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, calls: list[tuple[Path, str, str]]) -> None:
    def jit_manifest(source_path: Path, module_name: str, arch: str) -> Path:
        calls.append((source_path, module_name, arch))
        cache = tmp_path / "jit-cache"
        cache.mkdir(exist_ok=True)
        m = ModuleManifest(
            module=module_name,
            source=source_path.name,
            source_sha256=hashlib.sha256(source_path.read_bytes()).hexdigest(),
            kernels=SAXPY_KERNELS,
            cubins={arch: f"{module_name}.{arch}.cubin"},
        )
        (cache / f"{module_name}.{arch}.cubin").write_bytes(b"JIT " + arch.encode())
        path = cache / f"{module_name}.json"
        path.write_text(m.to_json())
        return path

    fake = types.ModuleType("oxide_build.jit")
    fake.jit_manifest = jit_manifest  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oxide_build.jit", fake)
    monkeypatch.setattr(artifacts, "_build_installed", lambda: True)
    monkeypatch.delenv("OXIDE_JIT")


def test_no_manifest_compiles_with_jit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    m = make_module(tmp_path, write_manifest=False)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert calls == [(tmp_path / f"{m.__name__}.py", m.__name__, "sm_90")]
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_stale_manifest_recompiles_with_jit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(calls) == 1
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_stale_manifest_warns_once_without_compiler(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    with pytest.warns(oxide.runtime.StaleCodeWarning) as record:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.saxpy[1, 32](1.0, FakeArray(), FakeArray(), FakeArray())  # the same module: no second warning
    assert len(record) == 1
    text = str(record[0].message)
    assert text.startswith(f"oxide: the precompiled kernels of module {m.__name__} (")
    assert text.endswith(
        "; running the old code. Rebuild the package (pip install .) or install oxide-cuda[build] to recompile on "
        "first launch."
    )
    assert fake_driver.loaded == [b"CUBIN sm_90"]


def test_fresh_manifest_does_not_warn(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def _helper_module(directory: Path, text: str = "def square(x):\n    return x * x\n") -> tuple[Path, str]:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "helpers.py"
    path.write_text(text)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_changed_device_function_module_makes_the_kernels_stale(tmp_path: Path, fake_driver: FakeDriver) -> None:
    helpers, sha = _helper_module(tmp_path / "common")
    sources = {"common/helpers.py": sha}
    fresh = make_module(tmp_path, sources=sources)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.scale[1, 32](1.0, FakeArray(), FakeArray())
    helpers.write_text(helpers.read_text() + "# changed\n")
    stale = make_module(tmp_path, sources=sources)
    with pytest.warns(oxide.runtime.StaleCodeWarning) as record:
        stale.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(record) == 1
    assert f"were built from a different version of {helpers}; running the old code" in str(record[0].message)
    assert fake_driver.loaded == [b"CUBIN sm_90", b"CUBIN sm_90"]


def test_dependencies_are_compared_relative_to_the_module(tmp_path: Path) -> None:
    helpers, sha = _helper_module(tmp_path / "lib")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "kernels.py").write_text("pass\n")
    manifest = ModuleManifest(
        module="pkg.kernels", source="kernels.py",
        source_sha256=hashlib.sha256(b"pass\n").hexdigest(), kernels=(), cubins={},
        sources={"../lib/helpers.py": sha, "../gone.py": "0" * 64},  # a file not there is not compared
    )  # fmt: skip
    assert ModuleManifest.from_json(manifest.to_json()) == manifest
    assert artifacts.changed_source(pkg / "kernels.py", manifest) is None
    helpers.write_text("def square(x):\n    return x * x * 1\n")
    assert artifacts.changed_source(pkg / "kernels.py", manifest) == pkg / "../lib/helpers.py"
    (pkg / "kernels.py").write_text("pass  # changed\n")
    assert artifacts.changed_source(pkg / "kernels.py", manifest) == pkg / "kernels.py"  # its own source first
    # a manifest written before the field existed reads as having no other sources
    old = json.loads(manifest.to_json())
    del old["sources"]
    assert ModuleManifest.from_json(json.dumps(old)).sources == {}


def test_changed_device_function_module_recompiles_with_jit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    helpers, sha = _helper_module(tmp_path)
    helpers.write_text("# changed since the build\n")
    m = make_module(tmp_path, sources={"helpers.py": sha})
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert calls == [(tmp_path / f"{m.__name__}.py", m.__name__, "sm_90")]
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_compiled_manifest_records_the_device_function_modules(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    import shutil

    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import module_manifest

    project = tmp_path / "scanproj"
    shutil.copytree(Path(__file__).parent / "packages" / "scanproj", project)
    source = project / "mylib" / "sub" / "kernels.py"
    compiled = compile_module(source, "mylib.sub.kernels", CompileOptions(archs=("sm_90",), link_cubins=False), root=project)
    manifest = module_manifest(compiled)
    helpers = project / "mylib" / "helpers.py"
    assert manifest.sources.get("../helpers.py") == hashlib.sha256(helpers.read_bytes()).hexdigest()
    assert "kernels.py" not in manifest.sources  # the module's own source is source_sha256
    assert artifacts.changed_source(source, manifest) is None
    helpers.write_text(helpers.read_text() + "\n# changed\n")
    assert artifacts.changed_source(source, manifest) == source.parent / "../helpers.py"


def test_jit_cache_key_covers_the_imported_tree_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llvmlite")
    import shutil

    from oxide_build import jit

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "scanproj"
    shutil.copytree(Path(__file__).parent / "packages" / "scanproj", project)
    source = project / "mylib" / "sub" / "kernels.py"
    first = jit.jit_manifest(source, "mylib.sub.kernels", "sm_90")
    assert jit.jit_manifest(source, "mylib.sub.kernels", "sm_90") == first
    helpers = project / "mylib" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# changed\n")
    assert jit.jit_manifest(source, "mylib.sub.kernels", "sm_90") != first


def test_kernel_missing_from_manifest(tmp_path: Path) -> None:
    m = make_module(tmp_path, kernels=SAXPY_KERNELS[:2])
    with pytest.raises(CudaError, match="kernel scale is not in the compiled module"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def test_unreadable_manifest(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    manifest_path(tmp_path, m.__name__).write_text('{"format": 99}')
    with pytest.raises(CudaError, match="cannot read the kernel manifest of module .*manifest format 99"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


# ---------------------------------------------------------------------------------------------
# no GPU, no driver


def test_no_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoLibcuda:
        CUresult = real_driver.CUresult

        def cuInit(self, flags: int) -> Any:
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.')

    monkeypatch.setattr(device, "_import_bindings", lambda: NoLibcuda())
    m = make_module(tmp_path)
    with pytest.raises(CudaError) as info:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    lib = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so"
    assert str(info.value) == f"no CUDA driver found ({lib} could not be loaded): oxide kernels need an NVIDIA GPU and driver"
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoGpu(FakeDriver):
        def cuInit(self, flags: int) -> tuple[Any]:
            return (real_driver.CUresult.CUDA_ERROR_NO_DEVICE,)

    monkeypatch.setattr(device, "_import_bindings", lambda: NoGpu())
    with pytest.raises(CudaError) as info:
        oxide.runtime.synchronize()
    assert str(info.value) == "no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE): oxide kernels need an NVIDIA GPU"


def test_no_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ImportError("No module named 'cuda'")

    monkeypatch.setattr(device, "_import_bindings", missing)
    with pytest.raises(CudaError, match=r"^cuda-bindings is not installed .*pip install cuda-bindings$"):
        oxide.runtime.DeviceArray.empty(4, "f32")


def test_other_init_errors_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(FakeDriver):
        def cuInit(self, flags: int) -> tuple[Any]:
            return (real_driver.CUresult.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,)

    monkeypatch.setattr(device, "_import_bindings", lambda: Broken())
    with pytest.raises(CudaError, match=r"^cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH \(fake description\)$"):
        device.driver()


def test_real_bindings_without_a_driver_give_one_line() -> None:
    from conftest import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(CudaError) as info:
        device.driver()
    assert "\n" not in str(info.value)


def test_device_array_dtypes() -> None:
    from oxide.runtime.device_array import _numpy_dtype

    assert _numpy_dtype("f32") == np.float32
    assert _numpy_dtype(oxide.f64) == np.float64
    assert _numpy_dtype(np.int16) == np.int16
    with pytest.raises(TypeError, match="DeviceArray cannot hold elements of type 'f128'"):
        _numpy_dtype("f128")
    a = oxide.runtime.DeviceArray(0x1000, (5,), "f32", owned=False)
    assert a.__cuda_array_interface__ == {
        "version": 3, "shape": (5,), "typestr": "<f4", "data": (0x1000, False), "strides": None, "stream": None,
    }  # fmt: skip
    assert view_of(a) == ArrayView(0x1000, 5, "f32", False, a)


class _MemoryDriver(FakeDriver):
    """FakeDriver with device memory calls, recorded in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, ...]] = []
        self.next_ptr = 0x900000

    def _alloc(self, name: str, nbytes: int, *stream: int) -> tuple[Any, int]:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 0x10000
        self.calls.append((name, nbytes, *stream))
        return self.OK, ptr

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, int]:
        return self._alloc("cuMemAlloc", nbytes)

    def cuMemAllocAsync(self, nbytes: int, stream: int) -> tuple[Any, int]:
        return self._alloc("cuMemAllocAsync", nbytes, stream)

    def __getattr__(self, name: str) -> Any:
        if name in ("cuMemsetD8", "cuMemsetD8Async", "cuMemFree", "cuMemFreeAsync", "cuMemcpyHtoDAsync",
                    "cuMemcpyDtoH", "cuMemcpyDtoHAsync", "cuStreamSynchronize"):  # fmt: skip
            def call(*args: Any) -> tuple[Any]:
                self.calls.append((name, *(a if isinstance(a, int) else type(a).__name__ for a in args)))
                return (self.OK,)

            return call
        raise AttributeError(name)


def test_device_array_zeros_and_stream_ordered_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    drv = _MemoryDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    DeviceArray = oxide.runtime.DeviceArray
    z = DeviceArray.zeros((2, 3), "f64")
    assert drv.calls == [("cuMemAlloc", 48), ("cuMemsetD8", 0x900000, 0, 48)]
    assert (z.shape, z.dtype, z.device, z.__cuda_array_interface__["stream"]) == ((2, 3), np.float64, 0, None)

    class TorchLikeStream:
        cuda_stream = 0x5E

    drv.calls.clear()
    s = DeviceArray.zeros(4, "i32", stream=TorchLikeStream())
    h = DeviceArray.from_numpy(np.arange(3, dtype=np.float32), stream=0x77)
    h.to_numpy()
    assert s.__cuda_array_interface__["stream"] == 0x5E
    del s
    h.free()
    assert drv.calls == [
        ("cuMemAllocAsync", 16, 0x5E), ("cuMemsetD8Async", 0x910000, 0, 16, 0x5E),
        ("cuMemAllocAsync", 12, 0x77), ("cuMemcpyHtoDAsync", 0x920000, "ndarray", 12, 0x77),
        ("cuMemcpyDtoHAsync", "ndarray", 0x920000, 12, 0x77), ("cuStreamSynchronize", 0x77),
        ("cuMemFreeAsync", 0x910000, 0x5E), ("cuMemFreeAsync", 0x920000, 0x77),
    ]  # fmt: skip
    drv.calls.clear()
    e = DeviceArray.empty(0, stream=0x77)  # nothing to allocate
    assert (e.ptr, drv.calls) == (0, [])
    assert DeviceArray.from_numpy(np.zeros(2, np.int8), stream=0).__cuda_array_interface__["stream"] == 1
    with pytest.raises(TypeError, match="cannot use a str as a CUDA stream"):
        DeviceArray.empty(4, stream="s")


# ---------------------------------------------------------------------------------------------
# device-side errors: the failure record, its set-up at load and its report on the host

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


def test_error_record_is_set_up_when_a_module_loads(tmp_path: Path, fake_driver: FakeDriver) -> None:
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    m1 = make_module(tmp_path, error_sites=SITES)
    m2 = make_module(tmp_path, error_sites=SITES[:1])
    m3 = make_module(tmp_path)  # no checks: its globals are not touched
    m1.scale[1, 32](1.0, FakeArray(), FakeArray())
    m2.scale[1, 32](1.0, FakeArray(), FakeArray())
    m3.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(fake_driver.host_allocations) == 1  # one record per context
    buf, flags = fake_driver.host_allocations[0]
    assert flags == int(real_driver.CU_MEMHOSTREGISTER_DEVICEMAP) | int(real_driver.CU_MEMHOSTREGISTER_PORTABLE)
    assert list(record_words(fake_driver)) == [0, 0, 0, 0, 0]  # zeroed, not left as allocated
    device_address = ctypes.addressof(buf) + FakeDriver.DEVICE_OFFSET
    for mod, module_id in (("module1", 1), ("module2", 2)):
        assert fake_driver.global_value(mod, b"__oxide_error_ptr") == device_address
        assert fake_driver.global_value(mod, b"__oxide_module_id") == module_id
    assert not any(mod == "module3" for mod, _ in fake_driver.globals)
    assert [r.context for r in kernel_errors.watched_records()] == [0xC0]


def test_bounds_failure_is_raised_at_the_next_launch(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, error_sites=SITES)
    fake_driver.signatures = {"scale": SCALE_SLOTS}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    fail_on_device(fake_driver, 1, 1, index=1000, length=1000)
    with pytest.raises(oxide.KernelError) as info:
        m.scale[1, 32](2.0, FakeArray(), FakeArray())
    e = info.value
    assert str(e) == "bounds check failed in kernel scale at pkg/kernels.py:12:18: x[i] with index 1000 but length 1000"
    assert (e.kernel, e.location, e.index, e.length) == ("scale", "pkg/kernels.py:12:18", 1000, 1000)
    assert len(fake_driver.launches) == 1  # raised before launching
    assert list(record_words(fake_driver)) == [0, 0, 0, 0, 0]  # raised once, then cleared
    m.scale[1, 32](3.0, FakeArray(), FakeArray())
    assert [launch["values"][0] for launch in fake_driver.launches] == [1.0, 3.0]


def test_assert_failure_is_raised_by_synchronize_and_check(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, error_sites=SITES)
    fake_driver.signatures = {"scale": SCALE_SLOTS}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    oxide.runtime.synchronize()
    oxide.runtime.check_kernel_errors()
    fail_on_device(fake_driver, 1, 2)
    with pytest.raises(oxide.KernelError) as info:
        oxide.runtime.synchronize()
    assert fake_driver.synchronized == 2  # it synchronised first
    assert str(info.value) == "assertion failed in kernel scale at pkg/kernels.py:14:5: a > 0: a must be positive"
    assert (info.value.index, info.value.length, info.value.location) == (None, None, "pkg/kernels.py:14:5")
    oxide.runtime.check_kernel_errors()  # nothing left
    fail_on_device(fake_driver, 1, 1, index=-3, length=8)
    with pytest.raises(oxide.KernelError, match=r"x\[i\] with index -3 but length 8$"):
        oxide.runtime.check_kernel_errors()


def test_failure_of_an_unknown_site(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, error_sites=SITES)
    fake_driver.signatures = {"scale": SCALE_SLOTS}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    fail_on_device(fake_driver, 1, 99, 5, 4)
    with pytest.raises(oxide.KernelError) as info:
        oxide.runtime.check_kernel_errors()
    assert str(info.value) == (
        f"a check failed in a kernel of module {m.__name__} (site 99, index 5, length 4), but its manifest does "
        "not describe that site: rebuild the package"
    )


def test_fields_written_after_the_flag_are_waited_for(tmp_path: Path, fake_driver: FakeDriver) -> None:
    import threading

    m = make_module(tmp_path, error_sites=SITES)
    fake_driver.signatures = {"scale": SCALE_SLOTS}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    words = record_words(fake_driver)
    words[0] = 1  # claimed; the fields follow a little later, as over PCIe

    def write_fields() -> None:
        words[3], words[4], words[2], words[1] = 7, 7, 1, 1

    timer = threading.Timer(0.02, write_fields)
    timer.start()
    with pytest.raises(oxide.KernelError, match="with index 7 but length 7"):
        oxide.runtime.check_kernel_errors()
    timer.join()


def test_module_without_error_globals_is_left_alone(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, error_sites=SITES)
    fake_driver.signatures = {"scale": SCALE_SLOTS}
    fake_driver.error_globals = False
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert fake_driver.host_allocations == [] and fake_driver.device_memory == {}
    assert len(fake_driver.launches) == 1


def test_sticky_error_at_synchronize_is_a_cuda_error(fake_driver: FakeDriver) -> None:
    fake_driver.cuCtxSynchronize = lambda: (real_driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)  # type: ignore[method-assign]
    with pytest.raises(CudaError) as info:
        oxide.runtime.synchronize()
    assert str(info.value) == "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (fake description)"
    assert info.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"


# ---------------------------------------------------------------------------------------------
# the compiled launcher (oxide/runtime/_launcher.c), driven through ctypes stand-ins for the
# two driver entry points: it must pack exactly what the Python path packs, and leave every
# case it does not handle to the Python path

needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")

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


@needs_launcher
def test_c_launcher_takes_over_after_the_first_launch(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    x, y, out = FakeArray(5, ptr=0x1000), FakeArray(5, ptr=0x2000), FakeArray(5, ptr=0x3000)
    m.saxpy[3, 128](2.0, x, y, out)
    m.saxpy[3, 128](2.0, x, y, out)
    m.saxpy[(2, 2), (16, 16), 0xBEEF, 64](0.25, x, y, out)
    assert paths(c_driver) == ["python", "c", "c"]
    first, second, third = c_driver.launches
    assert first == {**second, "path": "python"}
    assert third["values"] == [0.25, 0x1000, 5, 0x2000, 5, 0x3000, 5]
    assert (third["grid"], third["block"], third["shared"], third["stream"]) == ((2, 2, 1), (16, 16, 1), 64, 0xBEEF)
    # the other specialization: Python once (its function is not known yet), then C
    d, e = FakeArray(6, "<f8", ptr=0x40), FakeArray(6, "<f8", ptr=0x4000)
    m.saxpy[1, 32](3, d, d, e)
    m.saxpy[1, 32](3, d, d, e)
    assert paths(c_driver)[3:] == ["python", "c"]
    assert c_driver.launches[-1]["fn"] == "saxpy__f64" and c_driver.launches[-1]["values"] == [3.0, 0x40, 6, 0x40, 6, 0x4000, 6]


@needs_launcher
def test_c_launcher_leaves_cluster_and_cooperative_launches_to_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    x, y, out = FakeArray(8, ptr=0x1000), FakeArray(8, ptr=0x2000), FakeArray(8, ptr=0x3000)
    for _ in range(2):
        m.saxpy.launch(2.0, x, y, out, grid=2, block=32)
    for _ in range(2):
        m.saxpy.launch(2.0, x, y, out, grid=2, block=32, cluster=2)
    for _ in range(2):
        m.saxpy.launch(2.0, x, y, out, grid=2, block=32, cooperative=True)
    assert paths(c_driver) == ["python", "c", "python", "python", "python", "python"]
    assert [launch.get("cluster") for launch in c_driver.launches[2:]] == [(2, 1, 1)] * 2 + [None] * 2
    assert [launch.get("cooperative") for launch in c_driver.launches[2:]] == [None] * 2 + [True] * 2


@needs_launcher
def test_launches_wait_for_the_stream_an_array_is_ordered_on(tmp_path: Path, c_driver: CFakeDriver) -> None:
    """An array whose data is ordered on another stream than the launch's (a stream-ordered
    DeviceArray, a CUDA array interface "stream") makes the launch's stream wait for that one
    (an event, on the GPU); on the same stream, or none, the C path launches at once."""
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    DeviceArray = oxide.runtime.DeviceArray
    d = DeviceArray(0x1000, (8,), "f32", owned=False, stream=0x5)
    legacy = FakeArray(8, ptr=0x2000, stream=1)  # the legacy default stream: stream 0 to a launch
    other = FakeArray(8, ptr=0x3000, stream=0x99)
    out = DeviceArray(0x4000, (8,), "f32", owned=False)
    for _ in range(2):
        m.saxpy[1, 32, 0x5](2.0, d, legacy, out)
    assert paths(c_driver) == ["python", "python"] and c_driver.stream_order == [
        ("create",), ("record", 0xE0, 1), ("wait", 0x5, 0xE0), ("record", 0xE0, 1), ("wait", 0x5, 0xE0)]
    c_driver.stream_order.clear()
    for _ in range(2):
        m.saxpy[1, 32](2.0, legacy, legacy, out)  # stream 0: the legacy stream itself
    m.saxpy[1, 32, 0x5](2.0, d, d, out)
    assert paths(c_driver)[2:] == ["c", "c", "c"] and c_driver.stream_order == []
    m.saxpy[1, 32](2.0, d, other, out)
    m.saxpy[1, 32, 0x99](2.0, other, other, out)
    assert paths(c_driver)[5:] == ["python", "c"]
    order = c_driver.stream_order  # one event: each record is waited for before the next
    assert sorted(zip(order[0::2], order[1::2])) == [(("record", 0xE0, 0x5), ("wait", 0, 0xE0)),
                                                     (("record", 0xE0, 0x99), ("wait", 0, 0xE0))]  # fmt: skip
    assert [launch["values"][1] for launch in c_driver.launches] == [0x1000, 0x1000, 0x2000, 0x2000, 0x1000, 0x1000, 0x3000]


@needs_launcher
def test_c_launcher_packs_every_scalar_like_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    names = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "bool")
    params = tuple(ParamSpec(f"p_{t}", "scalar", t) for t in names) + (ParamSpec("out", "mut_slice", "u64"),)
    source = "from oxide import kernel\n\n@kernel\ndef every(*args):\n    pass\n"
    m = make_module(tmp_path, source, (KernelSpec("every", "every", params),))
    c_driver.signatures = {"every": slot_types(params)}
    out = FakeArray(10, "<u8", ptr=0xDEAD0)
    cases = [
        (-5, -300, -70000, -(2**40), 250, 65000, 2**32 - 1, 2**64 - 1, 1.5, 1.0, 0.1, 1e300, True),
        (-128, -(2**15), -(2**31), -(2**63), 0, 0, 0, 0, -0.0, -2.5, -1e-45, -0.0, False),
        (127, 2**15 - 1, 2**31 - 1, 2**63 - 1, 255, 2**16 - 1, 1, 1, 65504.0, 1.0 + 2**-8, 3.4028234663852886e38, 5, 1),
        (0, 0, 0, 0, 0, 0, 0, 0, 6e-8, float("nan"), float("inf"), float("-inf"), 0),
        (True, False, 1, 2, 3, 4, 5, 6, float("-inf"), 1.0 + 3 * 2**-9, 1e-40, 2**60, 1),
        (np.int8(-5), np.int16(3), np.int32(-7), np.int64(2**40), np.uint8(250), np.uint16(6), np.uint32(7),
         np.uint64(2**64 - 1), np.float16(1.5), np.float32(0.1), np.float64(0.1), np.float32(1e30), True),
        (np.int64(1), np.uint8(2), np.int8(3), np.uint32(4), np.int16(5), np.int64(6), np.uint64(7), np.int32(8),
         np.int32(9), np.int64(-10), np.uint16(11), np.int8(-12), np.bool_(True)),
    ]
    for args in cases:
        m.every[1, 1](*args, out)
        m.every[1, 1](*args, out)
    got = paths(c_driver)
    assert got[:10] == ["python"] + ["c"] * 9
    assert got[10:12] == ["python", "c"]  # NumPy scalars: learned at their first launch
    assert got[12:] == ["python", "python"]  # a NumPy bool: always converted by Python
    # the first launch of each case through C compares with the very first, Python, of case 0;
    # every case's two launches must agree, and each must match a Python-only launch of it
    c_driver.launches.clear()
    launcher._ext.set_driver(0, 0)  # C off: the Python path packs each case
    for args in cases:
        m.every[1, 1](*args, out)
    python_values = [launch["values"] for launch in c_driver.launches]
    c_driver.launches.clear()
    launcher._ext.set_driver(*c_driver._oxide_entry_points())
    for args in cases:
        m.every[1, 1](*args, out)
    assert paths(c_driver) == ["c"] * (len(cases) - 1) + ["python"]  # a NumPy bool: Python converts it
    c_values = [launch["values"] for launch in c_driver.launches]
    assert repr(c_values) == repr(python_values)  # repr: NaN compares equal to itself here
    expect_type_error(
        lambda: m.every[1, 1](np.float32(2), *cases[0][1:], out),
        "parameter 'p_i8' of every needs an integer (i8); got numpy.float32 np.float32(2.0)",
    )
    expect_type_error(
        lambda: m.every[1, 1](np.int64(2**40), *cases[0][1:], out),
        "parameter 'p_i8' of every needs an integer in the range of i8 (-128..127); got 1099511627776",
    )


@needs_launcher
def test_c_launcher_leaves_errors_to_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    x, y = FakeArray(), FakeArray()
    m.saxpy[1, 256](2.0, x, x, y)
    m.scale[1, 256](2.0, x, y)
    m.scale[1, 256](2.0, x, y)
    assert paths(c_driver) == ["python", "python", "c"]
    for call, message in [
        (lambda: m.saxpy[1, 256](1.0, x, x), "saxpy() takes 4 arguments (a, x, y, out); got 3"),
        (lambda: m.scale[1, 256](2.0, FakeArray(4, "<f8"), x), "parameter 'x' of scale needs f32 elements; got f64"),
        (lambda: m.scale[1, 256](2.0, x, FakeArray(readonly=True)), "parameter 'out' of scale is written by the kernel; got a read-only array"),
        (lambda: m.scale[1, 256]("2", x, x), "parameter 'a' of scale needs a number (f32); got str '2'"),
        (lambda: m.scale[1, 256](2.0, FakeArray(4, strides=(8,)), x), "parameter 'x' of scale needs a contiguous 1-D array; got a stride of 2 elements"),
        (lambda: m.scale[1, 256](2.0, FakeArray(shape=(2, 2)), x), "parameter 'x' of scale needs a 1-D array; got shape (2, 2)"),
        (lambda: m.scale[1, 256](2.0, np.zeros(4, np.float32), x), "parameter 'x' of scale needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x)"),
        (lambda: m.saxpy[1, 256](2, FakeArray(4, "<i4"), FakeArray(4, "<i4"), FakeArray(4, "<i4")), "saxpy has no specialization for these arguments (x: i32, y: i32, out: i32); available: (T=f32), (T=f64)"),
    ]:  # fmt: skip
        expect_type_error(call, message)
    # handled by the Python path, then launched: a NumPy scalar, an empty grid, a DLPack array
    m.scale[1, 256](np.float32(0.5), x, y)
    m.scale[0, 256](1.0, x, y)
    m.scale[1, 256](1.0, FakeDLPack((4,), ptr=0x77), x)
    assert paths(c_driver)[3:] == ["python", "python"]
    assert c_driver.launches[-1]["values"][1] == 0x77
    # a read-only input is fine where the kernel only reads
    m.scale[1, 256](1.0, FakeArray(readonly=True), x)
    assert paths(c_driver)[-1] == "c"


@needs_launcher
def test_c_launcher_scalar_dispatch_stays_in_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    kernels = FILL_KERNELS
    m = make_module(tmp_path, SCALAR_GENERIC_SOURCE, kernels)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in kernels}
    out = FakeArray(3, "<i8")
    for value in (5, 5, 2**40, 2**40):
        m.fill[1, 32](value, out)
    assert paths(c_driver) == ["python"] * 4
    assert [launch["fn"] for launch in c_driver.launches] == ["fill__i32", "fill__i32", "fill__i64", "fill__i64"]


@needs_launcher
def test_c_launcher_reports_kernel_and_cuda_errors(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path, error_sites=SITES)
    c_driver.signatures = {"scale": SCALE_SLOTS}
    x, y = FakeArray(), FakeArray()
    m.scale[1, 32](1.0, x, y)
    m.scale[1, 32](1.0, x, y)
    assert paths(c_driver) == ["python", "c"]
    fail_on_device(c_driver, 1, 1, index=4, length=4)
    with pytest.raises(oxide.KernelError, match=r"^bounds check failed in kernel scale at pkg/kernels.py:12:18: x\[i\] with index 4 but length 4$"):
        m.scale[1, 32](1.0, x, y)
    assert len(c_driver.launches) == 2
    m.scale[1, 32](1.0, x, y)
    assert paths(c_driver) == ["python", "c", "c"]
    c_driver.c_result = int(real_driver.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    with pytest.raises(CudaError) as info:
        m.scale[2, 64](1.0, x, y)
    assert str(info.value) == (
        "launching kernel scale (grid (2, 1, 1), block (64, 1, 1)) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES "
        "(fake description)"
    )


@needs_launcher
def test_c_launcher_follows_the_current_context(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path)
    c_driver.signatures = {"scale": SCALE_SLOTS}
    x, y = FakeArray(), FakeArray()
    m.scale[1, 32](1.0, x, y)
    m.scale[1, 32](1.0, x, y)
    c_driver.ctx = 0xC1  # another context: its module is loaded there first, by Python
    m.scale[1, 32](1.0, x, y)
    m.scale[1, 32](1.0, x, y)
    c_driver.ctx = 0xC0
    m.scale[1, 32](1.0, x, y)
    assert paths(c_driver) == ["python", "c", "python", "c", "c"]
    assert len(c_driver.loaded) == 2


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


@pytest.fixture
def fake_libs(monkeypatch: pytest.MonkeyPatch) -> tuple[types.ModuleType, types.ModuleType]:
    """Stand-ins for torch and cupy, as far as oxide reads their arrays."""
    torch, cupy = _fake_torch(), _fake_cupy()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return torch, cupy


@needs_launcher
def test_c_launcher_reads_torch_cupy_and_device_arrays(tmp_path: Path, c_driver: CFakeDriver, fake_libs: Any) -> None:
    torch, cupy = fake_libs
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    t = torch.Tensor(8, torch.float32, 0x1000)  # type: ignore[attr-defined]
    c = cupy.ndarray(8, np.float32, 0x2000)  # type: ignore[attr-defined]
    d = oxide.runtime.DeviceArray(0x3000, (8,), "f32", owned=False)
    for _ in range(2):
        m.saxpy[1, 32](2.0, t, c, d)
    assert paths(c_driver) == ["python", "c"]
    assert c_driver.launches[0]["values"] == c_driver.launches[1]["values"] == [2.0, 0x1000, 8, 0x2000, 8, 0x3000, 8]
    t64 = torch.Tensor(8, torch.float64, 0x1000)  # type: ignore[attr-defined]
    c64 = cupy.ndarray(8, np.float64, 0x2000)  # type: ignore[attr-defined]
    o64 = torch.Tensor(8, torch.float64, 0x4000)  # type: ignore[attr-defined]
    m.saxpy[1, 32](2.0, t64, c64, o64)
    m.saxpy[1, 32](2.0, t64, c64, o64)
    assert paths(c_driver)[2:] == ["python", "c"]
    for call, message in [
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, stride=2), c, d), "parameter 'x' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, cuda=False), c, d), "parameter 'x' of saxpy needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, shape=(2, 4)), c, d), "parameter 'x' of saxpy needs a 1-D array; got shape (2, 4)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, t, cupy.ndarray(8, np.float32, 1, stride=8), d), "parameter 'y' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, t, c, torch.Tensor(8, torch.int32, 1)), "saxpy has no specialization for these arguments (x: f32, y: f32, out: i32); available: (T=f32), (T=f64)"),  # type: ignore[attr-defined]
    ]:  # fmt: skip
        expect_type_error(call, message)
    assert len(c_driver.launches) == 4
    # one element: any stride is contiguous, on both paths
    m.saxpy[1, 32](2.0, torch.Tensor(1, torch.float32, 0x5, stride=9), cupy.ndarray(1, np.float32, 0x6, stride=64), d)  # type: ignore[attr-defined]
    assert paths(c_driver)[-1] == "c" and c_driver.launches[-1]["values"][1:5] == [0x5, 1, 0x6, 1]


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


@needs_launcher
@pytest.mark.parametrize("api", ["1.3", "2.0", "1.1", "failing"])
def test_c_launcher_reads_tensors_through_the_dlpack_exchange_api(
    tmp_path: Path, c_driver: CFakeDriver, fake_libs: Any, api: str
) -> None:
    """A tensor type's ``__dlpack_c_exchange_api__`` (major 1, minor >= 2) is how the C path reads
    it; a table of another version, or a reader that fails, leaves the attribute reads."""
    torch, cupy = fake_libs
    major, minor = (int(x) for x in api.split(".")) if api != "failing" else (1, 2)
    exchange = _Exchange(major, minor, fail=api == "failing")
    torch.Tensor.__dlpack_c_exchange_api__ = exchange.capsule
    used = api in ("1.3",)
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    x, y, out = (torch.Tensor(8, torch.float32, 0x1000 * i) for i in (1, 2, 3))
    for _ in range(2):
        m.saxpy[1, 32](2.0, x, y, out)
    assert paths(c_driver) == ["python", "c"]
    assert c_driver.launches[1]["values"] == [2.0, 0x1000, 8, 0x2000, 8, 0x3000, 8]
    assert exchange.calls == (3 if used or api == "failing" else 0)
    # torch.nn.Parameter is read through torch.Tensor's table; another subclass by its attributes
    class Parameter(torch.Tensor):  # type: ignore[name-defined,misc]
        pass

    class Other(torch.Tensor):  # type: ignore[name-defined,misc]
        pass

    torch.nn = types.SimpleNamespace(Parameter=Parameter)
    for cls, reads in ((Parameter, 1 if used or api == "failing" else 0), (Other, 0)):
        w = cls(8, torch.float32, 0x7000)
        m.saxpy[1, 32](2.0, w, y, out)  # learns the type
        before = exchange.calls
        m.saxpy[1, 32](2.0, w, y, out)
        assert paths(c_driver)[-1] == "c" and c_driver.launches[-1]["values"][1:3] == [0x7000, 8]
        assert exchange.calls - before == reads + (2 if used or api == "failing" else 0), cls.__name__
    del c_driver.launches[2:]
    # what the Python path refuses, the exchange API's reading leaves to it
    for call, message in [
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, stride=2), y, out), "parameter 'x' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, cuda=False), y, out), "parameter 'x' of saxpy needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, shape=(2, 4)), y, out), "parameter 'x' of saxpy needs a 1-D array; got shape (2, 4)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, x, y, torch.Tensor(8, torch.int32, 0x9000)), "saxpy has no specialization for these arguments (x: f32, y: f32, out: i32); available: (T=f32), (T=f64)"),  # type: ignore[attr-defined]
    ]:  # fmt: skip
        expect_type_error(call, message)
    assert len(c_driver.launches) == 2
    # a Tensor parameter: shape and strides (in elements) from the DLTensor
    (tmp_path / "t").mkdir()
    tm = _tensor_module(tmp_path / "t", c_driver)
    a = torch.Tensor(0, torch.float32, 0x5000, shape=(4, 6), strides=(1, 4))
    b = torch.Tensor(0, torch.float32, 0x6000, shape=(4, 6), strides=(6, 1))
    before = exchange.calls
    for _ in range(2):
        tm.tadd[1, 32](a, 1.5, b)
    assert paths(c_driver)[2:] == ["python", "c"]
    assert c_driver.launches[-1]["values"] == [0x5000, 4, 6, 1, 4, 1.5, 0x6000, 4, 6, 6, 1]
    assert exchange.calls - before == (2 if used or api == "failing" else 0)


@needs_launcher
@pytest.mark.parametrize("reader", ["exchange", "attributes"])
def test_c_launcher_checks_devices_with_several_gpus(
    tmp_path: Path, c_driver: CFakeDriver, fake_libs: Any, reader: str
) -> None:
    """With several GPUs the C path reads each tensor's device (DLPack's device id, or
    get_device()) and launches only when all are on the current context's device; otherwise,
    or for arrays that do not say (a DeviceArray), the Python path checks and raises."""
    torch, cupy = fake_libs
    if reader == "exchange":
        exchange = _Exchange()
        torch.Tensor.__dlpack_c_exchange_api__ = exchange.capsule
    m = make_module(tmp_path)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    c_driver.devices = 2

    def on(d: int, ptr: int) -> Any:
        t = torch.Tensor(8, torch.float32, ptr)
        t.device_index = d
        c_driver.pointer_devices[ptr] = d  # what the Python path asks the driver
        return t

    c_driver.pointer_devices = {}
    x0, y0, out0 = on(0, 0x1000), on(0, 0x2000), on(0, 0x3000)
    x1, y1, out1 = on(1, 0x11000), on(1, 0x12000), on(1, 0x13000)
    for _ in range(3):
        m.saxpy[1, 32](2.0, x0, y0, out0)
    assert paths(c_driver) == ["python", "c", "c"]
    expect_type_error(lambda: m.saxpy[1, 32](2.0, x0, y1, out0),
                      "the arrays passed to saxpy are on different GPUs ('x' on cuda:0, 'y' on cuda:1, "
                      "'out' on cuda:0); put them on one device")
    # with a stream given, the launch is the current device's: tensors elsewhere are refused
    expect_type_error(lambda: m.saxpy[1, 32, 0](2.0, x1, y1, out1),
                      "parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0, where the kernel "
                      "would run; make cuda:1 current first (torch.cuda.set_device(1), cupy.cuda.Device(1).use(), ...)")
    assert len(c_driver.launches) == 3
    # without one, it runs under the tensors' device (its primary context), on PyTorch's current
    # stream there, and the current context is current again after it
    torch.current_streams[1] = 0x5171
    m.saxpy[1, 32](2.0, x1, y1, out1)
    assert paths(c_driver)[3:] == ["python"]
    assert c_driver.launches[-1]["stream"] == 0x5171 and c_driver.launches[-1]["ctx"] == 0xC01
    assert (c_driver.ctx, c_driver.current_device) == (0xC0, 0)
    c_driver.current_device, c_driver.ctx = 1, 0xC01  # cuda:1 current: C
    m.saxpy[1, 32](2.0, x1, y1, out1)
    assert paths(c_driver)[4:] == ["c"]
    assert c_driver.launches[-1]["values"] == [2.0, 0x11000, 8, 0x12000, 8, 0x13000, 8]
    assert c_driver.launches[-1]["stream"] == 0x5171
    expect_type_error(lambda: m.saxpy[1, 32, 0](2.0, x0, y0, out0), "parameter 'x' of saxpy is on cuda:0, but the "
                      "current device is cuda:1, where the kernel would run; make cuda:0 current first "
                      "(torch.cuda.set_device(0), cupy.cuda.Device(0).use(), ...)")
    # a DeviceArray knows its device when oxide allocated it; one made from a bare pointer does
    # not, and with several GPUs its launches stay in Python, which asks the driver
    known = oxide.runtime.DeviceArray(0x14000, (8,), "f32", owned=False, device=1)
    bare = oxide.runtime.DeviceArray(0x15000, (8,), "f32", owned=False)
    c_driver.pointer_devices.update({0x14000: 1, 0x15000: 1})
    for _ in range(2):
        m.saxpy[1, 32](2.0, x1, y1, known)
    for _ in range(2):
        m.saxpy[1, 32](2.0, x1, y1, bare)
    assert paths(c_driver)[5:] == ["python", "c", "python", "python"]
    wrong = oxide.runtime.DeviceArray(0x16000, (8,), "f32", owned=False, device=0)
    c_driver.pointer_devices[0x16000] = 0
    expect_type_error(lambda: m.saxpy[1, 32](2.0, x1, y1, wrong), "the arrays passed to saxpy are on different "
                      "GPUs ('x' on cuda:1, 'y' on cuda:1, 'out' on cuda:0); put them on one device")
    assert len(c_driver.launches) == 9


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


def _tensor_module(tmp_path: Path, drv: FakeDriver) -> types.ModuleType:
    m = make_module(tmp_path, TENSOR_SOURCE, TENSOR_KERNELS)
    drv.signatures = {k.symbol: slot_types(k.params) for k in TENSOR_KERNELS}
    return m


def _tensor_arrays(torch: Any, cupy: Any) -> list[tuple[Any, Any]]:
    """(a, out) pairs of every reader: CAI (strided and contiguous), DeviceArray, torch, CuPy."""
    return [
        (FakeArray(shape=(3, 4), strides=(4, 12), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000)),
        (oxide.runtime.DeviceArray(0x3000, (2, 5), "f32", owned=False),
         oxide.runtime.DeviceArray(0x4000, (2, 5), "f32", owned=False)),
        (torch.Tensor(0, torch.float32, 0x5000, shape=(4, 6), strides=(1, 4)),
         torch.Tensor(0, torch.float32, 0x6000, shape=(4, 6), strides=(6, 1))),
        (cupy.ndarray(0, np.float32, 0x7000, shape=(7, 2), strides=(4, 28)),
         cupy.ndarray(0, np.float32, 0x8000, shape=(7, 2))),
        (torch.Tensor(0, torch.float32, 0x9000, shape=(0, 3), strides=(3, 1)),  # empty: spans nothing
         cupy.ndarray(0, np.float32, 0x9000, shape=(1, 3), strides=(0, 4))),  # a size-1 dim's stride is kept
    ]  # fmt: skip


@needs_launcher
def test_c_launcher_packs_tensors_like_python(tmp_path: Path, c_driver: CFakeDriver, fake_libs: Any) -> None:
    torch, cupy = fake_libs
    m = _tensor_module(tmp_path, c_driver)
    cases = _tensor_arrays(torch, cupy)
    for a, out in cases:
        m.tadd[1, 32](a, 1.5, out)
        m.tadd[1, 32](a, 2.5, out)
    assert paths(c_driver) == ["python", "c"] * (len(cases) - 1) + ["c", "c"]  # the last: types already known
    c_values = [launch["values"] for launch in c_driver.launches[1::2]]
    assert c_values[0] == [0x1000, 3, 4, 1, 3, 2.5, 0x2000, 3, 4, 4, 1]
    assert c_values[1] == [0x3000, 2, 5, 5, 1, 2.5, 0x4000, 2, 5, 5, 1]
    assert c_values[2] == [0x5000, 4, 6, 1, 4, 2.5, 0x6000, 4, 6, 6, 1]
    assert c_values[3] == [0x7000, 7, 2, 1, 7, 2.5, 0x8000, 7, 2, 2, 1]
    assert c_values[4] == [0x9000, 0, 3, 3, 1, 2.5, 0x9000, 1, 3, 0, 1]
    # the same launches through the Python path alone pack the same bytes
    c_driver.launches.clear()
    launcher._ext.set_driver(0, 0)
    for a, out in cases:
        m.tadd[1, 32](a, 2.5, out)
    assert [launch["values"] for launch in c_driver.launches] == c_values
    assert set(paths(c_driver)) == {"python"}


@needs_launcher
def test_c_launcher_leaves_tensor_errors_to_python(tmp_path: Path, c_driver: CFakeDriver, fake_libs: Any) -> None:
    torch, cupy = fake_libs
    m = _tensor_module(tmp_path, c_driver)
    for a, out in _tensor_arrays(torch, cupy):
        m.tadd[1, 32](a, 1.0, out)  # every reader learned; the plan is configured
    good = FakeArray(shape=(2, 2))
    for call, message in [
        (lambda: m.tadd[1, 32](FakeArray(shape=(4,)), 1.0, good), "parameter 'a' of tadd needs a 2-D array; got shape (4,)"),
        (lambda: m.tadd[1, 32](torch.Tensor(0, torch.float32, 1, shape=(2, 2), strides=(-2, 1)), 1.0, good),
         "parameter 'a' of tadd needs non-negative strides; got (-2, 1) elements"),
        (lambda: m.tadd[1, 32](cupy.ndarray(0, np.float32, 1, shape=(2, 2), strides=(6, 4)), 1.0, good),
         "parameter 'a' of tadd needs strides that are whole elements; got strides of (6, 4) bytes"),
        (lambda: m.tadd[1, 32](FakeArray(shape=(2, 2), strides=(8, 2)), 1.0, good),
         "parameter 'a' of tadd needs strides that are whole elements; got strides of (8, 2) bytes"),
        (lambda: m.tadd[1, 32](torch.Tensor(0, torch.float32, 1, shape=(2, 2), cuda=False), 1.0, good),
         "parameter 'a' of tadd needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(a, device='cuda') or cupy.asarray(a)"),
        (lambda: m.tadd[1, 32](np.zeros((2, 2), np.float32), 1.0, good),
         "parameter 'a' of tadd needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU first, e.g. torch.as_tensor(a, device='cuda') or cupy.asarray(a)"),
        (lambda: m.tadd[1, 32](object(), 1.0, good),
         "parameter 'a' of tadd needs a device array (an object with __cuda_array_interface__ or __dlpack__); got a object"),
        (lambda: m.tadd[1, 32](FakeArray(shape=(2, 2), typestr="<f8"), 1.0, good), "parameter 'a' of tadd needs f32 elements; got f64"),
        (lambda: m.tadd[1, 32](good, 1.0, FakeArray(shape=(2, 2), readonly=True)),
         "parameter 'out' of tadd is written by the kernel; got a read-only array"),
        (lambda: m.tadd[1, 32](good, 1.0, FakeArray(shape=(2, 2), ptr=good.__cuda_array_interface__["data"][0] + 4)),
         "parameter 'a' of tadd overlaps parameter 'out', which the kernel writes; a read-only view must not alias "
         "a writable one — pass a copy, or declare 'a' DisjointSlice/MutSlice to read and write the same memory"),
        (lambda: m.tadd[1, 32](good, "x", good), "parameter 's' of tadd needs a number (f32); got str 'x'"),
    ]:  # fmt: skip
        expect_type_error(call, message)
    launched = len(c_driver.launches)
    # a tensor whose last element ends where the output begins does not overlap it
    m.tadd[1, 32](FakeArray(shape=(2, 2), ptr=0xA000), 1.0, FakeArray(shape=(2, 2), ptr=0xA010))
    assert paths(c_driver)[launched:] == ["c"]


@needs_launcher
def test_c_launcher_selects_constexpr_specializations(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _tensor_module(tmp_path, c_driver)
    x, out = FakeArray(8, ptr=0x100), FakeArray(8, ptr=0x1000)
    for reps in (1, 3, 1, 3):
        m.repeat[1, 32](x, reps, 7, out)
    assert paths(c_driver) == ["python", "python", "c", "c"]
    assert [launch["fn"] for launch in c_driver.launches] == ["repeat_REPS1", "repeat_REPS3"] * 2
    assert c_driver.launches[2]["values"] == c_driver.launches[0]["values"] == [0x100, 8, 7, 0x1000, 8]
    # not a plain int: the Python path converts (a NumPy integer, a bool) or refuses it
    m.repeat[1, 32](x, np.int64(3), 7, out)
    m.repeat[1, 32](x, True, 7, out)
    assert paths(c_driver)[4:] == ["python", "python"]
    assert [launch["fn"] for launch in c_driver.launches[4:]] == ["repeat_REPS3", "repeat_REPS1"]
    for call, message in [
        (lambda: m.repeat[1, 32](x, 2, 7, out), "parameter 'REPS' of repeat must be one of the compiled values 1, 3; got 2"),
        (lambda: m.repeat[1, 32](x, 2**70, 7, out), f"parameter 'REPS' of repeat must be one of the compiled values 1, 3; got {2**70}"),
        (lambda: m.repeat[1, 32](x, 1.0, 7, out), "parameter 'REPS' of repeat is a compile-time int; got float"),
        (lambda: m.repeat[1, 32](x, 3, 2**40, out), "parameter 'k' of repeat needs an integer in the range of i32 (-2147483648..2147483647); got 1099511627776"),
        (lambda: m.repeat[1, 32](x, 3, out), "repeat() takes 4 arguments (x, REPS, k, out); got 3"),
    ]:  # fmt: skip
        expect_type_error(call, message)
    assert len(c_driver.launches) == 6


# ---------------------------------------------------------------------------------------------
# launch preconditions in the C launcher: the same decisions as oxide.runtime.preconditions

_PRE_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool")
# slots of every integer type (and bool), a view's pointer and length, and the edges of each
_PRE_SLOTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "u64", "i64"]
_PRE_VALUES = [
    [-128, -(2**15), -(2**31), -(2**63), 255, 2**16 - 1, 2**32 - 1, 2**64 - 1, 1, 0xFFFF_FFFF_FFFF_0000, 2**63 - 1],
    [127, 2**15 - 1, 2**31 - 1, 2**63 - 1, 0, 0, 0, 0, 0, 0x7F0000001000, 0],
    [-1, 7, -5, -1, 200, 3, 2**31, 2**63, 1, 2**63, 12],
]
_PRE_CONSTS = [0, 1, -1, 2, 7, 255, 256, 300, -129, 2**31 - 1, -(2**31), 2**32 - 1, 2**32, 2**63 - 1, -(2**63),
               2**63, 2**64 - 1, True, False]  # fmt: skip
_PRE_GRID, _PRE_BLOCK = (7, 65535, 1), (256, 1, 64)


def _random_precondition(rng: Any, depth: int) -> list[Any]:
    if depth <= 0 or rng.random() < 0.15:
        leaf = rng.randrange(4)
        if leaf == 0:
            return ["const", rng.choice(_PRE_CONSTS)]
        if leaf == 1:
            return ["arg", rng.randrange(len(_PRE_SLOTS))]
        return ["grid" if leaf == 2 else "block", rng.randrange(3)]
    op = rng.choice(["cast", "add", "sub", "mul", "neg", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not"])
    sub = lambda: _random_precondition(rng, depth - 1)  # noqa: E731
    if op == "cast":
        return ["cast", rng.choice(_PRE_TYPES), sub()]
    if op in ("add", "sub", "mul"):
        return [op, rng.choice(_PRE_TYPES[:-1]), sub(), sub()]
    if op == "neg":
        return ["neg", rng.choice(_PRE_TYPES[:-1]), sub()]
    if op in ("and", "or"):
        return [op, [sub() for _ in range(rng.randrange(4))]]
    if op == "not":
        return ["not", sub()]
    return [op, sub(), sub()]


def _c_check(exprs: list[Any], values: list[int], grid: tuple[int, int, int] = _PRE_GRID,
             block: tuple[int, int, int] = _PRE_BLOCK) -> int | None:  # fmt: skip
    codes = [launcher.DTYPE_CODES[t] for t in _PRE_SLOTS]
    return launcher._ext.evaluate_preconditions(exprs, codes, values, grid, block)  # type: ignore[no-any-return]


PRE_CASES = [  # every operation, and the wrap-around of each type as preconditions._wrap does it
    ["const", 5], ["const", -(2**63)], ["const", 2**64 - 1], ["const", True],
    ["arg", 0], ["arg", 3], ["arg", 6], ["arg", 7], ["arg", 8], ["arg", 9], ["arg", 10],
    ["grid", 0], ["grid", 1], ["block", 2],
    ["add", "i32", ["const", 2**31 - 1], ["const", 1]],
    ["add", "i32", ["arg", 2], ["arg", 2]],
    ["sub", "u32", ["const", 0], ["const", 1]],
    ["sub", "u32", ["arg", 6], ["grid", 1]],
    ["add", "u32", ["arg", 6], ["const", 1]],
    ["mul", "i64", ["const", 2**62], ["const", 4]],
    ["mul", "i64", ["arg", 3], ["const", -1]],
    ["add", "i64", ["const", 2**63 - 1], ["const", 1]],
    ["sub", "i64", ["const", -(2**63)], ["const", 1]],
    ["mul", "u64", ["const", 2**63], ["const", 3]],
    ["mul", "u64", ["arg", 7], ["arg", 7]],
    ["add", "u64", ["const", 2**64 - 1], ["const", 2]],
    ["sub", "u64", ["arg", 9], ["arg", 7]],
    ["mul", "u8", ["arg", 4], ["const", 3]],
    ["add", "u8", ["const", 255], ["const", 1]],
    ["sub", "i8", ["const", -128], ["const", 1]],
    ["mul", "i16", ["arg", 1], ["arg", 1]],
    ["mul", "u16", ["const", 300], ["const", 300]],
    ["neg", "i32", ["const", -(2**31)]],
    ["neg", "u64", ["const", 1]],
    ["neg", "i64", ["arg", 3]],
    ["neg", "u8", ["arg", 4]],
    ["cast", "u8", ["const", 300]], ["cast", "i8", ["const", 200]], ["cast", "i8", ["arg", 4]],
    ["cast", "i64", ["arg", 7]], ["cast", "u64", ["arg", 3]], ["cast", "u32", ["arg", 0]],
    ["cast", "i16", ["const", 2**64 - 1]], ["cast", "u16", ["const", -(2**63)]],
    ["cast", "bool", ["const", 2**63]], ["cast", "bool", ["const", -(2**63)]], ["cast", "bool", ["arg", 5]],
    ["cast", "bool", ["const", 0]], ["cast", "i32", ["cast", "bool", ["arg", 0]]],
    ["lt", ["const", -1], ["const", 2**64 - 1]], ["lt", ["const", 2**64 - 1], ["const", -1]],
    ["le", ["arg", 3], ["arg", 7]], ["gt", ["arg", 7], ["arg", 3]], ["ge", ["arg", 2], ["arg", 6]],
    ["eq", ["const", -1], ["const", 2**64 - 1]], ["ne", ["const", -1], ["const", 2**64 - 1]],
    ["eq", ["cast", "u64", ["const", -1]], ["const", 2**64 - 1]],
    ["eq", ["arg", 10], ["mul", "i64", ["cast", "i64", ["arg", 2]], ["cast", "i64", ["arg", 6]]]],
    ["and", []], ["or", []], ["and", [["const", 5]]], ["or", [["const", 0], ["const", -3]]],
    ["and", [["eq", ["block", 0], ["const", 256]], ["le", ["grid", 0], ["const", 67108864]], ["arg", 8]]],
    ["or", [["lt", ["grid", 1], ["const", 2]], ["not", ["arg", 8]], ["ge", ["block", 2], ["const", 64]]]],
    ["not", ["const", 0]], ["not", ["arg", 7]], ["not", ["not", ["const", 2**64 - 1]]],
]  # fmt: skip


@needs_launcher
def test_c_launcher_evaluates_preconditions_like_python() -> None:
    import random

    from oxide.runtime.preconditions import evaluate, failed

    rng = random.Random(20260601)
    exprs = PRE_CASES + [_random_precondition(rng, 5) for _ in range(3000)]
    for values in _PRE_VALUES:
        for grid, block in ((_PRE_GRID, _PRE_BLOCK), ((1, 1, 1), (1, 1, 1)), ((2**31, 1, 3), (1024, 1, 1))):
            for e in exprs:
                v = evaluate(e, values, grid, block)
                assert -(2**63) <= v < 2**64
                # the C value is Python's exactly (eq and ne compare the whole value), and so is its truth
                assert _c_check([["eq", e, ["const", v]], ["ne", e, ["const", v]]], values, grid, block) == 1, (e, values, v)
                assert _c_check([e], values, grid, block) == (-1 if v else 0), (e, values, v)
            # several preconditions: the first that fails is the one Python names
            for _ in range(200):
                conds = [Precondition(10 + i, rng.choice(exprs)) for i in range(rng.randrange(1, 5))]
                site = failed(conds, values, grid, block)
                index = _c_check([c.expr for c in conds], values, grid, block)
                assert (None if index == -1 else conds[index].site) == site


@pytest.mark.parametrize("expr", [
    ["pow", ["const", 1]],  # an operation the launcher does not know
    ["const", 2**64], ["const", -(2**63) - 1], ["const", 1.0], ["const", "1"],  # outside i64 ∪ u64, or not an int
    ["arg", 11], ["arg", -1], ["grid", 3], ["block", -1],  # no such slot or axis
    ["cast", "f32", ["const", 1]], ["add", "bool", ["const", 1], ["const", 1]], ["neg", "bool", ["const", 1]],
    ["add", "i32", ["const", 1]], ["lt", ["const", 1]], ["and", ["const", 1]], ["not"], [], "eq", 5,
    ["eq", ["const", 1], ["const", 1], ["const", 1]],
    ["not", ["const", 1], 5],
])  # fmt: skip
@needs_launcher
def test_c_launcher_declines_preconditions_it_cannot_evaluate(expr: Any) -> None:
    assert _c_check([["const", 1], expr], _PRE_VALUES[0]) is None


@needs_launcher
def test_c_launcher_declines_float_slots_and_deep_preconditions() -> None:
    codes = [launcher.DTYPE_CODES[t] for t in ("f32", "f64", "bf16", "i32")]
    for k in range(3):  # Python truncates a float slot's value; the C slot holds it rounded
        assert launcher._ext.evaluate_preconditions([["eq", ["arg", k], ["const", 1]]], codes, [1.5, 1.5, 1.5, 1], (1, 1, 1), (1, 1, 1)) is None
    assert launcher._ext.evaluate_preconditions([["eq", ["arg", 3], ["const", 1]]], codes, [1.5, 1.5, 1.5, 1], (1, 1, 1), (1, 1, 1)) == -1
    deep: list[Any] = ["const", 1]
    for _ in range(40):  # right-nested: the stack grows with every level
        deep = ["add", "i64", ["const", 1], deep]
    assert _c_check([deep], _PRE_VALUES[0]) is None
    shallow: list[Any] = ["const", 1]
    for _ in range(40):  # left-nested: two stack entries at most
        shallow = ["add", "i64", shallow, ["const", 1]]
    assert _c_check([["eq", shallow, ["const", 41]]], _PRE_VALUES[0]) == -1


GUARDED_SOURCE = """
from oxide import kernel, f32, i32, u32, boolean, Slice, DisjointSlice


@kernel
def guarded(n: i32, m: u32, flag: boolean, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    pass
"""
GUARDED_PARAMS = (
    ParamSpec("n", "scalar", "i32"), ParamSpec("m", "scalar", "u32"), ParamSpec("flag", "scalar", "bool"),
    ParamSpec("x", "slice", "f32"), ParamSpec("out", "disjoint_slice", "f32"),
)  # fmt: skip
# slots: n 0, m 1, flag 2, x 3 (pointer) 4 (length), out 5 6
GUARDED_PRECONDITIONS = (
    Precondition(3, ["eq", ["mul", "i64", ["cast", "i64", ["arg", 0]], ["cast", "i64", ["arg", 1]]], ["arg", 4]]),
    Precondition(4, ["or", [["not", ["arg", 2]], ["eq", ["block", 0], ["const", 32]]]]),
    Precondition(5, ["and", [["le", ["grid", 0], ["const", 4]], ["eq", ["arg", 6], ["arg", 4]]]]),
    Precondition(6, ["gt", ["add", "i32", ["arg", 0], ["const", 1]], ["arg", 0]]),
)  # fmt: skip
GUARDED_SITES = (
    ErrorSite(3, "assert", "guarded", "pkg/guarded.py", 7, 5, "len(x) == i64(n) * m"),
    ErrorSite(4, "assert", "guarded", "pkg/guarded.py", 8, 5, "not flag or block.dim.x == 32"),
    ErrorSite(5, "assert", "guarded", "pkg/guarded.py", 9, 5, "grid.dim.x <= 4 and len(out) == len(x)"),
    ErrorSite(6, "assert", "guarded", "pkg/guarded.py", 10, 5, "n + 1 > n"),
)


def _guarded_module(tmp_path: Path, drv: FakeDriver) -> types.ModuleType:
    m = make_module(tmp_path, GUARDED_SOURCE, (KernelSpec("guarded", "guarded", GUARDED_PARAMS, preconditions=GUARDED_PRECONDITIONS),),
                    error_sites=GUARDED_SITES)  # fmt: skip
    drv.signatures = {"guarded": slot_types(GUARDED_PARAMS)}
    return m


def _outcome(drv: CFakeDriver, call: Any) -> tuple[str, Any]:
    launched = len(drv.launches)
    try:
        call()
    except oxide.KernelError as e:
        assert len(drv.launches) == launched  # not launched
        return "error", str(e)
    if len(drv.launches) == launched:
        return "nothing", None
    assert len(drv.launches) == launched + 1
    return drv.launches[-1]["path"], drv.launches[-1]["values"]


@needs_launcher
def test_c_launcher_checks_preconditions(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _guarded_module(tmp_path, c_driver)
    x, out = FakeArray(12, ptr=0x1000), FakeArray(12, ptr=0x2000)
    m.guarded[2, 32](3, 4, True, x, out)
    m.guarded[2, 32](3, 4, True, x, out)
    assert paths(c_driver) == ["python", "c"]  # a kernel with preconditions launches on the C path
    assert m.guarded._planned and m.guarded._plan.ready
    message = ("assertion failed in kernel guarded at pkg/guarded.py:{}:5: {} (checked at launch; the kernel was "
               "not launched)")  # fmt: skip
    for call, line, what in [
        (lambda: m.guarded[2, 32](3, 5, True, x, out), 7, "len(x) == i64(n) * m"),
        (lambda: m.guarded[2, 64](3, 4, True, x, out), 8, "not flag or block.dim.x == 32"),
        (lambda: m.guarded[5, 32](3, 4, False, x, out), 9, "grid.dim.x <= 4 and len(out) == len(x)"),
        (lambda: m.guarded[1, 32](3, 4, 0, x, FakeArray(13)), 9, "grid.dim.x <= 4 and len(out) == len(x)"),
        (lambda: m.guarded[(1, 1, 1), (32, 2, 1)](-3, 2**32 - 4, True, FakeArray(12), out), 7,
         "len(x) == i64(n) * m"),
    ]:  # fmt: skip
        with pytest.raises(oxide.KernelError) as info:
            call()
        assert str(info.value) == message.format(line, what)
        assert info.value.kernel == "guarded" and info.value.location == f"pkg/guarded.py:{line}:5"
    assert len(c_driver.launches) == 2  # none of them reached cuLaunchKernel
    m.guarded[0, 32](3, 5, True, x, out)  # an empty grid launches nothing and checks nothing, like Python
    m.guarded[2, 64](3, 4, False, x, out)  # flag off: any block
    assert paths(c_driver) == ["python", "c", "c"]


@needs_launcher
def test_c_launcher_decides_preconditions_like_the_python_path(tmp_path: Path, c_driver: CFakeDriver) -> None:
    import random

    m = _guarded_module(tmp_path, c_driver)
    m.guarded[1, 32](1, 4, True, FakeArray(4), FakeArray(4))  # teaches the C launcher
    rng = random.Random(7)
    cases = []
    for _ in range(300):
        n = rng.choice([0, 1, 3, -3, 2**31 - 1, -(2**31), 4, 12])
        mm = rng.choice([0, 1, 3, 4, 2**32 - 1, 2**31])
        length = rng.choice([0, 1, 3, 4, 12, 16, (n * mm) % 2**40 if n * mm >= 0 else 3])
        grid = rng.choice([1, 2, 4, 5, (1, 2, 3), (4, 1, 1), 0])
        block = rng.choice([32, 64, (32, 2), 1])
        x = FakeArray(length, ptr=0x10000)
        out = FakeArray(rng.choice([length, length + 1]), ptr=2**48)  # apart from x
        cases.append((grid, block, (n, mm, rng.choice([True, False, 0, 1]), x, out)))
    entry_points = c_driver._oxide_entry_points()
    outcomes = {}
    for enabled in (True, False):
        launcher._ext.set_driver(*(entry_points if enabled else (0, 0)))
        outcomes[enabled] = [_outcome(c_driver, lambda: m.guarded[g, b](*a)) for g, b, a in cases]
    with_c, python_only = outcomes[True], outcomes[False]
    assert [o if o[0] != "c" else ("python", o[1]) for o in with_c] == python_only
    assert {o[0] for o in python_only} == {"python", "error", "nothing"}
    assert {o[0] for o in with_c} == {"c", "error", "nothing"}  # launches, failures and empty grids


@needs_launcher
def test_tensors_of_more_dimensions_than_the_c_plan_takes_launch_in_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    ndim = launcher.MAX_NDIM + 1
    params = (ParamSpec("x", "tensor", "f32", ndim), ParamSpec("out", "mut_slice", "f32"))
    m = make_module(tmp_path, "from oxide import kernel\n\n@kernel\ndef deep(x, out):\n    pass\n",
                    (KernelSpec("deep", "deep", params),))  # fmt: skip
    c_driver.signatures = {"deep": slot_types(params)}
    x, out = FakeArray(shape=(2,) * ndim, ptr=0x1000), FakeArray(4, ptr=0x100000)
    for _ in range(2):
        m.deep[1, 32](x, out)
    assert paths(c_driver) == ["python", "python"]
    strides = [2 ** (ndim - 1 - d) for d in range(ndim)]
    assert c_driver.launches[1]["values"] == [0x1000] + [2] * ndim + strides + [0x100000, 4]


def test_subscript_cache_is_shared_with_the_base(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    first = m.scale[2, 64]
    assert m.scale[2, 64] is first and m.scale._configs[(2, 64)] is first
    assert m.scale[[2], [64]] is not m.scale[[2], [64]]  # unhashable: made each time, still works
    expect_type_error(lambda: m.scale[5], "launch scale with scale[grid, block], scale[grid, block, stream] or "
                      "scale[grid, block, stream, shared_mem_bytes]; got scale[5]")  # fmt: skip


def test_pure_python_mode(tmp_path: Path) -> None:
    import os
    import subprocess

    code = (
        "from oxide.runtime import launcher, kernel\n"
        "assert not launcher.ENABLED and launcher.new_plan() is None\n"
        "assert kernel.LaunchConfig.__mro__[1] is object\n"
    )
    env = {**os.environ, "OXIDE_PURE_PYTHON": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def _run_runtime_tests(cwd: Path, env: dict[str, str], selection: str) -> str:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__)), "-k", selection, "-rs"],
        env=env, capture_output=True, text=True, cwd=cwd,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@needs_launcher
def test_runtime_tests_pass_in_pure_python_mode() -> None:
    import os

    env = {**os.environ, "OXIDE_PURE_PYTHON": "1"}
    out = _run_runtime_tests(Path(__file__).parent.parent, env, "not pure_python and not built_tree")
    assert " passed" in out and " failed" not in out


def _compile_launcher(package_dir: Path) -> None:
    import shutil
    import subprocess
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        pytest.skip("no Python headers")
    source = Path(oxide.__file__).parent / "runtime" / "_launcher.c"
    target = package_dir / "runtime" / f"_launcher{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(target)], check=True)


def test_c_launcher_in_a_built_tree(tmp_path: Path) -> None:
    """Where this process runs oxide from a source tree without the compiled launcher (CI runs
    the tests from the checkout): build it into a copy and run the C-launcher tests there."""
    import os
    import shutil

    if launcher.ENABLED:
        pytest.skip("the C launcher is built here: its tests ran in this process")
    if os.environ.get("OXIDE_PURE_PYTHON", "").strip() in ("1", "true", "yes"):
        pytest.skip("OXIDE_PURE_PYTHON is set")
    tree = tmp_path / "tree"
    shutil.copytree(Path(oxide.__file__).parent, tree / "oxide", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    _compile_launcher(tree / "oxide")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = _run_runtime_tests(tree, env, "c_launcher and not built_tree")
    assert " passed" in out and "skipped" not in out, out


def test_read_only_view_must_not_alias_a_written_one(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    x = FakeArray(8)
    overlapping = FakeArray(8, ptr=x.__cuda_array_interface__["data"][0] + 16)
    expect_type_error(
        lambda: m.scale[1, 32](1.0, x, overlapping),
        "parameter 'x' of scale overlaps parameter 'out', which the kernel writes; a read-only view must not "
        "alias a writable one — pass a copy, or declare 'x' DisjointSlice/MutSlice to read and write the same memory",
    )
    adjacent = FakeArray(8, ptr=x.__cuda_array_interface__["data"][0] + 32)  # 8 f32 = 32 bytes: touching, not overlapping
    m.scale[1, 32](1.0, x, adjacent)


def test_arrays_on_other_gpus_are_refused_with_several_gpus(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    px, py, pout = next(_FAKE_ADDRESSES), next(_FAKE_ADDRESSES), next(_FAKE_ADDRESSES)
    x, y, out = FakeArray(8, ptr=px), FakeArray(8, ptr=py), FakeArray(8, ptr=pout)
    fake_driver.devices = 2
    fake_driver.pointer_devices = {px: 0, py: 1, pout: 0}
    with pytest.raises(TypeError) as info:
        m.saxpy[1, 32](2.0, x, y, out)
    assert str(info.value) == ("the arrays passed to saxpy are on different GPUs ('x' on cuda:0, 'y' on cuda:1, "
                               "'out' on cuda:0); put them on one device")
    fake_driver.pointer_devices = {px: 1, py: 1, pout: 1}
    with pytest.raises(TypeError) as info:
        m.saxpy[1, 32](2.0, x, y, out)
    assert str(info.value) == ("parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0, where the "
                               "kernel would run; make cuda:1 current first (torch.cuda.set_device(1), "
                               "cupy.cuda.Device(1).use(), ...)")
    assert fake_driver.launches == []
    fake_driver.current_device, fake_driver.ctx = 1, 0xC1  # cuda:1's context is current: it launches
    m.saxpy[1, 32](2.0, x, y, out)
    assert len(fake_driver.launches) == 1


def test_one_gpu_needs_no_device_check(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    px = next(_FAKE_ADDRESSES)
    x, y, out = FakeArray(8, ptr=px), FakeArray(8), FakeArray(8)
    fake_driver.pointer_devices = {px: 5}  # would be refused if it were looked at
    m.saxpy[1, 32](2.0, x, y, out)
    assert len(fake_driver.launches) == 1
