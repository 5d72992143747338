"""The index32 instance of a kernel with tensor parameters (oxide_build/lower/index32.py): both
launch paths of the Python runtime (the Python path, oxide/runtime/arguments.py, and the C
launcher, oxide/runtime/_launcher_launch.c) launch it only when every tensor argument spans at
most INDEX32_LIMIT = 2**31 - 1 elements and has no extent or stride beyond it, the kernel as
written otherwise; on the CPU, with the fake driver (tests/fakes.py). The C++ header's choice is tested in tests/test_index32_cpp.py."""
from __future__ import annotations

import types
from pathlib import Path

import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    TADD_PARAMS,
    TENSOR_KERNELS,
    TENSOR_SOURCE,
    CFakeDriver,
    FakeArray,
    FakeDriver,
    c_driver,
    fake_driver,
    fresh_runtime,
    make_module,
    paths,
    slot_types,
)

import oxide
from oxide.abi.launcher import INDEX32_LIMIT
from oxide.runtime import launcher
from oxide.runtime.manifest import KernelSpec, ModuleManifest

__all__: list[str] = []

needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")

NARROW = "tadd__index32"
KERNELS = (KernelSpec("tadd", "tadd", TADD_PARAMS, index32_symbol=NARROW),) + TENSOR_KERNELS[1:]


def _module(tmp_path: Path, drv: FakeDriver, kernels: tuple[KernelSpec, ...] = KERNELS) -> types.ModuleType:
    m = make_module(tmp_path, TENSOR_SOURCE, kernels)
    drv.signatures = {k.symbol: slot_types(k.params) for k in TENSOR_KERNELS}
    drv.signatures[NARROW] = slot_types(TADD_PARAMS)
    return m


def _f32(shape: tuple[int, ...], strides: tuple[int, ...] | None = None, ptr: int = 0x10000) -> FakeArray:
    """A float32 tensor (strides in elements; C order when None); its memory does not exist."""
    return FakeArray(shape=shape, strides=None if strides is None else tuple(4 * s for s in strides), ptr=ptr)


SMALL = (4, 6)
# (a, out) -> the entry point that must run: spans, extents and strides of 2**31 - 1 and less take
# the index32 instance, any tensor with more (however few elements it has) the kernel as written
CASES = [
    ((_f32(SMALL), _f32(SMALL, ptr=0x20000)), NARROW),
    ((_f32((1, INDEX32_LIMIT)), _f32((1, 3), ptr=1 << 40)), NARROW),  # exactly the limit
    ((_f32((1, INDEX32_LIMIT + 1)), _f32((1, 3), ptr=1 << 40)), "tadd"),  # one element past it
    ((_f32((2, 2**31)), _f32(SMALL, ptr=1 << 40)), "tadd"),  # 2**32 elements, read
    ((_f32(SMALL), _f32((3, 2**30), ptr=1 << 40)), "tadd"),  # 3 * 2**30 elements, written
    ((_f32((2, 2), (2**31, 1)), _f32(SMALL, ptr=1 << 40)), "tadd"),  # 4 elements, a stride past 2**31
    ((_f32((1, 2), (2**31, 1)), _f32(SMALL, ptr=1 << 40)), "tadd"),  # a stride past it (read as i32)
    ((_f32((1, 2), (INDEX32_LIMIT, 1)), _f32(SMALL, ptr=1 << 40)), NARROW),  # a size-1 axis's stride spans nothing
    ((_f32((2**31, 2), (0, 1)), _f32(SMALL, ptr=1 << 40)), "tadd"),  # 2 elements, an extent past it
    ((_f32((INDEX32_LIMIT, 2), (0, 1)), _f32(SMALL, ptr=1 << 40)), NARROW),  # a broadcast axis of 2**31 - 1
    ((_f32((0, 2**33)), _f32(SMALL, ptr=1 << 40)), "tadd"),  # empty, an extent past it
    ((_f32((0, 9)), _f32(SMALL, ptr=1 << 40)), NARROW),  # empty
]


