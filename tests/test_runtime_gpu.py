"""The runtime on a GPU: load hand-written PTX through a manifest and launch it with DeviceArray,
PyTorch and CuPy arrays; check every element against NumPy, and the argument errors.

The PTX follows the kernel ABI (a view is a u64 pointer and an i64 length), so these tests need
no compiler on the GPU. ``.version 7.8`` / ``.target sm_80`` JIT on any driver from CUDA 11.8 on.
On the CPU device (no GPU here: conftest.py) the manifest is not read: the launches compile the
module's Python source, whose kernels do what the PTX does; the tests that are about the PTX
itself, GPU streams, faults, CuPy or the C launcher are marked ``gpu_only`` with their reason.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import types
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu

SIZES = [1, 1000, 2**24 + 3]

PTX = r"""
.version 7.8
.target sm_80
.address_size 64

.visible .entry saxpy_f32(
	.param .f32 a,
	.param .u64 x, .param .u64 x_len,
	.param .u64 y, .param .u64 y_len,
	.param .u64 out, .param .u64 out_len
)
{
	.reg .pred %p<2>;
	.reg .f32 %f<5>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<16>;

	ld.param.f32 %f1, [a];
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.u64 %rd3, [out];
	ld.param.u64 %rd4, [out_len];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd5, %r1, %r2;
	cvt.u64.u32 %rd6, %r3;
	add.s64 %rd7, %rd5, %rd6;
	setp.ge.s64 %p1, %rd7, %rd4;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd8, %rd1;
	cvta.to.global.u64 %rd9, %rd2;
	cvta.to.global.u64 %rd10, %rd3;
	shl.b64 %rd11, %rd7, 2;
	add.s64 %rd12, %rd8, %rd11;
	ld.global.f32 %f2, [%rd12];
	add.s64 %rd13, %rd9, %rd11;
	ld.global.f32 %f3, [%rd13];
	fma.rn.f32 %f4, %f1, %f2, %f3;
	add.s64 %rd14, %rd10, %rd11;
	st.global.f32 [%rd14], %f4;
DONE:
	ret;
}

.visible .entry saxpy_f64(
	.param .f64 a,
	.param .u64 x, .param .u64 x_len,
	.param .u64 y, .param .u64 y_len,
	.param .u64 out, .param .u64 out_len
)
{
	.reg .pred %p<2>;
	.reg .f64 %fd<5>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<16>;

	ld.param.f64 %fd1, [a];
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.u64 %rd3, [out];
	ld.param.u64 %rd4, [out_len];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd5, %r1, %r2;
	cvt.u64.u32 %rd6, %r3;
	add.s64 %rd7, %rd5, %rd6;
	setp.ge.s64 %p1, %rd7, %rd4;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd8, %rd1;
	cvta.to.global.u64 %rd9, %rd2;
	cvta.to.global.u64 %rd10, %rd3;
	shl.b64 %rd11, %rd7, 3;
	add.s64 %rd12, %rd8, %rd11;
	ld.global.f64 %fd2, [%rd12];
	add.s64 %rd13, %rd9, %rd11;
	ld.global.f64 %fd3, [%rd13];
	fma.rn.f64 %fd4, %fd1, %fd2, %fd3;
	add.s64 %rd14, %rd10, %rd11;
	st.global.f64 [%rd14], %fd4;
DONE:
	ret;
}

.visible .entry probe(
	.param .s8 p_i8,
	.param .s16 p_i16,
	.param .s32 p_i32,
	.param .s64 p_i64,
	.param .u32 p_u32,
	.param .f64 p_f64,
	.param .u8 p_bool,
	.param .b16 p_f16,
	.param .f32 p_f32,
	.param .u64 out, .param .u64 out_len
)
{
	.reg .b16 %h<2>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<20>;

	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.s8 %r1, [p_i8];
	cvt.s64.s32 %rd2, %r1;
	st.global.u64 [%rd1], %rd2;
	ld.param.s16 %r2, [p_i16];
	cvt.s64.s32 %rd3, %r2;
	st.global.u64 [%rd1+8], %rd3;
	ld.param.s32 %r3, [p_i32];
	cvt.s64.s32 %rd4, %r3;
	st.global.u64 [%rd1+16], %rd4;
	ld.param.s64 %rd5, [p_i64];
	st.global.u64 [%rd1+24], %rd5;
	ld.param.u32 %r4, [p_u32];
	cvt.u64.u32 %rd6, %r4;
	st.global.u64 [%rd1+32], %rd6;
	ld.param.f64 %rd7, [p_f64];
	st.global.u64 [%rd1+40], %rd7;
	ld.param.u8 %r5, [p_bool];
	cvt.u64.u32 %rd8, %r5;
	st.global.u64 [%rd1+48], %rd8;
	ld.param.b16 %h1, [p_f16];
	cvt.u32.u16 %r6, %h1;
	cvt.u64.u32 %rd9, %r6;
	st.global.u64 [%rd1+56], %rd9;
	ld.param.b32 %r7, [p_f32];
	cvt.u64.u32 %rd10, %r7;
	st.global.u64 [%rd1+64], %rd10;
	ld.param.u64 %rd11, [out_len];
	st.global.u64 [%rd1+72], %rd11;
	ret;
}
"""

SOURCE = """
import oxide as ox
from oxide import kernel, f16, f32, f64, i8, i16, i32, i64, u16, u32, u64, boolean, Slice, DisjointSlice, MutSlice, thread

T = ox.TypeVar("T", f32, f64)


