"""Dynamic shared memory above 48 KiB (oxide/runtime/dynamic_shared.py): a launch that asks for
more than a function takes raises its CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first,
once per function per context, on both launch paths (the C launcher leaves such a launch to
Python, and is told the new limit); more than the device's opt-in maximum is refused before
anything is launched."""
from __future__ import annotations

from pathlib import Path
import pytest
from cuda.bindings import driver as real_driver

from fakes import SAXPY_KERNELS, CFakeDriver, FakeArray, FakeDriver, make_module, paths, slot_types
from fakes import fresh_runtime  # noqa: F401  (autouse)
from oxide.errors import CudaError
from oxide.runtime import device, launcher
from test_runtime_soundness import ResettableDriver, saxpy_module

__all__: list[str] = []

MAX_DYNAMIC = real_driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
KiB = 1024
needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")


def arrays(n: int = 8) -> list[FakeArray]:
    return [FakeArray(n, ptr=0x1000 * (i + 1)) for i in range(3)]


def installed(drv: FakeDriver, monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    drv.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    return drv


def raises(drv: FakeDriver) -> list[int]:
    """The values cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) was called with, in order."""
    return [call[3] for call in drv.attribute_calls if call[0] == "set" and call[2] == MAX_DYNAMIC]


def test_the_limit_is_raised_once_for_a_big_launch_and_not_for_small_ones(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)  # a FakeDriver has no C entry points: every launch takes the Python path
    fake_driver = installed(FakeDriver(), monkeypatch)
    x, y, out = arrays()
    m.saxpy[1, 32](2.0, x, y, out)
    m.saxpy[1, 32, None, 0](2.0, x, y, out)
    assert fake_driver.attribute_calls == []  # no dynamic shared memory: no driver call at all
    m.saxpy[1, 32, None, 48 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, None, 4 * KiB](2.0, x, y, out)
    assert raises(fake_driver) == []  # within the default 48 KiB: read once, never set
    assert [c[0] for c in fake_driver.attribute_calls] == ["get"]
    for _ in range(3):
        m.saxpy[1, 32, None, 100 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, None, 64 * KiB](2.0, x, y, out)
    assert raises(fake_driver) == [100 * KiB]  # once, before the first such launch
    m.saxpy[1, 32, None, 150 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, None, 120 * KiB](2.0, x, y, out)
    assert raises(fake_driver) == [100 * KiB, 150 * KiB]  # raised again for a bigger one only
    assert fake_driver.function_attributes[("saxpy__f32", MAX_DYNAMIC)] == 150 * KiB
    assert [launch["shared"] for launch in fake_driver.launches] == [
        0, 0, 48 * KiB, 4 * KiB, 100 * KiB, 100 * KiB, 100 * KiB, 64 * KiB, 150 * KiB, 120 * KiB]
    # another specialization is another function: its own limit
    d, e = FakeArray(8, "<f8", ptr=0x40), FakeArray(8, "<f8", ptr=0x4000)
    m.saxpy[1, 32, None, 100 * KiB](3.0, d, d, e)
    assert fake_driver.attribute_calls[-1][:2] == ("set", "saxpy__f64") and raises(fake_driver)[-1] == 100 * KiB


def test_more_than_the_device_gives_a_block_is_refused_before_the_launch(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)
    fake_driver = installed(FakeDriver(), monkeypatch)
    x, y, out = arrays()
    with pytest.raises(CudaError, match=r"kernel saxpy asks for 307200 bytes of dynamic shared memory per block.*"
                                        r"Fake GPU \(cuda:0\) gives a block at most 232448 bytes.*OPTIN is 232448"):
        m.saxpy[1, 32, None, 300 * KiB](2.0, x, y, out)
    assert fake_driver.launches == [] and raises(fake_driver) == []
    m.saxpy[1, 32, None, 232448](2.0, x, y, out)  # exactly the maximum: allowed
    assert raises(fake_driver) == [232448] and len(fake_driver.launches) == 1


def test_the_static_shared_memory_counts_against_the_maximum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)
    fake_driver = installed(FakeDriver(), monkeypatch)
    fake_driver.static_shared = 8 * KiB
    x, y, out = arrays()
    m.saxpy[1, 32, None, 44 * KiB](2.0, x, y, out)  # 48 KiB less the static 8: set above 40 KiB
    assert raises(fake_driver) == [44 * KiB]
    with pytest.raises(CudaError, match=r"at most 224256 bytes \(less the kernel's 8192 bytes of static shared"):
        m.saxpy[1, 32, None, 224256 + 1](2.0, x, y, out)
    assert len(fake_driver.launches) == 1


