"""CUDA C++ interop on a GPU: Python kernels calling C++ device functions and CUB through LTO,
a C++ kernel launched from Python, and a C++ kernel calling an exported Python function.
Every result is compared with a NumPy float64 reference; outputs start as NaN."""
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

pytestmark = [pytest.mark.gpu, devices.gpu_only("CUDA C++ linked through @extern (no CPU form)")]

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


def _nan(torch, n: int):  # type: ignore[no-untyped-def]
    return torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_python_kernel_calls_cpp_scalar_function(ffi: types.ModuleType, n: int) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    a, b = 1.5, -0.25
    tx, out = torch.as_tensor(x, device="cuda"), _nan(torch, n)
    ffi.axpb_cpp[ffi.axpb_cpp.grid_for(n), 256](a, tx, b, out)
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), a * x.astype(np.float64) + b, rtol=1e-6, atol=1e-6)

    out2 = _nan(torch, n)
    ffi.softplus_cpp[ffi.softplus_cpp.grid_for(n), 256](tx, out2)
    torch.cuda.synchronize()
    ref = np.log1p(np.exp(x.astype(np.float64)))
    np.testing.assert_allclose(out2.cpu().numpy(), ref, rtol=2e-6, atol=1e-6)


def test_cpp_function_taking_a_view(ffi: types.ModuleType) -> None:
    torch = pytest.importorskip("torch")
    n, w = 10_000, 7
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = _nan(torch, n)
    ffi.window_sums[ffi.window_sums.grid_for(n, 128), 128](torch.as_tensor(x, device="cuda"), w, out)
    torch.cuda.synchronize()
    x64 = x.astype(np.float64)
    ref = np.array([x64[i : i + w].sum() for i in range(n)])
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-5, atol=1e-5)


def test_cpp_kernel_launched_from_python(ffi: types.ModuleType) -> None:
    torch = pytest.importorskip("torch")
    n = 100_003
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = torch.as_tensor(y, device="cuda")
    ffi.scale_add[ffi.scale_add.grid_for(n), 256](2.0, torch.as_tensor(x, device="cuda"), out)
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), 2.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    with pytest.raises(Exception):  # same argument checks as a Python kernel
        ffi.scale_add[1, 32](2.0, torch.as_tensor(x, device="cuda"))


@pytest.mark.parametrize("n", [256, 1000, 1 << 18])
def test_cub_block_reduce(cub: types.ModuleType, n: int) -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    blocks = (n + 255) // 256
    sums, maxes = _nan(torch, blocks), _nan(torch, blocks)
    cub.block_sums[blocks, 256](torch.as_tensor(x, device="cuda"), sums, maxes)
    torch.cuda.synchronize()
    padded = np.concatenate([x.astype(np.float64), np.zeros(blocks * 256 - n)]).reshape(blocks, 256)
    np.testing.assert_allclose(sums.cpu().numpy(), padded.sum(axis=1), rtol=1e-5, atol=1e-4)
    padded_max = np.concatenate([x.astype(np.float64), np.full(blocks * 256 - n, -3.0e38)]).reshape(blocks, 256)
    np.testing.assert_array_equal(maxes.cpu().numpy(), padded_max.max(axis=1).astype(np.float32))


def test_cub_warp_reduce(cub: types.ModuleType) -> None:
    torch = pytest.importorskip("torch")
    n = 4096 + 17
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    blocks = (n + 255) // 256
    warps = blocks * 8
    out = _nan(torch, warps)
    cub.warp_sums[blocks, 256](torch.as_tensor(x, device="cuda"), out)
    torch.cuda.synchronize()
    padded = np.concatenate([x.astype(np.float64), np.zeros(warps * 32 - n)]).reshape(warps, 32)
    np.testing.assert_allclose(out.cpu().numpy(), padded.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cub_example(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    mod = _build(tmp_path, "block_sum", Path(__file__).parent.parent / "examples" / "cub_reduce")
    n = 1_000_003
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    tx = torch.as_tensor(x, device="cuda")
    for kernel in (mod.total, mod.total_by_warps):
        out = torch.zeros(1, dtype=torch.float32, device="cuda")
        kernel[kernel.grid_for(n), 256](tx, out)
        torch.cuda.synchronize()
        np.testing.assert_allclose(out.item(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2)


CPP_CALLER = r'''
#include "oxide_exports.h"

extern "C" __global__ void gelu_cpp(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = py_gelu(x[i]);
}
'''


def test_cpp_kernel_calls_exported_python_function(tmp_path: Path) -> None:
    """@device(export="py_gelu") → LTO-IR + header; NVRTC compiles a C++ kernel calling it;
    nvJitLink links both on this host; the driver loads the cubin."""
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
    torch = pytest.importorskip("torch")
    from oxide.runtime import arguments

    rng = np.random.default_rng(29)
    n, a, b = 3001, 1.25, -0.75
    x = rng.standard_normal(n).astype(np.float32)
    tx = torch.as_tensor(x, device="cuda")
    for _ in range(3):
        out = _nan(torch, n)
        pruned.axpb_checked[pruned.axpb_checked.grid_for(n), 256](a, tx, 99.0, b, out)
        torch.cuda.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), a * x.astype(np.float64) + b, rtol=1e-6, atol=1e-6)
    rows, cols = 45, 133
    x2 = rng.standard_normal((cols, rows)).astype(np.float32)
    t2 = torch.as_tensor(x2, device="cuda").t()  # strides (1, rows)
    want = a * x2.T.astype(np.float64) + b
    grid, block = (-(-cols // 32), -(-rows // 8)), (32, 8)
    for _ in range(3):
        out2 = torch.full((rows, cols), float("nan"), device="cuda")
        pruned.axpb_2d[grid, block](a, t2, b, out2)
        torch.cuda.synchronize()
        np.testing.assert_allclose(out2.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
    fits = arguments.fits_index32
    arguments.fits_index32 = lambda views: False
    try:
        out2 = torch.full((rows, cols), float("nan"), device="cuda")
        pruned.axpb_2d._launch((a, t2, b, out2), (grid[0], grid[1], 1), (32, 8, 1),
                               torch.cuda.current_stream().cuda_stream, 0)
        torch.cuda.synchronize()
    finally:
        arguments.fits_index32 = fits
    np.testing.assert_allclose(out2.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
    (variant,) = pruned.axpb_2d._dispatch.variants
    assert variant.functions and variant.index32.functions  # both instances ran
