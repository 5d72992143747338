"""Device-side errors without a GPU: the failure record, its set-up at load and its report on the
host (at the next launch, at synchronize(), by check_kernel_errors())."""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from cuda.bindings import driver as real_driver
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    SAXPY_KERNELS,
    SCALE_SLOTS,
    SITES,
    FakeArray,
    FakeDriver,
    fail_on_device,
    fake_driver,
    fresh_runtime,
    make_module,
    record_words,
    slot_types,
)

import oxide
from oxide.errors import CudaError
from oxide.runtime import kernel_errors

__all__: list[str] = []


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


def test_a_kernel_error_is_a_runtime_error_too() -> None:
    # PyTorch code (and its tests: pytest.raises(RuntimeError)) catches failed kernels as RuntimeError
    error = oxide.KernelError("bounds check failed", kernel="k", location="k.py:3:5", index=7, length=4)
    assert isinstance(error, RuntimeError) and isinstance(error, oxide.OxideError)
    with pytest.raises(RuntimeError, match="bounds check failed"):
        raise error
