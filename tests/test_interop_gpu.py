"""CUDA C++ interop: Python kernels calling C++ device functions and CUB through LTO, a C++ kernel
launched from Python, and a C++ kernel calling an exported Python function. Every result is
compared with a NumPy float64 reference; outputs start as NaN.

On the CPU device (tests/devices.py) the same tests run the C++ compiled by the host's C++
compiler (oxide_build/backends/cpu/cxx.py), and CUB, which the host cannot compile, through the
Python implementations its declarations name (cpu=, docs/interop.md)."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import types
import uuid
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu]

INTEROP = Path(__file__).parent / "packages" / "interop"


def _device_arch() -> str:
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    err, dev = driver.cuDeviceGet(0)
    err, major = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    err, minor = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return f"sm_{major}{minor}"


def _build(tmp: Path, stem: str, where: Path = INTEROP) -> types.ModuleType:
    """Compiles ``tests/packages/interop/<stem>.py`` (cubins linked on this host), writes its
    artifacts next to a copy of it and imports the copy, as an installed wheel would be."""
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    name = f"{stem}_{uuid.uuid4().hex[:8]}"
    for cu in [*where.glob("*.cu"), *where.glob("csrc")]:
        if cu.is_dir():
            shutil.copytree(cu, tmp / cu.name, dirs_exist_ok=True)
        else:
            shutil.copy(cu, tmp / cu.name)
    src = tmp / f"{name}.py"
    shutil.copy(where / f"{stem}.py", src)
    if not devices.on_cpu():  # the CPU device compiles the module (and its C++) at the first launch
        compiled = compile_module(src, name, CompileOptions(archs=(_device_arch(),)), root=tmp)
        write_module_artifacts(compiled, tmp)
    spec = importlib.util.spec_from_file_location(name, src)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ffi(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _build(tmp_path_factory.mktemp("ffi"), "ffi_kernels")


@pytest.fixture(scope="module")
def cub(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _build(tmp_path_factory.mktemp("cub"), "cub_kernels")


def _nan(n: int):  # type: ignore[no-untyped-def]
    return devices.full(n, np.nan, np.float32)


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_python_kernel_calls_cpp_scalar_function(ffi: types.ModuleType, n: int) -> None:
    n = devices.sized(n, min(n, 50_000))
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    a, b = 1.5, -0.25
    tx, out = devices.array(x), _nan(n)
    ffi.axpb_cpp[ffi.axpb_cpp.grid_for(n), 256](a, tx, b, out)
    devices.synchronize()
    np.testing.assert_allclose(devices.to_numpy(out), a * x.astype(np.float64) + b, rtol=1e-6, atol=1e-6)

    out2 = _nan(n)
    ffi.softplus_cpp[ffi.softplus_cpp.grid_for(n), 256](tx, out2)
    devices.synchronize()
    ref = np.log1p(np.exp(x.astype(np.float64)))
    np.testing.assert_allclose(devices.to_numpy(out2), ref, rtol=2e-6, atol=1e-6)


def test_cpp_function_taking_a_view(ffi: types.ModuleType) -> None:
    n, w = 10_000, 7
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = _nan(n)
    ffi.window_sums[ffi.window_sums.grid_for(n, 128), 128](devices.array(x), w, out)
    devices.synchronize()
    x64 = x.astype(np.float64)
    ref = np.array([x64[i : i + w].sum() for i in range(n)])
    np.testing.assert_allclose(devices.to_numpy(out), ref, rtol=1e-5, atol=1e-5)


def test_cpp_kernel_launched_from_python(ffi: types.ModuleType) -> None:
    n = 100_003
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = devices.array(y)
    ffi.scale_add[ffi.scale_add.grid_for(n), 256](2.0, devices.array(x), out)
    devices.synchronize()
    np.testing.assert_allclose(devices.to_numpy(out), 2.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match=r"scale_add\(\) takes 3 arguments"):  # a Python kernel's argument checks
        ffi.scale_add[1, 32](2.0, devices.array(x))


@pytest.mark.parametrize("n", [256, 1000, 1 << 18])
def test_cub_block_reduce(cub: types.ModuleType, n: int) -> None:
    n = devices.sized(n, min(n, 1 << 14))
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    blocks = (n + 255) // 256
    sums, maxes = _nan(blocks), _nan(blocks)
    cub.block_sums[blocks, 256](devices.array(x), sums, maxes)
    devices.synchronize()
    padded = np.concatenate([x.astype(np.float64), np.zeros(blocks * 256 - n)]).reshape(blocks, 256)
    np.testing.assert_allclose(devices.to_numpy(sums), padded.sum(axis=1), rtol=1e-5, atol=1e-4)
    padded_max = np.concatenate([x.astype(np.float64), np.full(blocks * 256 - n, -3.0e38)]).reshape(blocks, 256)
    np.testing.assert_array_equal(devices.to_numpy(maxes), padded_max.max(axis=1).astype(np.float32))


def test_cub_warp_reduce(cub: types.ModuleType) -> None:
    n = 4096 + 17
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    blocks = (n + 255) // 256
    warps = blocks * 8
    out = _nan(warps)
    cub.warp_sums[blocks, 256](devices.array(x), out)
    devices.synchronize()
    padded = np.concatenate([x.astype(np.float64), np.zeros(warps * 32 - n)]).reshape(warps, 32)
    np.testing.assert_allclose(devices.to_numpy(out), padded.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cub_example(tmp_path: Path) -> None:
    mod = _build(tmp_path, "block_sum", Path(__file__).parent.parent / "examples" / "cub_reduce")
    n = devices.sized(1_000_003, 20_003)
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    tx = devices.array(x)
    for kernel in (mod.total, mod.total_by_warps):
        out = devices.zeros(1)
        kernel[kernel.grid_for(n), 256](tx, out)
        devices.synchronize()
        np.testing.assert_allclose(devices.to_numpy(out)[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)


CPP_CALLER = r'''
#include "oxide_exports.h"

extern "C" __global__ void gelu_cpp(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = py_gelu(x[i]);
}
'''


CPU_CALLER = r'''
#include "oxide_exports.h"

extern "C" __global__ void gelu_cpp(const float* x, long long x_len, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = py_gelu(x[i]);
}
'''


def _cpu_device_gelu_cpp(tmp_path: Path, x: np.ndarray) -> np.ndarray:
    """The CPU device's form of the test below: the C++ kernel calling py_gelu compiled by the host's
    C++ compiler (oxide_build/backends/cpu/cxx.py) with the module that exports it, launched from
    Python as an @extern_kernel."""
    (tmp_path / "caller.cu").write_text(CPU_CALLER)
    name = f"exports_{uuid.uuid4().hex[:8]}"
    src = tmp_path / f"{name}.py"
    src.write_text((INTEROP / "exports.py").read_text() + '''

@ox.extern_kernel("gelu_cpp", sources=["caller.cu"])
def gelu_cpp(x: Slice[f32], out: ox.MutSlice[f32]) -> None: ...
''')
    spec = importlib.util.spec_from_file_location(name, src)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    out = devices.full(len(x), np.nan, np.float32)
    module.gelu_cpp[(len(x) + 255) // 256, 256](devices.array(x), out)
    devices.synchronize()
    return devices.to_numpy(out)


def test_cpp_kernel_calls_exported_python_function(tmp_path: Path) -> None:
    """@device(export="py_gelu") → LTO-IR + header; NVRTC compiles a C++ kernel calling it;
    nvJitLink links both on this host; the driver loads the cubin. On the CPU device: the same
    C++ kernel, compiled for the host with the module, launched from Python."""
    if devices.on_cpu():
        x = np.random.default_rng(2).uniform(-6, 6, 50_001).astype(np.float32)
        x64 = x.astype(np.float64)
        ref = 0.5 * x64 * (1.0 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64**3)))
        np.testing.assert_allclose(_cpu_device_gelu_cpp(tmp_path, x), ref, rtol=1e-5, atol=1e-6)
        return
    from cuda.bindings import driver

    from oxide.runtime import DeviceArray, synchronize
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.link.exports import write_export_header
    from oxide_build.link.nvjitlink import LinkInput, link_cubin
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    arch = _device_arch()
    compiled = compile_module(INTEROP / "exports.py", "exports", CompileOptions(archs=(arch,)), root=INTEROP)
    write_export_header(compiled, tmp_path / "oxide_exports.h")
    caller = tmp_path / "caller.cu"
    caller.write_text(CPP_CALLER)
    cubin = link_cubin([LinkInput("exports", "ltoir", compiled.ltoir[arch]),
                        LinkInput(str(caller), "ltoir", compile_cuda(CudaSource(caller), arch))], arch, ("-lto",))

    n = 50_001
    x = np.random.default_rng(2).uniform(-6, 6, n).astype(np.float32)
    dx = DeviceArray.from_numpy(x)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    synchronize()  # the runtime made the primary context current
    err, module = driver.cuModuleLoadData(cubin)
    assert int(err) == 0, err
    err, fn = driver.cuModuleGetFunction(module, b"gelu_cpp")
    assert int(err) == 0, err
    import ctypes

    args = [ctypes.c_uint64(int(dx.__cuda_array_interface__["data"][0])), ctypes.c_uint64(int(out.__cuda_array_interface__["data"][0])), ctypes.c_int64(n)]
    arg_ptrs = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    (err,) = driver.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, 0, ctypes.addressof(arg_ptrs), 0)
    assert int(err) == 0, err
    (err,) = driver.cuCtxSynchronize()
    assert int(err) == 0, err
    x64 = x.astype(np.float64)
    ref = 0.5 * x64 * (1.0 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64**3)))
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-5, atol=1e-6)
    driver.cuModuleUnload(module)


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _build(tmp_path_factory.mktemp("pruned"), "pruned_kernels")


def test_cpp_linked_kernels_without_their_unread_parameters(pruned: types.ModuleType) -> None:
    """pruned_kernels.py: entry points linked through LTO-IR without the parameters their code
    never reads (oxide_build/lower/entry_params.py), launched through the Python path, then the
    C launcher; axpb_2d's index32 instance and (told the tensors do not fit) the one as written."""
    from oxide.runtime import arguments

    rng = np.random.default_rng(29)
    n, a, b = 3001, 1.25, -0.75
    x = rng.standard_normal(n).astype(np.float32)
    tx = devices.array(x)
    for _ in range(3):
        out = _nan(n)
        pruned.axpb_checked[pruned.axpb_checked.grid_for(n), 256](a, tx, 99.0, b, out)
        devices.synchronize()
        np.testing.assert_allclose(devices.to_numpy(out), a * x.astype(np.float64) + b, rtol=1e-6, atol=1e-6)
    rows, cols = 45, 133
    x2 = rng.standard_normal((rows, cols)).astype(np.float32)
    t2 = devices.array(x2)  # contiguous rows: the index32 instance
    want = a * x2.astype(np.float64) + b
    grid, block = (-(-cols // 32), -(-rows // 8)), (32, 8)
    for _ in range(3):
        out2 = devices.full((rows, cols), np.nan)
        pruned.axpb_2d[grid, block](a, t2, b, out2)
        devices.synchronize()
        np.testing.assert_allclose(devices.to_numpy(out2), want, rtol=1e-6, atol=1e-6)
    fits = arguments.fits_index32
    arguments.fits_index32 = lambda views: False
    try:
        out2 = devices.full((rows, cols), np.nan)
        pruned.axpb_2d._launch((a, t2, b, out2), (grid[0], grid[1], 1), (32, 8, 1), 0, 0)
        devices.synchronize()
    finally:
        arguments.fits_index32 = fits
    np.testing.assert_allclose(devices.to_numpy(out2), want, rtol=1e-6, atol=1e-6)
    # a transposed input (strides (1, rows)) is not contiguous along its rows: the one as written
    xt = rng.standard_normal((cols, rows)).astype(np.float32)
    out2 = devices.full((rows, cols), np.nan)
    pruned.axpb_2d[grid, block](a, devices.permuted(devices.array(xt), (1, 0)), b, out2)
    devices.synchronize()
    np.testing.assert_allclose(devices.to_numpy(out2), a * xt.T.astype(np.float64) + b, rtol=1e-6, atol=1e-6)
    (variant,) = pruned.axpb_2d._dispatch.variants
    assert variant.functions and variant.index32.functions  # both instances ran
