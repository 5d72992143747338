"""The compiled launcher (oxide/runtime/_launcher*.c), driven through ctypes stand-ins for the
two driver entry points: it must pack exactly what the Python path packs, and leave every case it
does not handle to the Python path; launch preconditions decided like oxide.runtime.preconditions."""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda.bindings import driver as real_driver
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    FILL_KERNELS,
    SAXPY_KERNELS,
    SCALAR_GENERIC_SOURCE,
    SCALE_SLOTS,
    SITES,
    TENSOR_KERNELS,
    TENSOR_SOURCE,
    CFakeDriver,
    FakeArray,
    FakeDLPack,
    FakeDriver,
    _Exchange,
    _fake_cupy,
    _fake_torch,
    c_driver,
    expect_type_error,
    fail_on_device,
    fresh_runtime,
    make_module,
    paths,
    slot_types,
)

import oxide
from oxide.abi.preconditions import OPCODE, OPCODES, compile_expression
from oxide.errors import CudaError
from oxide.runtime import launcher
from oxide.runtime.manifest import ErrorSite, KernelSpec, ParamSpec, Precondition

__all__: list[str] = []


# ---------------------------------------------------------------------------------------------
# the compiled launcher (oxide/runtime/_launcher*.c), driven through ctypes stand-ins for the
# two driver entry points: it must pack exactly what the Python path packs, and leave every
# case it does not handle to the Python path

needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")


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
        (lambda: m.scale[1, 256](2.0, np.zeros(4, np.float32), x), "parameter 'x' of scale needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)"),
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
    # a read-only view overlapping the written one is left to Python, which refuses it; one that
    # only touches it launches in C
    src = FakeArray(8, ptr=0x9000)
    expect_type_error(
        lambda: m.scale[1, 256](2.0, src, FakeArray(8, ptr=0x9010)),
        "parameter 'x' of scale overlaps parameter 'out', which the kernel writes; a read-only view must not "
        "alias a writable one — pass a copy, or declare 'x' DisjointSlice/MutSlice to read and write the same memory",
    )
    m.scale[1, 256](2.0, src, FakeArray(8, ptr=0x9020))
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
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, cuda=False), c, d), "parameter 'x' of saxpy needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, shape=(2, 4)), c, d), "parameter 'x' of saxpy needs a 1-D array; got shape (2, 4)"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, t, cupy.ndarray(8, np.float32, 1, stride=8), d), "parameter 'y' of saxpy needs a contiguous 1-D array; got a stride of 2 elements"),  # type: ignore[attr-defined]
        (lambda: m.saxpy[1, 32](2.0, t, c, torch.Tensor(8, torch.int32, 1)), "saxpy has no specialization for these arguments (x: f32, y: f32, out: i32); available: (T=f32), (T=f64)"),  # type: ignore[attr-defined]
    ]:  # fmt: skip
        expect_type_error(call, message)
    assert len(c_driver.launches) == 4
    # one element: any stride is contiguous, on both paths
    m.saxpy[1, 32](2.0, torch.Tensor(1, torch.float32, 0x5, stride=9), cupy.ndarray(1, np.float32, 0x6, stride=64), d)  # type: ignore[attr-defined]
    assert paths(c_driver)[-1] == "c" and c_driver.launches[-1]["values"][1:5] == [0x5, 1, 0x6, 1]


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
        (lambda: m.saxpy[1, 32](2.0, torch.Tensor(8, torch.float32, 1, cuda=False), y, out), "parameter 'x' of saxpy needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)"),  # type: ignore[attr-defined]
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
         "parameter 'a' of tadd needs a device array; got a torch.Tensor (host memory) — copy it to the GPU first, e.g. torch.as_tensor(a, device='cuda') or cupy.asarray(a), or run it on the CPU device (OXIDE_DEVICE=cpu)"),
        (lambda: m.tadd[1, 32](np.zeros((2, 2), np.float32), 1.0, good),
         "parameter 'a' of tadd needs a device array; got a numpy.ndarray (host memory) — copy it to the GPU first, e.g. torch.as_tensor(a, device='cuda') or cupy.asarray(a), or run it on the CPU device (OXIDE_DEVICE=cpu)"),
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


def _c_run(programs: list[Any], values: list[int], grid: tuple[int, int, int] = _PRE_GRID,
           block: tuple[int, int, int] = _PRE_BLOCK) -> int | None:  # fmt: skip
    codes = [launcher.DTYPE_CODES[t] for t in _PRE_SLOTS]
    return launcher._ext.evaluate_preconditions(programs, codes, values, grid, block)  # type: ignore[no-any-return]