@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel
def saxpy32(a: f32, x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel
def probe(p_i8: i8, p_i16: i16, p_i32: i32, p_i64: i64, p_u32: u32, p_f64: f64, p_bool: boolean,
          p_f16: f16, p_f32: f32, out: MutSlice[u64]) -> None:
    with ox.unsafe():  # one thread writes every element
        out[0] = ox.bits.bitcast(i64(p_i8), u64)
        out[1] = ox.bits.bitcast(i64(p_i16), u64)
        out[2] = ox.bits.bitcast(i64(p_i32), u64)
        out[3] = ox.bits.bitcast(p_i64, u64)
        out[4] = u64(p_u32)
        out[5] = ox.bits.bitcast(p_f64, u64)
        out[6] = u64(1) if p_bool else u64(0)
        out[7] = u64(ox.bits.bitcast(p_f16, u16))
        out[8] = u64(ox.bits.bitcast(p_f32, u32))
        out[9] = u64(len(out))
"""


def _manifest_kernels() -> tuple[Any, ...]:
    from oxide.runtime.manifest import KernelSpec, ParamSpec

    def saxpy_params(t: str) -> tuple[ParamSpec, ...]:
        return (
            ParamSpec("a", "scalar", t),
            ParamSpec("x", "slice", t),
            ParamSpec("y", "slice", t),
            ParamSpec("out", "disjoint_slice", t),
        )

    probe = tuple(
        ParamSpec(n, "scalar", t)
        for n, t in (("p_i8", "i8"), ("p_i16", "i16"), ("p_i32", "i32"), ("p_i64", "i64"), ("p_u32", "u32"),
                     ("p_f64", "f64"), ("p_bool", "bool"), ("p_f16", "f16"), ("p_f32", "f32"))
    ) + (ParamSpec("out", "mut_slice", "u64"),)  # fmt: skip
    return (
        KernelSpec("saxpy", "saxpy_f32", saxpy_params("f32"), {"T": "f32"}),
        KernelSpec("saxpy", "saxpy_f64", saxpy_params("f64"), {"T": "f64"}),
        KernelSpec("saxpy32", "saxpy_f32", saxpy_params("f32")),
        KernelSpec("probe", "probe", probe),
    )


def _write_module(
    root: Path,
    cubins: dict[str, bytes] | None = None,
    *,
    source: str = SOURCE,
    ptx: str = PTX,
    kernels: tuple[Any, ...] | None = None,
    ptx_arch: str = "sm_80",
) -> types.ModuleType:
    from oxide.runtime.manifest import ModuleManifest, manifest_path

    name = f"oxgpu_{uuid.uuid4().hex[:10]}"
    src = root / f"{name}.py"
    src.write_text(textwrap.dedent(source))
    path = manifest_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / f"{name}.ptx").write_text(ptx)
    for arch, data in (cubins or {}).items():
        (path.parent / f"{name}.{arch}.cubin").write_bytes(data)
    manifest = ModuleManifest(
        module=name,
        source=src.name,
        source_sha256=hashlib.sha256(src.read_bytes()).hexdigest(),
        kernels=kernels if kernels is not None else _manifest_kernels(),
        cubins={arch: f"{name}.{arch}.cubin" for arch in (cubins or {})},
        ptx={ptx_arch: f"{name}.ptx"},
    )
    path.write_text(manifest.to_json())
    return _import_source(src, name)


def _import_source(src: Path, name: str) -> types.ModuleType:
    """Imports ``src`` as module ``name`` (its manifest lies next to it)."""
    spec = importlib.util.spec_from_file_location(name, src)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _compile_for_this_gpu(tmp_path_factory: pytest.TempPathFactory, source: str, prefix: str) -> types.ModuleType:
    """``source`` compiled for this GPU by oxide_build, imported from a temporary directory
    (``module.SOURCE_FILE`` is its file name); skips without the compiler. On the CPU device
    only written and imported: its launches compile it."""
    if devices.on_cpu():
        root = tmp_path_factory.mktemp(prefix)
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        src = root / f"{name}.py"
        src.write_text(source)
        module = _import_source(src, name)
        module.SOURCE_FILE = src.name  # type: ignore[attr-defined]
        return module
    pytest.importorskip("llvmlite")
    from oxide.errors import ToolchainError
    from oxide.runtime import device

    try:
        from oxide_build.compile import SUPPORTED_ARCHS, CompileOptions, compile_module
        from oxide_build.package.artifacts import write_module_artifacts
    except ImportError as e:
        pytest.skip(f"oxide_build is not installed: {e}")
    arch = device.context_device(device.current_context()).arch
    if arch not in SUPPORTED_ARCHS:
        pytest.skip(f"oxide_build does not target {arch}")
    root = tmp_path_factory.mktemp(prefix)
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    src = root / f"{name}.py"
    src.write_text(source)
    try:
        compiled = compile_module(src, name, CompileOptions(archs=(arch,)))
    except ToolchainError as e:
        pytest.skip(f"no compiler toolchain: {e}")
    write_module_artifacts(compiled, root)
    module = _import_source(src, name)
    module.SOURCE_FILE = src.name  # type: ignore[attr-defined]
    return module


@pytest.fixture(scope="module")
def kmod(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _write_module(tmp_path_factory.mktemp("ptxmod"))


def _reference(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.float64(a) * x.astype(np.float64) + y.astype(np.float64)


def _inputs(n: int, dtype: Any, seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = float(np.array(rng.uniform(-4, 4), dtype))  # representable in dtype: the reference is exact
    return a, rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_device_array(kmod: types.ModuleType, n: int) -> None:
    from oxide.runtime import DeviceArray, synchronize

    a, x, y = _inputs(n, np.float32, n)
    dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, dx, dy, out)
    synchronize()
    got = out.to_numpy()
    assert got.dtype == np.float32 and got.shape == (n,)
    np.testing.assert_allclose(got, _reference(a, x, y), rtol=1e-6, atol=0)


@pytest.mark.parametrize("n", [1, 1000, 100_003])
def test_saxpy_f64_specialization(kmod: types.ModuleType, n: int) -> None:
    from oxide.runtime import DeviceArray, synchronize

    a, x, y = _inputs(n, np.float64, n + 1)
    out = DeviceArray.from_numpy(np.full(n, np.nan))
    kmod.saxpy.launch(a, DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), out, grid=kmod.saxpy.grid_for(n, 128), block=128)
    synchronize()
    # the kernel rounds once (fma), the reference twice: allow one ulp of the terms
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_torch(kmod: types.ModuleType, n: int) -> None:
    torch = pytest.importorskip("torch")
    a, x, y = _inputs(n, np.float32, 7 * n)
    dev = devices.torch_device()  # CPU tensors on the CPU device
    tx, ty = torch.as_tensor(x, device=dev), torch.as_tensor(y, device=dev)
    out = torch.full((n,), float("nan"), dtype=torch.float32, device=dev)
    kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, tx, ty, out)
    devices.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)


@devices.gpu_only("torch CUDA streams (torch.cuda.Stream)")
def test_saxpy_torch_stream_and_views(kmod: types.ModuleType) -> None:
    torch = pytest.importorskip("torch")
    n = 4096
    a, x, y = _inputs(n + 8, np.float32, 3)
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    out = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    # a view with a storage offset: the kernel must see data_ptr(), not the start of the storage
    kmod.saxpy[kmod.saxpy.grid_for(n), 256, stream](a, tx[8:], ty[8:], out)
    stream.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x[8:], y[8:]), rtol=1e-6, atol=0)


@devices.gpu_only("uses CuPy (GPU arrays and CUDA streams)")
@pytest.mark.parametrize("n", SIZES)
def test_saxpy_cupy(kmod: types.ModuleType, n: int) -> None:
    cp = pytest.importorskip("cupy")
    a, x, y = _inputs(n, np.float32, 11 * n)
    cx, cy = cp.asarray(x), cp.asarray(y)
    out = cp.full(n, cp.nan, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.Device().synchronize()
    kmod.saxpy[kmod.saxpy.grid_for(n), 256, stream](np.float32(a), cx, cy, out)
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), _reference(a, x, y), rtol=1e-6, atol=0)


@devices.gpu_only("uses CuPy (GPU arrays through DLPack)")
def test_saxpy_cupy_through_dlpack(kmod: types.ModuleType) -> None:
    cp = pytest.importorskip("cupy")

    class OnlyDLPack:
        def __init__(self, a: Any) -> None:
            self.a = a

        def __dlpack__(self, stream: Any = None) -> Any:
            return self.a.__dlpack__()

        def __dlpack_device__(self) -> Any:
            return self.a.__dlpack_device__()

    n = 1000
    a, x, y = _inputs(n, np.float32, 5)
    out = cp.full(n, cp.nan, dtype=cp.float32)
    kmod.saxpy[4, 256](a, OnlyDLPack(cp.asarray(x)), OnlyDLPack(cp.asarray(y)), OnlyDLPack(out))
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), _reference(a, x, y), rtol=1e-6, atol=0)


@devices.gpu_only("Numba CUDA device arrays and cuda.core streams")
def test_numba_arrays_and_cuda_core_streams(kmod: types.ModuleType) -> None:
    """Numba device arrays (``__cuda_array_interface__``) as arguments, launched on the default
    stream and on a cuda.core stream (``__cuda_stream__``); every element checked."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # type: ignore[attr-defined]  # numba-cuda still uses the removed name
    numba_cuda = pytest.importorskip("numba.cuda")
    n = 30_011
    grid = kmod.saxpy.grid_for(n)
    for attempt in range(2):  # the first learns the array type; the second takes the C path
        a, x, y = _inputs(n, np.float32, 73 + attempt)
        dx, dy = numba_cuda.to_device(x), numba_cuda.to_device(y)
        out = numba_cuda.to_device(np.full(n, np.nan, np.float32))
        kmod.saxpy[grid, 256](a, dx, dy, out)
        numba_cuda.synchronize()
        np.testing.assert_allclose(out.copy_to_host(), _reference(a, x, y), rtol=1e-6, atol=0)
    try:
        from cuda.core import Device
    except ImportError:
        try:
            from cuda.core.experimental import Device  # type: ignore[no-redef]
        except ImportError:
            pytest.skip("cuda.core is not installed")
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    out2 = numba_cuda.to_device(np.full(n, np.nan, np.float32))
    numba_cuda.synchronize()
    kmod.saxpy[grid, 256, stream](a, dx, dy, out2)
    stream.sync()
    np.testing.assert_allclose(out2.copy_to_host(), _reference(a, x, y), rtol=1e-6, atol=0)


def test_every_scalar_reaches_the_kernel(kmod: types.ModuleType) -> None:
    from oxide.runtime import DeviceArray, synchronize

    out = DeviceArray.from_numpy(np.zeros(10, np.uint64))
    kmod.probe[1, 1](-5, -300, -70000, -(2**40), 2**32 - 1, 1e300, True, 1.5, 0.1, out)
    synchronize()
    got = out.to_numpy()
    assert got[:4].view(np.int64).tolist() == [-5, -300, -70000, -(2**40)]
    assert int(got[4]) == 2**32 - 1
    assert got[5:6].view(np.float64)[0] == 1e300
    assert int(got[6]) == 1
    assert int(got[7]) == int(np.array(1.5, np.float16).view(np.uint16))
    assert np.array(int(got[8]), np.uint32).view(np.float32) == np.float32(0.1)
    assert int(got[9]) == 10


@devices.gpu_only("loads hand-written PTX: a cubin ptxas assembled from it, and its register count")
def test_cubin_is_preferred(tmp_path: Path) -> None:
    from cuda.bindings import driver

    from oxide.runtime import DeviceArray, device, synchronize

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        try:
            from cuda.pathfinder import find_nvidia_binary_utility

            ptxas = find_nvidia_binary_utility("ptxas")
        except Exception:
            ptxas = None
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    info = device.context_device(device.current_context())
    (tmp_path / "k.ptx").write_text(PTX)
    subprocess.run([ptxas, f"-arch={info.arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)
    m = _write_module(tmp_path, {info.arch: (tmp_path / "k.cubin").read_bytes()})
    n = 1000
    a, x, y = _inputs(n, np.float32, 1)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    m.saxpy32[4, 256](a, DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), out)
    synchronize()
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    attrs = m.saxpy32.attributes
    assert attrs["binary_version"] == info.major * 10 + info.minor
    assert attrs["registers"] > 0
    assert 0 < m.saxpy32.max_block_size() <= 1024
    del driver


def test_launch_from_another_thread(kmod: types.ModuleType) -> None:
    from oxide.runtime import DeviceArray, synchronize

    n = 5000
    a, x, y = _inputs(n, np.float32, 9)
    dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    errors: list[BaseException] = []

    def work() -> None:
        try:  # a new thread has no current context: the runtime makes the primary one current
            kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, dx, dy, out)
            synchronize()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors == []
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)