def test_a_cooperative_launch_raises_the_limit_before_its_occupancy_check(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)
    fake_driver = installed(FakeDriver(), monkeypatch)
    x, y, out = arrays()
    m.saxpy.launch(2.0, x, y, out, grid=4, block=32, shared_mem=100 * KiB, cooperative=True)
    assert raises(fake_driver) == [100 * KiB] and fake_driver.launches[-1]["cooperative"] is True
    with pytest.raises(CudaError, match="asks for 307200 bytes"):
        m.saxpy.launch(2.0, x, y, out, grid=4, block=32, shared_mem=300 * KiB, cluster=2)
    assert len(fake_driver.launches) == 1


@needs_launcher
def test_the_c_launcher_leaves_a_launch_above_the_known_limit_to_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_module(tmp_path)
    c_driver = installed(CFakeDriver(), monkeypatch)
    x, y, out = arrays()
    m.saxpy[1, 32](2.0, x, y, out)
    m.saxpy[1, 32](2.0, x, y, out)
    # the C plan learns the function's limit (48 KiB) with the function: read once
    assert paths(c_driver) == ["python", "c"] and [c[0] for c in c_driver.attribute_calls] == ["get"]
    m.saxpy[1, 32, 0, 4 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, 0, 48 * KiB](2.0, x, y, out)
    assert paths(c_driver)[2:] == ["c", "c"] and [c[0] for c in c_driver.attribute_calls] == ["get"]
    m.saxpy[1, 32, 0, 100 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, 0, 100 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, 0, 64 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, 0, 150 * KiB](2.0, x, y, out)
    m.saxpy[1, 32, 0, 150 * KiB](2.0, x, y, out)
    m.saxpy[1, 32](2.0, x, y, out)
    assert paths(c_driver)[4:] == ["python", "c", "c", "python", "c", "c"]
    assert raises(c_driver) == [100 * KiB, 150 * KiB]
    assert [launch["shared"] for launch in c_driver.launches][4:] == [
        100 * KiB, 100 * KiB, 64 * KiB, 150 * KiB, 150 * KiB, 0]
    with pytest.raises(CudaError, match=r"kernel saxpy asks for 307200 bytes"):
        m.saxpy[1, 32, 0, 300 * KiB](2.0, x, y, out)
    assert len(c_driver.launches) == 10 and raises(c_driver) == [100 * KiB, 150 * KiB]


@needs_launcher
def test_a_new_context_raises_the_limit_of_its_own_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drv = ResettableDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = saxpy_module(tmp_path, drv)
    x, y, out = arrays()
    for _ in range(2):
        m.saxpy[1, 32, 0, 100 * KiB](2.0, x, y, out)
    assert paths(drv) == ["python", "c"] and len(raises(drv)) == 1
    drv.reset()  # same handle, a new context: its function was never raised
    for _ in range(2):
        m.saxpy[1, 32, 0, 100 * KiB](2.0, x, y, out)
    assert paths(drv)[2:] == ["python", "c"]
    sets = [call for call in drv.attribute_calls if call[0] == "set"]
    assert len(sets) == 2 and sets[0][1] != sets[1][1]  # one per function, each in its context