def _c_check(exprs: list[Any], values: list[int], grid: tuple[int, int, int] = _PRE_GRID,
             block: tuple[int, int, int] = _PRE_BLOCK) -> int | None:  # fmt: skip
    """The C launcher's verdict on the programs of these expressions."""
    return _c_run([compile_expression(e) for e in exprs], values, grid, block)


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
                v = evaluate(compile_expression(e), values, grid, block)
                assert -(2**63) <= v < 2**64
                # the C value is Python's exactly (eq and ne compare the whole value), and so is its truth
                assert _c_check([["eq", e, ["const", v]], ["ne", e, ["const", v]]], values, grid, block) == 1, (e, values, v)
                assert _c_check([e], values, grid, block) == (-1 if v else 0), (e, values, v)
            # several preconditions: the first that fails is the one Python names
            for _ in range(200):
                conds = [Precondition(10 + i, tuple(compile_expression(rng.choice(exprs))))
                         for i in range(rng.randrange(1, 5))]
                site = failed(conds, values, grid, block)
                index = _c_run([c.code for c in conds], values, grid, block)
                assert (None if index == -1 else conds[index].site) == site


_ONE = [OPCODE["const"], 1]


@pytest.mark.parametrize("program", [
    [[len(OPCODES), 0]], [[-1, 0]],  # an opcode the launcher does not know
    [[OPCODE["const"], 2**64]], [[OPCODE["const"], -(2**63) - 1]], [[OPCODE["const"], 1.0]],
    [[OPCODE["const"], "1"]],  # outside i64 ∪ u64, or not an int
    [[OPCODE["arg"], 11]], [[OPCODE["arg"], -1]], [[OPCODE["grid"], 3]], [[OPCODE["block"], -1]],  # no such slot or axis
    [_ONE, [OPCODE["cast"], launcher.DTYPE_CODES["f32"]]], [_ONE, _ONE, [OPCODE["add"], launcher.DTYPE_CODES["bool"]]],
    [_ONE, [OPCODE["neg"], launcher.DTYPE_CODES["bool"]]], [_ONE, [OPCODE["cast"], 0]],  # no integer type
    [_ONE, [OPCODE["add"], launcher.DTYPE_CODES["i32"]]], [[OPCODE["lt"], 0]], [[OPCODE["truth"], 0]],  # too few values
    [_ONE, [OPCODE["not"], 5]], [_ONE, _ONE, [OPCODE["eq"], 1]],  # an operand where none is taken
    [], [_ONE, _ONE], [_ONE, [OPCODE["check"], 0]], [_ONE, [OPCODE["check"], 0], _ONE],  # a check of its own
    [[OPCODE["const"]]], [[OPCODE["const"], 1, 2]], ["eq"], 5, [5],
])  # fmt: skip
@needs_launcher
def test_c_launcher_declines_programs_it_cannot_evaluate(program: Any) -> None:
    """What the manifest's reader refuses (oxide.abi.preconditions.program_problem) the C reader
    declines too (oxide_pre_prepare), instead of running it."""
    assert _c_run([[_ONE], program], _PRE_VALUES[0]) is None
    assert _c_run([[_ONE]], _PRE_VALUES[0]) == -1


@needs_launcher
def test_c_launcher_declines_float_slots_and_deep_preconditions() -> None:
    codes = [launcher.DTYPE_CODES[t] for t in ("f32", "f64", "bf16", "i32")]
    for k in range(3):  # Python truncates a float slot's value; the C slot holds it rounded
        program = compile_expression(["eq", ["arg", k], ["const", 1]])
        assert launcher._ext.evaluate_preconditions([program], codes, [1.5, 1.5, 1.5, 1], (1, 1, 1), (1, 1, 1)) is None
    program = compile_expression(["eq", ["arg", 3], ["const", 1]])
    assert launcher._ext.evaluate_preconditions([program], codes, [1.5, 1.5, 1.5, 1], (1, 1, 1), (1, 1, 1)) == -1
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
    Precondition(3, tuple(compile_expression(["eq", ["mul", "i64", ["cast", "i64", ["arg", 0]], ["cast", "i64", ["arg", 1]]], ["arg", 4]]))),
    Precondition(4, tuple(compile_expression(["or", [["not", ["arg", 2]], ["eq", ["block", 0], ["const", 32]]]]))),
    Precondition(5, tuple(compile_expression(["and", [["le", ["grid", 0], ["const", 4]], ["eq", ["arg", 6], ["arg", 4]]]]))),
    Precondition(6, tuple(compile_expression(["gt", ["add", "i32", ["arg", 0], ["const", 1]], ["arg", 0]]))),
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


# the CPU runtime tests, run again in a pure-Python process and in a tree with the launcher built
RUNTIME_TEST_FILES = tuple(Path(__file__).parent / f"test_runtime_{area}.py"
                           for area in ("kernel", "arrays", "loading", "kernel_errors", "c_launcher"))


def _run_runtime_tests(cwd: Path, env: dict[str, str], selection: str) -> str:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, RUNTIME_TEST_FILES), "-k", selection, "-rs"],
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
    sources = sorted(str(p) for p in (Path(oxide.__file__).parent / "runtime").glob("_launcher*.c"))
    target = package_dir / "runtime" / f"_launcher{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", *sources, "-o", str(target)], check=True)


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