def test_wrong_arguments_on_gpu_arrays(kmod: types.ModuleType) -> None:
    """Arguments the launch refuses, each with its message. On the CPU device host arrays are
    the arguments (docs/runtime.md): the other checks are the GPU's, made on NumPy arrays."""
    bad: list[tuple[tuple[Any, ...], str]] = []
    x: Any
    if devices.on_cpu():
        x = np.zeros(16, np.float32)
        i32s = [x.astype(np.int32) for _ in range(3)]
        as_f64, as_2d = x.astype(np.float64), x.reshape(4, 4)
    else:
        torch = pytest.importorskip("torch")
        x = torch.zeros(16, device="cuda")
        i32s = [x.int() for _ in range(3)]
        as_f64, as_2d = x.double(), x.view(4, 4)
        bad += [
            (
                (1.0, torch.zeros(16), x, x),
                "parameter 'x' of saxpy needs a device array; got a torch.Tensor (host memory) — copy it to the GPU "
                "first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)",
            ),
            (
                (1.0, x, np.zeros(16, np.float32), x),
                "parameter 'y' of saxpy needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU "
                "first, e.g. torch.as_tensor(y, device='cuda') or cupy.asarray(y), or run it on the CPU device (OXIDE_DEVICE=cpu)",
            ),
        ]
    bad += [
        (
            (1, *i32s),
            "saxpy has no specialization for these arguments (x: i32, y: i32, out: i32); available: (T=f32), (T=f64)",
        ),
        ((1.0, as_2d, x, x), "parameter 'x' of saxpy needs a 1-D array; got shape (4, 4)"),
        ((1.0, x, x[::2], x[:8]), "parameter 'y' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),
        (("2", x, x, x), "parameter 'a' of saxpy needs a number (f32); got str '2'"),
        ((1.0, x, x), "saxpy() takes 4 arguments (a, x, y, out); got 3"),
    ]
    for args, message in bad:
        with pytest.raises(TypeError) as info:
            kmod.saxpy[1, 32](*args)
        assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        kmod.saxpy32[1, 32](1.0, as_f64, x, x)
    assert str(info.value) == "parameter 'x' of saxpy32 needs f32 elements; got f64"


# ---------------------------------------------------------------------------------------------
# cluster and cooperative launches, stream-ordered DeviceArrays, graph capture

CLUSTER_PTX = r"""
.version 7.8
.target sm_90
.address_size 64

.visible .entry cluster_info(.param .u64 out, .param .u64 out_len)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<5>;
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra DONE;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %cluster_nctarank;
	mov.u32 %r4, %cluster_ctarank;
	mul.wide.u32 %rd2, %r2, 8;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	st.global.u32 [%rd3+4], %r4;
DONE:
	ret;
}
"""

CLUSTER_SOURCE = """
from oxide import kernel, u32, MutSlice


@kernel
def cluster_info(out: MutSlice[u32]) -> None:
    pass
"""


@devices.gpu_only("loads hand-written PTX: %cluster_ctarank of thread block clusters (clusters have no CPU form)")
def test_cluster_launch(kmod: types.ModuleType, tmp_path: Path) -> None:
    """``launch(cluster=...)``: each block sees the cluster it was launched in (its size and its
    rank, read from %cluster_nctarank / %cluster_ctarank), and a kernel's results are right."""
    from oxide.runtime import DeviceArray, device, synchronize
    from oxide.runtime.manifest import KernelSpec, ParamSpec

    if device.context_device(device.current_context()).major < 9:
        pytest.skip("thread block clusters need compute capability 9.0")
    m = _write_module(tmp_path, source=CLUSTER_SOURCE, ptx=CLUSTER_PTX, ptx_arch="sm_90",
                      kernels=(KernelSpec("cluster_info", "cluster_info", (ParamSpec("out", "mut_slice", "u32"),)),))
    for blocks, cluster in ((64, 2), (64, 4), (48, 8), (32, 16)):
        out = DeviceArray.from_numpy(np.full(2 * blocks, 0xDEAD, np.uint32))
        m.cluster_info.launch(out, grid=blocks, block=32, cluster=cluster)
        got = out.to_numpy().reshape(blocks, 2)
        np.testing.assert_array_equal(got[:, 0], np.full(blocks, cluster, np.uint32))
        np.testing.assert_array_equal(got[:, 1], np.arange(blocks, dtype=np.uint32) % cluster)
    n = 100_000
    a, x, y = _inputs(n, np.float32, 41)
    dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    grid = kmod.saxpy.grid_for(n) + kmod.saxpy.grid_for(n) % 2
    kmod.saxpy.launch(a, dx, dy, out, grid=grid, block=256, cluster=2)
    synchronize()
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match=r"grid \(391, 1, 1\) is not a whole number of clusters \(2, 1, 1\)"):
        kmod.saxpy.launch(a, dx, dy, out, grid=391, block=256, cluster=2)


