"""A kernel that calls grid.sync() is marked cooperative in its manifest, and the runtime
launches it cooperatively whichever way it is launched (``k[grid, block](...)`` too), refuses
a grid that cannot be resident at once, and orders such launches of one module in a context
one after another (they share the module's grid-barrier counter). The compiler's side is in
tests/test_lang_intrinsics.py; the barrier on the GPU in tests/test_lang_intrinsics_gpu.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    SAXPY_KERNELS,
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
from oxide.runtime import launcher
from oxide.runtime.manifest import KernelSpec, ModuleManifest

COOPERATIVE = tuple(k._replace(cooperative=True) if k.name == "scale" else k for k in SAXPY_KERNELS)


def test_the_manifest_carries_the_cooperative_mark() -> None:
    spec = COOPERATIVE[2]
    manifest = ModuleManifest("m", "m.py", "0" * 64, (spec, SAXPY_KERNELS[0]), {"sm_90": "m.sm_90.cubin"})
    data = json.loads(manifest.to_json())
    assert [k["cooperative"] for k in data["kernels"]] == [True, False]
    assert ModuleManifest.from_json(manifest.to_json()).kernels == (spec, SAXPY_KERNELS[0])
    del data["kernels"][1]["cooperative"]  # a manifest written before the mark existed
    assert ModuleManifest.from_json(json.dumps(data)).kernels[1].cooperative is False
    data["kernels"][0]["cooperative"] = 1
    with pytest.raises(ValueError, match=r"kernels\[0\]\.cooperative: expected true or false, got int 1"):
        ModuleManifest.from_json(json.dumps(data))


def test_a_grid_sync_kernel_is_launched_cooperatively(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, kernels=COOPERATIVE)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in COOPERATIVE}
    x, y, out = FakeArray(), FakeArray(), FakeArray()
    m.scale[1056, 256](1.5, x, out)  # 8 blocks per SM x 132 SMs: fits
    m.scale.launch(1.5, x, out, grid=4, block=64)
    m.saxpy[4, 64](2.0, x, y, out)  # no grid.sync(): a plain launch
    first, second, third = fake_driver.launches
    assert first["cooperative"] is True and second["cooperative"] is True and "cooperative" not in third
    with pytest.raises(ValueError) as info:
        m.scale[1057, 256](1.5, x, out)
    assert str(info.value) == ("a cooperative launch of scale needs all its blocks resident at once: at most 1056 "
                               "blocks of 256 threads (8 per multiprocessor x 132) on Fake GPU; got grid "
                               "(1057, 1, 1) = 1057 blocks")
    assert len(fake_driver.launches) == 3


def test_grid_sync_launches_of_a_module_run_one_after_another(tmp_path: Path, fake_driver: FakeDriver) -> None:
    """They share the module's barrier counter: a launch on another stream than the previous
    one waits for that stream (an event); on the same stream nothing is added."""
    m = make_module(tmp_path, kernels=COOPERATIVE)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in COOPERATIVE}
    x, out = FakeArray(), FakeArray()
    m.scale[4, 64, 7](1.5, x, out)
    m.scale[4, 64, 7](1.5, x, out)
    assert not any(step[0] == "wait" for step in fake_driver.stream_order)
    m.scale[4, 64, 9](1.5, x, out)
    waits = [step for step in fake_driver.stream_order if step[0] in ("record", "wait")]
    assert waits[-2:] == [("record", waits[-1][2], 7), ("wait", 9, waits[-1][2])]
    assert [launch["stream"] for launch in fake_driver.launches] == [7, 7, 9]


@pytest.mark.skipif(not launcher.ENABLED, reason="the compiled launcher is not built")
def test_the_c_launcher_leaves_grid_sync_kernels_to_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = make_module(tmp_path, kernels=COOPERATIVE)
    c_driver.signatures = {k.symbol: slot_types(k.params) for k in COOPERATIVE}
    x, out = FakeArray(8, ptr=0x1000), FakeArray(8, ptr=0x3000)
    for _ in range(3):
        m.scale[2, 32](1.5, x, out)
    assert paths(c_driver) == ["python"] * 3
    assert all(launch["cooperative"] for launch in c_driver.launches)


def test_kernel_spec_default_is_a_plain_launch() -> None:
    assert KernelSpec("k", "k", ()).cooperative is False
