"""The Kernel handle without a GPU: launch configurations, argument checks (exact messages,
all raised before CUDA is touched), specialization choice and the packed parameters (through the
fake driver), aliasing and device checks."""
from __future__ import annotations

import ctypes
import math
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda.bindings import driver as real_driver
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    _FAKE_ADDRESSES,
    FILL_KERNELS,
    SAXPY_KERNELS,
    SCALAR_GENERIC_SOURCE,
    FakeArray,
    FakeDriver,
    expect_type_error,
    fake_driver,
    fresh_runtime,
    make_module,
    saxpy_params,
    slot_types,
)

import oxide
from oxide.errors import CudaError
from oxide.runtime import device
from oxide.runtime.kernel import Kernel
from oxide.runtime.launch import ArgPacker, grid_for, grid_for_2d, normalize_dims, scalar_converter
from oxide.runtime.manifest import KernelSpec, ParamSpec
from oxide.runtime.streams import stream_handle

__all__: list[str] = []


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
    assert grid_for_2d(100, 70, (32, 8)) == (3, 13)  # x along the 70 columns, y along the 100 rows
    assert grid_for_2d(0, 70) == (3, 0) and grid_for_2d(5, 0) == (0, 1)  # an empty grid: launches nothing
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
        "first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)",
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
    for _ in range(5):  # CPU time of this process: other tests beside it (pytest -n) do not count
        start = time.process_time()
        for _ in range(1000):
            launch(2.0, x, y, out)
        best = min(best, (time.process_time() - start) / 1000)
    assert best < 50e-6, f"{best * 1e6:.1f} µs of CPU time per launch on the host"


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