def test_cooperative_launch(kmod: types.ModuleType) -> None:
    """``launch(cooperative=True)``: a grid that fits the device runs (results checked); one
    that does not is refused with the device's figures before launching."""
    from oxide.runtime import DeviceArray, synchronize

    n = 100_003
    a, x, y = _inputs(n, np.float32, 43)
    dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    kmod.saxpy.launch(a, dx, dy, out, grid=kmod.saxpy.grid_for(n), block=256, cooperative=True)
    synchronize()
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match=r"a cooperative launch of saxpy needs all its blocks resident at once: "
                                         r"at most \d+ blocks of 256 threads"):
        kmod.saxpy.launch(a, dx, dy, out, grid=1_000_000, block=256, cooperative=True)


@devices.gpu_only("torch CUDA streams and stream-ordered allocation (cuMemAllocAsync)")
def test_zeros_and_stream_ordered_device_arrays(kmod: types.ModuleType) -> None:
    """DeviceArray.zeros is all zeros; arrays allocated, filled, used and read on a stream
    (cuMemAllocAsync) give the right results without a device-wide synchronization."""
    torch = pytest.importorskip("torch")
    from oxide.runtime import DeviceArray

    z = DeviceArray.zeros((37, 11), "f64")
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((37, 11)))
    stream = torch.cuda.Stream()
    n = 65_537
    for _ in range(3):
        a, x, y = _inputs(n, np.float32, 47)
        dx = DeviceArray.from_numpy(x, stream=stream)
        dy = DeviceArray.from_numpy(y, stream=stream)
        out = DeviceArray.zeros(n, "f32", stream=stream)
        np.testing.assert_array_equal(out.to_numpy(), np.zeros(n, np.float32))  # waits for its stream only
        kmod.saxpy[kmod.saxpy.grid_for(n), 256, stream](a, dx, dy, out)
        np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
        assert out.__cuda_array_interface__["stream"] == stream.cuda_stream
        for arr in (dx, dy, out):
            arr.free()  # cuMemFreeAsync on the stream
    stream.synchronize()