def _launch_each(m: types.ModuleType, drv: FakeDriver, times: int) -> list[str]:
    for (a, out), _ in CASES:
        for _ in range(times):
            m.tadd[1, 32](a, 1.5, out)
    return [launch["fn"] for launch in drv.launches]


def test_python_path_takes_the_index32_instance_only_when_every_tensor_fits(
        tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = _module(tmp_path, fake_driver)
    assert _launch_each(m, fake_driver, 1) == [want for _, want in CASES]
    # both instances take the same parameter block
    fake_driver.launches.clear()
    a, out = _f32(SMALL), _f32(SMALL, ptr=1 << 40)
    m.tadd[1, 32](a, 2.5, out)
    m.tadd[1, 32](_f32((2, 2**31)), 2.5, out)
    narrow, wide = fake_driver.launches
    assert (narrow["fn"], wide["fn"]) == (NARROW, "tadd")
    assert narrow["values"] == [0x10000, 4, 6, 6, 1, 2.5, 1 << 40, 4, 6, 6, 1]
    assert wide["values"][:5] == [0x10000, 2, 2**31, 2**31, 1]


@needs_launcher
def test_c_launcher_takes_the_index32_instance_only_when_every_tensor_fits(
        tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _module(tmp_path, c_driver)
    fns = _launch_each(m, c_driver, 3)
    assert fns == [want for _, want in CASES for _ in range(3)]
    # after the first launches have taught it both functions, the C path makes them
    assert "c" in paths(c_driver)[:3] and paths(c_driver)[-1] == "c"
    c_launches = [launch["fn"] for launch in c_driver.launches if launch["path"] == "c"]
    assert NARROW in c_launches and "tadd" in c_launches
    # a large tensor after the C path knows only the index32 function: the kernel as written
    c_driver.launches.clear()
    m2 = _module(tmp_path, c_driver)
    small = (_f32(SMALL), _f32(SMALL, ptr=1 << 40))
    for _ in range(2):
        m2.tadd[1, 32](*small[:1], 1.0, small[1])
    m2.tadd[1, 32](_f32((2, 2**31)), 1.0, small[1])
    m2.tadd[1, 32](_f32((2, 2**31)), 1.0, small[1])
    assert [(launch["fn"], launch["path"]) for launch in c_driver.launches] == [
        (NARROW, "python"), (NARROW, "c"), ("tadd", "python"), ("tadd", "c")]


def test_a_manifest_without_an_index32_instance_launches_the_kernel_as_written(
        tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = _module(tmp_path, fake_driver, TENSOR_KERNELS)
    assert set(_launch_each(m, fake_driver, 1)) == {"tadd"}


def test_the_manifest_writes_index32_symbol_only_when_there_is_one() -> None:
    old = ModuleManifest("m", "m.py", "", TENSOR_KERNELS, {"sm_90": "m.cubin"})
    assert "index32_symbol" not in old.to_json()  # as before the field existed
    new = old._replace(kernels=KERNELS)
    assert new.to_json().count('"index32_symbol": "tadd__index32"') == 1
    assert ModuleManifest.from_json(new.to_json()).kernels[0].index32_symbol == NARROW
    assert ModuleManifest.from_json(old.to_json()).kernels[0].index32_symbol == ""
    with pytest.raises(ValueError, match=r"kernels\[0\]\.index32_symbol: expected a string"):
        ModuleManifest.from_json(new.to_json().replace('"tadd__index32"', "7"))


def test_the_kernels_own_error_paths_are_unchanged(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = _module(tmp_path, fake_driver)
    with pytest.raises(TypeError, match="written by the kernel; got a view whose elements overlap"):
        m.tadd[1, 32](_f32(SMALL), 1.0, _f32((2, 3), (0, 1), ptr=0x30000))
    assert oxide.runtime.DeviceArray is not None and not fake_driver.launches
