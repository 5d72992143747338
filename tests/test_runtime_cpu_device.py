"""The CPU device's runtime half (oxide/runtime/device_choice.py, cpu_driver.py, arrays_host.py):
choosing it, its driver, host arrays written in place, the refusals of memory of the other device,
synchronous errors, the C launcher left out. The engine is a stand-in here (``StandInModule``:
saxpy and scale run in NumPy over the pointers the launch hands it, through the parameter block's
``void**`` as cuLaunchKernel takes it), so these tests check the runtime without the compiler's CPU
backend; tests/test_cpu_device_gpu_tests.py and the GPU tests run real kernels on it."""
from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import oxide
from oxide.runtime import DeviceArray, artifacts, cpu_driver, device, device_choice, launcher
from oxide.abi.preconditions import compile_expression
from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleArrayRecord, ParamSpec, Precondition

from fakes import SAXPY_KERNELS, FakeDriver, _fake_torch, fake_driver, fresh_runtime, make_module, slot_types  # noqa: F401

rng = np.random.default_rng()
SITES = (ErrorSite(1, "bounds", "scale", "pkg/kernels.py", 12, 18, "x[i]"),)
_CODES = {"u64": "Q", "i64": "q", "f32": "f", "f64": "d", "i32": "i"}


class StandInFunction:
    """One entry point: decodes the ``void**`` parameter block with the spec's slot types and
    runs the kernel over host memory in NumPy, each thread i < grid * block."""

    static_shared_bytes = 0
    max_threads_per_block = 1024

    def __init__(self, module: StandInModule, spec: KernelSpec) -> None:
        self.module, self.spec = module, spec
        self.types = slot_types(spec.params)

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, params: int,
               sanitize: frozenset[str]) -> None:
        pointers = (ctypes.c_void_p * len(self.types)).from_address(params)
        values = [struct.unpack("=" + _CODES[t], ctypes.string_at(pointers[i], struct.calcsize(_CODES[t])))[0]
                  for i, t in enumerate(self.types)]
        self.module.launches.append((self.spec.symbol, grid, block, shared, values, sanitize))
        if self.module.raises is not None:
            raise self.module.raises
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        dtype = np.float64 if self.spec.symbol.endswith("f64") else np.float32

        def array(ptr: int, n: int) -> Any:
            return np.ctypeslib.as_array((ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(ptr)).view(dtype)

        if self.spec.name == "saxpy":
            a, px, nx, py, ny, po, no = values
            n = min(no, threads)
            array(po, no)[:n] = dtype(a) * array(px, nx)[:n] + array(py, ny)[:n]
        else:  # scale: out[i] = a * x[i], and x[i] for i >= len(x) fails its bounds check
            a, px, nx, po, no = values
            n = min(no, threads)
            if n > nx:  # what __oxide_fail does: claim the record, write module id, site, index, length
                record = (ctypes.c_int64 * 5).from_address(self.module.globals["__oxide_error_ptr"].value)
                record[0] = 1
                record[1], record[2], record[3], record[4] = self.module.globals["__oxide_module_id"].value, 1, nx, nx
                n = nx
            array(po, no)[:n] = dtype(a) * array(px, nx)[:n]


class StandInModule:
    """What ``oxide_build.jit.cpu_module`` returns: kernels, error sites, module arrays, entry
    points by symbol and the addresses of globals."""

    def __init__(self, kernels: tuple[KernelSpec, ...], error_sites: tuple[ErrorSite, ...] = (),
                 arrays: tuple[ModuleArrayRecord, ...] = ()) -> None:
        self.kernels, self.error_sites, self.arrays = kernels, error_sites, arrays
        self.launches: list[tuple[Any, ...]] = []
        self.raises: Exception | None = None
        self.globals: dict[str, Any] = {"__oxide_error_ptr": ctypes.c_uint64(0), "__oxide_module_id": ctypes.c_uint64(0)}
        for a in arrays:
            self.globals[a.symbol] = (ctypes.c_float * int(np.prod(a.shape)))()

    def function(self, symbol: str) -> StandInFunction:
        spec = next((k for k in self.kernels if k.symbol == symbol), None)
        if spec is None:
            raise KeyError(symbol)
        return StandInFunction(self, spec)

    def global_address(self, name: str) -> tuple[int, int]:
        value = self.globals[name]
        return ctypes.addressof(value), ctypes.sizeof(value)


@pytest.fixture
def on_cpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CPU device, with the stand-in engine; yields the compile calls' modules."""
    import oxide_build.jit

    compiled: list[StandInModule] = []
    kernels: list[tuple[KernelSpec, ...]] = [SAXPY_KERNELS]

    def cpu_module(source: Path, module: str) -> StandInModule:
        compiled.append(StandInModule(kernels[0], SITES))
        return compiled[-1]

    monkeypatch.setattr(oxide_build.jit, "cpu_module", cpu_module)
    oxide.runtime.set_device("cpu")
    yield compiled
    device_choice.set_device("cuda")


def test_set_device_chooses_the_cpu_driver_and_its_sm_90_device(on_cpu: Any) -> None:
    assert oxide.runtime.device_kind() == "cpu"
    drv = device.driver()
    assert isinstance(drv, cpu_driver.CpuDriver)
    info = device.context_device(device.current_context())
    assert (info.name, info.arch, info.ordinal) == ("oxide CPU device", "sm_90", 0)
    assert device.device_count() == 1
    oxide.runtime.synchronize()  # nothing to wait for
    with pytest.raises(ValueError, match="set_device takes 'cpu' or 'cuda'; got 'tpu'"):
        oxide.runtime.set_device("tpu")


def test_oxide_device_in_the_environment_is_read_once_at_import() -> None:
    code = ("import oxide.runtime as r; print(r.device_kind()); r.set_device('cuda'); print(r.device_kind())")
    env = {**os.environ, "OXIDE_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["cpu", "cuda"]
    bad = ("import oxide.runtime as r\n"
           "try:\n    r.synchronize()\nexcept oxide.CudaError as e:\n    print(e)\n").replace("oxide.CudaError", "r.device.CudaError")
    env["OXIDE_DEVICE"] = "tpu"
    out = subprocess.run([sys.executable, "-c", "import oxide.runtime.device\n" + bad], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == ("OXIDE_DEVICE='tpu' names no device: set it to 'cpu' (kernels run on the CPU) or 'cuda' "
                           "(the GPU; also what unset means)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saxpy_writes_numpy_arrays_in_place(tmp_path: Path, on_cpu: Any, dtype: Any) -> None:
    m = make_module(tmp_path)
    n = 1000
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    m.saxpy[m.saxpy.grid_for(n, 256), 256](dtype(1.5), x, y, out)
    np.testing.assert_array_equal(out, dtype(1.5) * x + y)
    (module,) = on_cpu
    symbol, grid, block, shared, values, sanitize = module.launches[0]
    assert symbol == ("saxpy__f32" if dtype == np.float32 else "saxpy__f64")
    assert (grid, block, shared, sanitize) == ((4, 1, 1), (256, 1, 1), 0, frozenset())
    assert values[1:] == [x.ctypes.data, n, y.ctypes.data, n, out.ctypes.data, n]  # pointers as the host's


def test_every_launch_takes_the_python_path_and_runs_before_it_returns(tmp_path: Path, on_cpu: Any) -> None:
    m = make_module(tmp_path)
    x = rng.standard_normal(64).astype(np.float32)
    for k in range(5):
        out = np.zeros(64, np.float32)
        m.scale[1, 64](float(k), x, out)  # the C launcher's config: it leaves every launch to Python
        np.testing.assert_array_equal(out, np.float32(k) * x)
    assert len(on_cpu[0].launches) == 5
    if launcher.ENABLED:
        assert not launcher._ext.has_driver()


def test_device_arrays_are_host_memory_on_the_cpu_device(tmp_path: Path, on_cpu: Any) -> None:
    m = make_module(tmp_path)
    x = rng.standard_normal(300).astype(np.float32)
    dx, out = DeviceArray.from_numpy(x), DeviceArray.zeros(300, np.float32)
    assert dx.ptr % 256 == 0
    m.scale[2, 256](2.0, dx, out)
    np.testing.assert_array_equal(out.to_numpy(), np.float32(2.0) * x)
    view = np.asarray(out)  # __array_interface__: a view of the memory, not a copy
    view[0] = 7.0
    assert out.to_numpy()[0] == 7.0
    with pytest.raises(AttributeError, match="host memory: it has __array_interface__"):
        out.__cuda_array_interface__  # noqa: B018
    out.free()
    with pytest.raises(TypeError, match="parameter 'out' of scale is a DeviceArray that was freed"):
        m.scale[2, 256](2.0, dx, out)


def test_a_read_only_numpy_array_is_read_and_never_written(tmp_path: Path, on_cpu: Any) -> None:
    m = make_module(tmp_path)
    x = rng.standard_normal(32).astype(np.float32)
    x.flags.writeable = False
    out = np.zeros(32, np.float32)
    m.scale[1, 32](3.0, x, out)
    np.testing.assert_array_equal(out, np.float32(3.0) * x)
    with pytest.raises(TypeError, match="parameter 'out' of scale is written by the kernel; got a read-only array"):
        m.scale[1, 32](3.0, out, x)


def test_cpu_tensors_are_taken_and_cuda_tensors_refused(tmp_path: Path, on_cpu: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    m = make_module(tmp_path)
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    tx = torch.Tensor(16, torch.float32, x.ctypes.data, cuda=False)
    tout = torch.Tensor(16, torch.float32, out.ctypes.data, cuda=False)
    m.scale[1, 16](2.0, tx, tout)
    np.testing.assert_array_equal(out, np.float32(2.0) * x)
    gpu = torch.Tensor(16, torch.float32, 0x7F0000001000)
    gpu.device = type("Device", (), {"type": "cuda", "__str__": lambda self: "cuda:0"})()
    with pytest.raises(TypeError) as info:
        m.scale[1, 16](2.0, gpu, tout)
    assert str(info.value) == (
        "parameter 'x' of scale is a torch.Tensor on cuda:0 (GPU memory), but kernels run on the CPU device "
        "(OXIDE_DEVICE=cpu or oxide.runtime.set_device('cpu')), which reads host memory: pass a NumPy array or a "
        "CPU tensor (e.g. x.cpu()), or run on the GPU (oxide.runtime.set_device('cuda'))")


def test_cuda_array_interface_memory_is_refused_on_the_cpu_device(tmp_path: Path, on_cpu: Any) -> None:
    from fakes import FakeArray

    m = make_module(tmp_path)
    with pytest.raises(TypeError, match=r"parameter 'out' of scale is a fakes.FakeArray \(__cuda_array_interface__\) "
                                        r"\(GPU memory\), but kernels run on the CPU device"):
        m.scale[1, 16](2.0, np.zeros(4, np.float32), FakeArray())
    with pytest.raises(TypeError, match=r"parameter 'x' of scale needs an array in host memory \(a NumPy array, a CPU "
                                        r"tensor, a DeviceArray, or an object with __array_interface__ or __dlpack__\); "
                                        r"got a list"):
        m.scale[1, 16](2.0, [1.0, 2.0], np.zeros(4, np.float32))


def test_a_host_array_on_the_gpu_says_how_to_run_on_the_cpu(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    with pytest.raises(TypeError) as info:
        m.scale[1, 16](2.0, np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert str(info.value) == (
        "parameter 'x' of scale needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU first, "
        "e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)")


def test_a_device_array_is_refused_on_the_other_device(tmp_path: Path, on_cpu: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)
    host = DeviceArray.from_numpy(np.ones(8, np.float32))
    drv = FakeDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    oxide.runtime.set_device("cuda")
    with pytest.raises(TypeError, match="parameter 'x' of scale is a DeviceArray in host memory, made on the CPU "
                                        r"device, but kernels run on the GPU"):
        m.scale[1, 8](1.0, host, DeviceArray(0x7F00_0000_0000, (8,), np.float32, owned=False))
    gpu = DeviceArray(0x7F00_0000_0000, (8,), np.float32, owned=False)
    oxide.runtime.set_device("cpu")
    with pytest.raises(TypeError, match=r"parameter 'out' of scale is a DeviceArray made on the GPU \(GPU memory\)"):
        m.scale[1, 8](1.0, host, gpu)


def test_a_failed_check_is_raised_by_the_launch_itself(tmp_path: Path, on_cpu: Any) -> None:
    m = make_module(tmp_path)
    x, out = np.ones(10, np.float32), np.zeros(12, np.float32)
    with pytest.raises(oxide.KernelError) as info:
        m.scale[1, 12](2.0, x, out)
    assert str(info.value) == "bounds check failed in kernel scale at pkg/kernels.py:12:18: x[i] with index 10 but length 10"
    assert info.value.location == "pkg/kernels.py:12:18"
    out2 = np.zeros(10, np.float32)
    m.scale[1, 10](2.0, x, out2)  # raised once: the record is clean again
    np.testing.assert_array_equal(out2, np.full(10, 2.0, np.float32))
    oxide.runtime.check_kernel_errors()


def test_what_the_engine_raises_comes_out_of_the_launch(tmp_path: Path, on_cpu: Any) -> None:
    m = make_module(tmp_path)
    m.scale[1, 4](1.0, np.ones(4, np.float32), np.zeros(4, np.float32))
    on_cpu[0].raises = oxide.KernelError("barrier at k.py:3 reached by threads 0-15 of block (0, 0, 0) only")
    with pytest.raises(oxide.KernelError, match="barrier at k.py:3"):
        m.scale[1, 4](1.0, np.ones(4, np.float32), np.zeros(4, np.float32))


def test_launch_preconditions_and_argument_checks_run_unchanged(tmp_path: Path, on_cpu: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import oxide_build.jit

    spec = SAXPY_KERNELS[2]._replace(preconditions=(Precondition(2, tuple(compile_expression(["le", ["grid", 0], ["const", 1]]))),))
    sites = SITES + (ErrorSite(2, "assert", "scale", "pkg/kernels.py", 9, 5, "grid.x <= 1"),)
    monkeypatch.setattr(oxide_build.jit, "cpu_module", lambda source, module: StandInModule((spec,), sites))
    m = make_module(tmp_path)
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(oxide.KernelError, match=r"assertion failed in kernel scale at pkg/kernels.py:9:5: grid.x <= 1 "
                                                r"\(checked at launch; the kernel was not launched\)"):
        m.scale[2, 4](1.0, x, out)
    with pytest.raises(TypeError, match=r"scale\(\) takes 3 arguments \(a, x, out\); got 2"):
        m.scale[1, 4](1.0, x)
    with pytest.raises(TypeError, match="parameter 'x' of scale overlaps parameter 'out'"):
        m.scale[1, 4](1.0, out[:4], out)
    with pytest.raises(TypeError, match="parameter 'x' of scale needs f32 elements; got f64"):
        m.scale[1, 4](1.0, np.ones(8), out)


def test_a_kernel_launches_on_either_device_after_a_switch(tmp_path: Path, on_cpu: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import FakeArray

    drv = FakeDriver()
    drv.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = make_module(tmp_path)
    x, out = rng.standard_normal(8).astype(np.float32), np.zeros(8, np.float32)
    m.scale[1, 8](2.0, x, out)
    oxide.runtime.set_device("cuda")
    m.scale[1, 8](2.0, FakeArray(8), FakeArray(8))
    assert [launch["fn"] for launch in drv.launches] == ["scale"]
    oxide.runtime.set_device("cpu")
    m.scale[1, 8](3.0, x, out)
    np.testing.assert_array_equal(out, np.float32(3.0) * x)
    assert len(on_cpu[0].launches) == 2


def test_sanitizers_are_read_from_the_environment(tmp_path: Path, on_cpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_driver, "_sanitize", [])
    monkeypatch.setenv("OXIDE_SANITIZE", "memcheck, racecheck")
    m = make_module(tmp_path)
    m.scale[1, 4](1.0, np.ones(4, np.float32), np.zeros(4, np.float32))
    assert on_cpu[0].launches[-1][-1] == frozenset({"memcheck", "racecheck"})
    monkeypatch.setattr(cpu_driver, "_sanitize", [])
    monkeypatch.setenv("OXIDE_SANITIZE", "memcheck,leakcheck")
    with pytest.raises(ValueError, match="OXIDE_SANITIZE names 'leakcheck', which the CPU device does not have: it "
                                         "takes a comma-separated subset of memcheck, racecheck, initcheck, synccheck"):
        m.scale[1, 4](1.0, np.ones(4, np.float32), np.zeros(4, np.float32))


def test_without_the_compiler_the_cpu_device_says_what_to_install(tmp_path: Path, on_cpu: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "_build_installed", lambda: False)
    m = make_module(tmp_path)
    with pytest.raises(oxide.CudaError, match=r"the CPU device \(OXIDE_DEVICE=cpu\) compiles module oxtest_\w+ from its "
                                              r"Python source, and the compiler is not installed: pip install "
                                              r"oxide-cuda\[build\]"):
        m.scale[1, 4](1.0, np.ones(4, np.float32), np.zeros(4, np.float32))


def test_module_arrays_are_read_and_written_in_host_memory(tmp_path: Path, on_cpu: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import oxide_build.jit

    source = ("import oxide as ox\nfrom oxide import kernel, f32, Slice, DisjointSlice\n"
              "TABLE = ox.global_memory.array(4, f32)\n\n@kernel\ndef scale(a: f32, x: Slice[f32], "
              "out: DisjointSlice[f32]) -> None:\n    pass\n")
    record = ModuleArrayRecord("TABLE", "TABLE__g", "global", "f32", (4,))
    made: list[StandInModule] = []
    monkeypatch.setattr(oxide_build.jit, "cpu_module",
                        lambda src, module: made.append(StandInModule(SAXPY_KERNELS[2:], SITES, (record,))) or made[-1])
    m = make_module(tmp_path, source, SAXPY_KERNELS[2:])
    m.TABLE.write(np.arange(4, dtype=np.float32))
    assert list(made[0].globals["TABLE__g"]) == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(m.TABLE.read(), np.arange(4, dtype=np.float32))


def test_the_cpu_driver_refuses_gpu_code_and_unknown_pointers() -> None:
    drv = cpu_driver.CpuDriver()
    err, mod = drv.cuModuleLoadData(b"CUBIN sm_90")
    assert err == drv.CUresult.CUDA_ERROR_INVALID_IMAGE and mod is None
    assert drv.cuMemFree(0x1234)[0] == drv.CUresult.CUDA_ERROR_INVALID_VALUE
    err, ptr = drv.cuMemAlloc(100)
    assert err == 0 and ptr % 256 == 0
    drv.cuMemsetD8(ptr, 0xAB, 100)
    host = np.zeros(100, np.uint8)
    drv.cuMemcpyDtoH(host, ptr, 100)
    assert (host == 0xAB).all()
    drv.cuMemcpyHtoD(ptr, bytes(range(100)), 100)
    drv.cuMemcpyDtoH(host, ptr, 100)
    assert list(host) == list(range(100))
    assert drv.cuMemFree(ptr) == (drv.OK,)
    assert drv.cuDeviceGet(1)[0] == drv.CUresult.CUDA_ERROR_INVALID_DEVICE


def test_a_cooperative_launch_runs_through_launch_ex_and_a_grid_too_large_is_refused(
        tmp_path: Path, on_cpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that calls grid.sync() is launched cooperatively (cuLaunchKernelEx) with the limit
    of the CPU device's sm_90 figures: 132 multiprocessors x min(32, 2048 / threads) blocks."""
    import oxide_build.jit

    spec = SAXPY_KERNELS[2]._replace(cooperative=True)
    made: list[StandInModule] = []
    monkeypatch.setattr(oxide_build.jit, "cpu_module",
                        lambda source, module: made.append(StandInModule((spec,), SITES)) or made[-1])
    m = make_module(tmp_path)
    x = rng.standard_normal(132 * 8 * 256).astype(np.float32)
    out = np.zeros_like(x)
    m.scale[132 * 8, 256](2.0, x, out)
    np.testing.assert_array_equal(out, np.float32(2.0) * x)
    with pytest.raises(ValueError, match=r"a cooperative launch of scale needs all its blocks resident at once: at "
                                         r"most 1056 blocks of 256 threads \(8 per multiprocessor x 132\) on oxide "
                                         r"CPU device; got grid \(1057, 1, 1\) = 1057 blocks"):
        m.scale[1057, 256](2.0, np.zeros(1057 * 256, np.float32), np.zeros(1057 * 256, np.float32))
    assert len(made[0].launches) == 1


def test_dlpack_host_arrays_are_read_and_cuda_ones_refused(tmp_path: Path, on_cpu: Any) -> None:
    from fakes import FakeDLPack

    m = make_module(tmp_path)
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    m.scale[1, 16](2.0, FakeDLPack((16,), device_type=1, ptr=x.ctypes.data), out)  # kDLCPU
    np.testing.assert_array_equal(out, np.float32(2.0) * x)
    with pytest.raises(TypeError, match=r"parameter 'x' of scale is a fakes.FakeDLPack on DLPack device type 2 "
                                        r"\(GPU memory\), but kernels run on the CPU device"):
        m.scale[1, 16](2.0, FakeDLPack((16,), device_type=2), out)
    assert m.scale.attributes["max_threads_per_block"] == 1024  # cuFuncGetAttribute of the CPU driver