@devices.gpu_only("a CUDA stream kept busy by torch.cuda._sleep: CPU launches are synchronous")
def test_launch_waits_for_the_stream_an_array_is_ordered_on(kmod: types.ModuleType) -> None:
    """An array zeroed on a busy stream (behind ~50 ms of GPU sleep; its memory, reused from the
    stream's pool, still holds NaNs until then), used by a launch on another stream: the launch
    waits for the first stream (an event) and reads the zeros."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is not available")
    from oxide.runtime import DeviceArray

    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 20
    grid = kmod.saxpy.grid_for(n)
    for seed in (67, 71):
        a, x, _ = _inputs(n, np.float32, seed)
        dx = torch.as_tensor(x, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        torch.cuda.synchronize()
        # NaNs written on the producer stream into memory freed back to its pool (no host
        # synchronization from here on: that would hand the pool's memory back to the driver)
        stale = DeviceArray.empty(n, "f32", stream=producer)
        kmod.saxpy[grid, 256, producer](float("nan"), dx, dx, stale)
        stale.free()
        with torch.cuda.stream(producer):
            torch.cuda._sleep(100_000_000)
        zeros = DeviceArray.zeros(n, "f32", stream=producer)  # zeroed after the sleep
        kmod.saxpy[grid, 256, consumer](a, dx, zeros, out)
        consumer.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), np.float64(a) * x.astype(np.float64), rtol=1e-6, atol=0)
        producer.synchronize()
        zeros.free()
    producer.synchronize()


@devices.gpu_only("CUDA graph capture of a torch stream")
def test_graph_capture_of_a_stream(kmod: types.ModuleType, tmp_path: Path) -> None:
    """Launches captured into a CUDA graph on a torch stream replay with the data the inputs
    hold at replay time (the C path here; the Python path under OXIDE_PURE_PYTHON=1)."""
    torch = pytest.importorskip("torch")

    n = 50_001
    a, x, y = _inputs(n, np.float32, 53)
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    mid = torch.full((n,), float("nan"), device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    stream = torch.cuda.Stream()
    grid = kmod.saxpy.grid_for(n)
    with torch.cuda.stream(stream):  # warm-up outside capture: loads the module, fills the C plan
        kmod.saxpy[grid, 256, stream](a, tx, ty, mid)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        kmod.saxpy[grid, 256, stream](a, tx, ty, mid)
        kmod.saxpy.launch(2.0, mid, ty, out, grid=grid, block=256, stream=stream)
    for seed in (59, 61):
        _, x2, y2 = _inputs(n, np.float32, seed)
        tx.copy_(torch.as_tensor(x2)), ty.copy_(torch.as_tensor(y2))
        mid.fill_(float("nan")), out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        first = _reference(a, x2, y2).astype(np.float32)
        np.testing.assert_allclose(mid.cpu().numpy(), first, rtol=1e-6, atol=0)
        np.testing.assert_allclose(out.cpu().numpy(), _reference(2.0, first, y2), rtol=1e-6, atol=1e-6)
    # a kernel whose first launch (module load, error record set-up) happens inside the capture
    fresh = _write_module(tmp_path)
    graph2 = torch.cuda.CUDAGraph()
    out.fill_(float("nan"))
    with torch.cuda.graph(graph2, stream=stream):
        fresh.saxpy32[grid, 256, stream](a, tx, ty, out)
    graph2.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), _reference(a, tx.cpu().numpy(), ty.cpu().numpy()), rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------------
# device-side errors: a kernel compiled by oxide_build with a deliberate out-of-bounds read

CHECKED_SOURCE = '''
import oxide
from oxide import DisjointSlice, Slice, f32, thread


@oxide.kernel
def oob(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i + 1]


@oxide.kernel
def copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i]


@oxide.kernel
def positive(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        assert x[i] > 0.0, "x must be positive"
        out[i] = x[i]
'''


def _line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    """CHECKED_SOURCE compiled for this GPU by oxide_build."""
    return _compile_for_this_gpu(tmp_path_factory, CHECKED_SOURCE, "oxchecked")


def test_out_of_bounds_read_raises_kernel_error(checked: types.ModuleType) -> None:
    import oxide
    from oxide.runtime import DeviceArray, device, synchronize

    n = 1000
    host = np.arange(n, dtype=np.float32) + 1
    x = DeviceArray.from_numpy(host)
    out = DeviceArray.from_numpy(np.zeros(n, np.float32))
    if devices.on_cpu():  # a CPU launch raises its own errors (docs/runtime.md, "The CPU device")
        with pytest.raises(oxide.KernelError) as info:
            checked.oob[checked.oob.grid_for(n), 256](x, out)
    else:
        checked.oob[checked.oob.grid_for(n), 256](x, out)
        with pytest.raises(oxide.KernelError) as info:
            synchronize()
    e = info.value
    line = _line_of(CHECKED_SOURCE, "out[i] = x[i + 1]")
    col = CHECKED_SOURCE.splitlines()[line - 1].index("x[i + 1]") + 1
    assert e.kernel == "oob"
    assert e.location == f"{checked.SOURCE_FILE}:{line}:{col}"
    assert (e.index, e.length) == (n, n)
    assert str(e) == f"bounds check failed in kernel oob at {e.location}: x[i + 1] with index {n} but length {n}"
    # the failing thread exited; every other thread did its work
    np.testing.assert_array_equal(out.to_numpy()[: n - 1], host[1:])

    # the process is still usable: a correct kernel runs (twice: the Python path, then the C one)
    out2 = DeviceArray.from_numpy(np.zeros(n, np.float32))
    for _ in range(2):
        checked.copy[checked.copy.grid_for(n), 256](x, out2)
    synchronize()
    np.testing.assert_array_equal(out2.to_numpy(), host)

    # a second failure, now raised by the next launch (after a synchronisation oxide did not see);
    # on the CPU device by the failing launch itself, and the next launch runs
    for _ in range(2):  # twice: the second launch of oob takes the C path
        if devices.on_cpu():
            with pytest.raises(oxide.KernelError, match=f"with index {n} but length {n}$"):
                checked.oob[checked.oob.grid_for(n), 256](x, out)
            out2 = DeviceArray.from_numpy(np.zeros(n, np.float32))
            checked.copy[checked.copy.grid_for(n), 256](x, out2)
            np.testing.assert_array_equal(out2.to_numpy(), host)
            continue
        checked.oob[checked.oob.grid_for(n), 256](x, out)
        with pytest.raises(oxide.KernelError, match=f"with index {n} but length {n}$"):
            (err,) = device.driver().cuCtxSynchronize()
            assert err == 0
            checked.copy[checked.copy.grid_for(n), 256](x, out2)  # raises before launching
    oxide.runtime.check_kernel_errors()  # nothing left
    synchronize()


def test_assert_failure_raises_kernel_error(checked: types.ModuleType) -> None:
    import oxide
    from oxide.runtime import DeviceArray, synchronize

    n = 4096
    host = np.ones(n, np.float32)
    host[1234] = -1.0
    out = DeviceArray.from_numpy(np.zeros(n, np.float32))
    with pytest.raises(oxide.KernelError) as info:
        checked.positive[checked.positive.grid_for(n), 256](DeviceArray.from_numpy(host), out)
        synchronize()  # on the GPU; a CPU launch raises its own errors (docs/runtime.md)
    line = _line_of(CHECKED_SOURCE, "assert x[i] > 0.0")
    assert str(info.value) == (
        f"assertion failed in kernel positive at {checked.SOURCE_FILE}:{line}:9: x[i] > 0.0: x must be positive"
    )
    assert (info.value.kernel, info.value.index, info.value.length) == ("positive", None, None)
    got = out.to_numpy()
    assert got[1234] == 0.0 and np.count_nonzero(got) == n - 1


@devices.gpu_only("asynchronous kernel errors found after torch.cuda.synchronize: a CPU launch raises its own")
def test_kernel_error_after_torch_synchronize(checked: types.ModuleType) -> None:
    torch = pytest.importorskip("torch")
    import oxide

    n = 300
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    out = torch.zeros(n, dtype=torch.float32, device="cuda")
    checked.oob[checked.oob.grid_for(n, 128), 128](x, out)
    torch.cuda.synchronize()
    with pytest.raises(oxide.KernelError, match=f"kernel oob .* with index {n} but length {n}$"):
        oxide.runtime.check_kernel_errors()
    checked.copy[checked.copy.grid_for(n, 128), 128](x, out)
    torch.cuda.synchronize()
    oxide.runtime.check_kernel_errors()
    assert torch.equal(out, x)


ILLEGAL_PTX = r"""
.version 7.8
.target sm_80
.address_size 64

.visible .entry poke(.param .f32 a, .param .u64 out, .param .u64 out_len)
{
	.reg .b64 %rd<2>;
	.reg .f32 %f<2>;
	ld.param.f32 %f1, [a];
	mov.u64 %rd1, 8;
	st.global.f32 [%rd1], %f1;
	ret;
}
"""


@devices.gpu_only("loads hand-written PTX: a store to an illegal GPU address, a sticky context fault")
def test_illegal_address_is_a_cuda_error(tmp_path: Path) -> None:
    """A sticky error ruins the context, so this runs in a process of its own."""
    from oxide.runtime.manifest import KernelSpec, ModuleManifest, ParamSpec, manifest_path

    name = "oxillegal"
    src = tmp_path / f"{name}.py"
    src.write_text("from oxide import kernel, f32, MutSlice\n\n@kernel\ndef poke(a: f32, out: MutSlice[f32]) -> None:\n    pass\n")
    path = manifest_path(tmp_path, name)
    path.parent.mkdir()
    (path.parent / f"{name}.ptx").write_text(ILLEGAL_PTX)
    path.write_text(
        ModuleManifest(
            module=name,
            source=src.name,
            source_sha256=hashlib.sha256(src.read_bytes()).hexdigest(),
            kernels=(KernelSpec("poke", "poke", (ParamSpec("a", "scalar", "f32"), ParamSpec("out", "mut_slice", "f32"))),),
            cubins={},
            ptx={"sm_80": f"{name}.ptx"},
        ).to_json()
    )
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import oxillegal
        from oxide.errors import CudaError
        from oxide.runtime import DeviceArray, synchronize
        out = DeviceArray.empty(4, "f32")
        oxillegal.poke[1, 1](1.0, out)
        try:
            synchronize()
        except CudaError as e:
            print("NAME", e.name)
            print("TEXT", e)
        try:
            oxillegal.poke[1, 1](1.0, out)
        except CudaError as e:
            print("NEXT", e.name)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "NAME CUDA_ERROR_ILLEGAL_ADDRESS" in result.stdout, result.stdout
    assert "NEXT CUDA_ERROR_ILLEGAL_ADDRESS" in result.stdout, result.stdout


@devices.gpu_only("the compiled C launcher: every CPU launch takes the Python path")
def test_c_launcher_is_used_on_the_gpu(kmod: types.ModuleType) -> None:
    """With the extension built, the second launch of a kernel takes the C path."""
    from oxide.runtime import DeviceArray, launcher, synchronize

    if not launcher.ENABLED:
        pytest.skip("the C launcher is not built (python setup.py build_ext --inplace) or OXIDE_PURE_PYTHON=1")
    x = DeviceArray.from_numpy(np.ones(256, np.float32))
    out = DeviceArray.empty(256, "f32")
    launch = kmod.saxpy[1, 256]
    launch(2.0, x, x, out)
    assert launcher._ext.has_driver()
    calls: list[tuple[Any, ...]] = []
    original = type(kmod.saxpy)._launch
    try:
        def counting(self: Any, *a: Any) -> None:
            calls.append(a)
            original(self, *a)

        type(kmod.saxpy)._launch = counting  # type: ignore[method-assign]
        for _ in range(10):
            launch(3.0, x, x, out)
    finally:
        type(kmod.saxpy)._launch = original  # type: ignore[method-assign]
    synchronize()
    assert calls == []  # none took the Python path
    np.testing.assert_array_equal(out.to_numpy(), np.full(256, 4.0, np.float32))


# ---------------------------------------------------------------------------------------------
# Tensor and Constexpr parameters through the compiled launcher (and the Python path first)

VIEWS_SOURCE = '''
import oxide as ox
from oxide import DisjointSlice, DisjointTensor, Slice, Tensor, f32, thread


@ox.kernel
def tscale(a: f32, x: Tensor[f32, 2], b: f32, out: DisjointTensor[f32, 2]) -> None:
    r, c = thread.index_2d()
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a * x[r, c] + b


@ox.kernel(constexprs={"REPS": [1, 3]})
def repeat(x: Slice[f32], REPS: ox.Constexpr[int], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        acc = b
        for k in ox.static_range(REPS):
            acc += x[i]
        out[i] = acc
'''


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _compile_for_this_gpu(tmp_path_factory, VIEWS_SOURCE, "oxviews")


class _PythonLaunches:
    """Counts the launches of ``kernel`` that take the Python path."""

    def __init__(self, kernel: Any) -> None:
        self.cls, self.calls = type(kernel), 0

    def __enter__(self) -> _PythonLaunches:
        self.original = self.cls._launch

        def counting(kernel: Any, *a: Any) -> None:
            self.calls += 1
            self.original(kernel, *a)

        self.cls._launch = counting
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cls._launch = self.original


def _c_path_expected() -> bool:
    from oxide.runtime import launcher

    # with several GPUs too: torch, CuPy and oxide-allocated DeviceArrays say which device
    # holds them (a DeviceArray made from a bare pointer does not: its launches stay in Python);
    # every launch on the CPU device takes the Python path (docs/runtime.md, "The CPU device")
    return launcher.ENABLED and not devices.on_cpu()


def _tensor_kinds() -> list[str]:
    kinds = ["devicearray"]
    for lib in ("torch",) if devices.on_cpu() else ("torch", "cupy"):  # CuPy arrays are GPU memory
        try:
            __import__(lib)
            kinds.append(lib)
        except ImportError:
            pass
    return kinds


def _to_device(kind: str, a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    if kind == "torch":
        import torch

        return torch.as_tensor(a, device=devices.torch_device())
    if kind == "cupy":
        import cupy as cp

        return cp.asarray(a)
    return DeviceArray.from_numpy(a)


def _to_host(a: Any) -> np.ndarray:
    if hasattr(a, "to_numpy"):
        return a.to_numpy()  # type: ignore[no-any-return]
    if hasattr(a, "cpu"):
        return a.cpu().numpy()  # type: ignore[no-any-return]
    return a.get()  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", _tensor_kinds())
@pytest.mark.parametrize("shape", [(1, 1), (37, 53), (512, 129)])
def test_tensor_launches_in_c_match_numpy(views: types.ModuleType, kind: str, shape: tuple[int, int]) -> None:
    from oxide.runtime import synchronize

    rows, cols = shape
    rng = np.random.default_rng(rows * 1000 + cols)
    grid = ((cols + 15) // 16, (rows + 15) // 16)
    for attempt in range(3):  # the first learns the array type and loads the code; the rest run in C
        a, b = float(np.float32(rng.uniform(-3, 3))), float(np.float32(rng.uniform(-3, 3)))
        x = rng.standard_normal(shape).astype(np.float32)
        dx, out = _to_device(kind, x), _to_device(kind, np.full(shape, np.nan, np.float32))
        with _PythonLaunches(views.tscale) as python:
            views.tscale[grid, (16, 16)](a, dx, b, out)
        synchronize()
        if attempt and _c_path_expected():
            assert python.calls == 0, f"attempt {attempt} took the Python path"
        ref = np.float64(a) * x.astype(np.float64) + np.float64(b)
        np.testing.assert_allclose(_to_host(out), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", [k for k in _tensor_kinds() if k != "devicearray"])
def test_slice_views_in_c_match_numpy(kmod: types.ModuleType, kind: str) -> None:
    """1-D torch / CuPy views read in C (through DLPack's exchange API where the library has
    one): offsets into a larger buffer, one element with any stride, and every element checked;
    what the C path must not take (a stride, 2-D, a host array) still gets the Python errors."""
    from oxide.runtime import synchronize

    rng = np.random.default_rng(23)
    base_x = rng.standard_normal(4099).astype(np.float32)
    base_y = rng.standard_normal(4099).astype(np.float32)
    dx, dy = _to_device(kind, base_x), _to_device(kind, base_y)
    cases = [(slice(0, 4099), 1), (slice(8, 4099), 1), (slice(3, 1030), 1), (slice(7, 8), 1), (slice(100, 101), 5)]
    for attempt in range(2):
        for sl, step in cases:
            x, y = base_x[sl.start : sl.stop : step], base_y[sl.start : sl.stop : step]
            n = len(x)
            a = float(np.float32(rng.uniform(-2, 2)))
            out = _to_device(kind, np.full(n, np.nan, np.float32))
            with _PythonLaunches(kmod.saxpy) as python:
                kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, dx[sl.start : sl.stop : step], dy[sl.start : sl.stop : step], out)
            synchronize()
            if attempt and _c_path_expected():
                assert python.calls == 0, f"{sl} took the Python path"
            ref = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
            np.testing.assert_allclose(_to_host(out), ref, rtol=1e-6, atol=1e-6)
    out = _to_device(kind, np.full(8, np.nan, np.float32))
    for args, message in [
        ((1.0, dx[:16:2], dy[:8], out), "parameter 'x' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),
        ((1.0, dx[:16].reshape(2, 8), dy[:8], out), "parameter 'x' of saxpy needs a 1-D array; got shape (2, 8)"),
    ]:
        with pytest.raises(TypeError) as info:
            kmod.saxpy[1, 32](*args)
        assert str(info.value) == message


def test_parameters_in_c_match_numpy(kmod: types.ModuleType) -> None:
    """torch.nn.Parameter (weights) take the C path like plain tensors."""
    torch = pytest.importorskip("torch")
    from oxide.runtime import synchronize

    n = 5003
    a, x, y = _inputs(n, np.float32, 31)
    dev = devices.torch_device()
    w = torch.nn.Parameter(torch.as_tensor(x, device=dev))
    b = torch.nn.Parameter(torch.as_tensor(y, device=dev), requires_grad=False)
    for attempt in range(2):
        out = torch.full((n,), float("nan"), device=dev)
        with _PythonLaunches(kmod.saxpy) as python:
            kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, w, b, out)
        synchronize()
        if attempt and _c_path_expected():
            assert python.calls == 0
        np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)


@pytest.mark.parametrize("kind", [k for k in _tensor_kinds() if k != "devicearray"])
def test_strided_tensor_views_in_c_match_numpy(views: types.ModuleType, kind: str) -> None:
    """A transposed view and a sliced one (strides, an offset) reach the kernel through C."""
    from oxide.runtime import synchronize

    rng = np.random.default_rng(5)
    base = rng.standard_normal((64, 48)).astype(np.float32)
    dbase = _to_device(kind, base)
    cases = [(dbase.T, base.T), (dbase[3:40:2, 5:], base[3:40:2, 5:])]  # type: ignore[index]
    for _ in range(2):
        for dx, x in cases:
            out = _to_device(kind, np.full(x.shape, np.nan, np.float32))
            grid = ((x.shape[1] + 15) // 16, (x.shape[0] + 15) // 16)
            with _PythonLaunches(views.tscale) as python:
                views.tscale[grid, (16, 16)](1.5, dx, -0.25, out)
            synchronize()
            np.testing.assert_allclose(_to_host(out), 1.5 * x.astype(np.float64) - 0.25, rtol=1e-6, atol=1e-6)
    if _c_path_expected():
        assert python.calls == 0


@pytest.mark.parametrize("kind", _tensor_kinds())
def test_constexpr_launches_in_c_match_numpy(views: types.ModuleType, kind: str) -> None:
    from oxide.runtime import synchronize

    rng = np.random.default_rng(17)
    n = 10_007
    for attempt in range(3):
        for reps in (1, 3):
            x = rng.standard_normal(n).astype(np.float32)
            b = float(np.float32(rng.uniform(-1, 1)))
            dx, out = _to_device(kind, x), _to_device(kind, np.full(n, np.nan, np.float32))
            with _PythonLaunches(views.repeat) as python:
                views.repeat[views.repeat.grid_for(n), 256](dx, reps, b, out)
            synchronize()
            if attempt and _c_path_expected():
                assert python.calls == 0, f"REPS={reps}, attempt {attempt} took the Python path"
            ref = np.float64(b) + reps * x.astype(np.float64)
            np.testing.assert_allclose(_to_host(out), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError) as info:
        views.repeat[1, 32](dx, 2, 0.0, out)
    assert str(info.value) == "parameter 'REPS' of repeat must be one of the compiled values 1, 3; got 2"
    with pytest.raises(TypeError) as info:
        views.tscale[1, 32](1.0, _to_device(kind, np.zeros(4, np.float32)), 0.0, out)
    assert str(info.value) == "parameter 'x' of tscale needs a 2-D array; got shape (4,)"


@devices.gpu_only("needs two GPUs")
def test_two_gpus(kmod: types.ModuleType) -> None:
    """Kernels load on each device; arrays on another device than the current one, or on two
    devices at once, are refused with their names (needs two GPUs)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    n = 100_003
    a, x, y = _inputs(n, np.float32, 7)
    on = {d: (torch.as_tensor(x, device=f"cuda:{d}"), torch.as_tensor(y, device=f"cuda:{d}"),
              torch.full((n,), float("nan"), device=f"cuda:{d}")) for d in (0, 1)}
    grid = kmod.saxpy.grid_for(n)
    torch.cuda.set_device(0)
    with pytest.raises(TypeError, match=r"the arrays passed to saxpy are on different GPUs \('x' on cuda:0, "
                                        r"'y' on cuda:1, 'out' on cuda:0\); put them on one device"):
        kmod.saxpy[grid, 256](a, on[0][0], on[1][1], on[0][2])
    with pytest.raises(TypeError, match=r"parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0"):
        kmod.saxpy[grid, 256, 0](a, *on[1])  # a stream given: the current device's launch
    # no stream given: under the tensors' device, on PyTorch's current stream there
    kmod.saxpy[grid, 256](a, *on[1])
    torch.cuda.synchronize(1)
    np.testing.assert_allclose(on[1][2].cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    assert torch.cuda.current_device() == 0
    for d in (1, 0, 1):  # each device runs its own copy of the module
        torch.cuda.set_device(d)
        on[d][2].fill_(float("nan"))
        for attempt in range(2):  # the first launch on a device, then a later one (in C)
            with _PythonLaunches(kmod.saxpy) as python:
                kmod.saxpy[grid, 256](a, *on[d])
            if attempt and _c_path_expected():
                assert python.calls == 0, f"the second launch on cuda:{d} took the Python path"
        torch.cuda.synchronize(d)
        np.testing.assert_allclose(on[d][2].cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    # after C launches on both devices: mismatched arrays still get the Python path's errors
    torch.cuda.set_device(0)
    with pytest.raises(TypeError, match=r"parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0"):
        kmod.saxpy[grid, 256, 0](a, *on[1])
    with pytest.raises(TypeError, match=r"the arrays passed to saxpy are on different GPUs"):
        kmod.saxpy[grid, 256](a, on[0][0], on[0][1], on[1][2])
    if "cupy" in _tensor_kinds():
        import cupy as cp

        with cp.cuda.Device(1):
            cx, cy = cp.asarray(x), cp.asarray(y)
            cout = cp.full(n, cp.nan, dtype=cp.float32)
        with pytest.raises(TypeError, match=r"parameter 'x' of saxpy is on cuda:1, but the current device is cuda:0"):
            kmod.saxpy[grid, 256, 0](a, cx, cy, cout)
        with cp.cuda.Device(1):
            torch.cuda.set_device(1)
            for attempt in range(2):
                with _PythonLaunches(kmod.saxpy) as python:
                    kmod.saxpy[grid, 256](np.float32(a), cx, cy, cout)
                if attempt and _c_path_expected():
                    assert python.calls == 0, "the second CuPy launch on cuda:1 took the Python path"
            cp.cuda.Device(1).synchronize()
            np.testing.assert_allclose(cp.asnumpy(cout), _reference(a, x, y), rtol=1e-6, atol=0)
    torch.cuda.set_device(0)
