"""CUDA as people write it (issue 29) on the GPU: conditionals of literals and a conversion in a
generic condition (items 4, 8), cuda-samples' threadfence reduction (a device counter, the
last block's flag read through block.sync_or: items 2, 10), and the f16x2 / bf16x2 pair atomics
(item 12; bf16 natively and through the sm_80 loop). Random inputs, poisoned outputs,
every element checked. Kernels: packages/cudapatterns/patk.py."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()
sys.path.insert(0, str(Path(__file__).parent / "packages" / "cudapatterns"))
BLOCK = 128


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_literal_choices(dtype: type) -> None:
    import patk

    n = 5003
    x = (rng.random(n) * 8 - 4).astype(dtype)
    out = devices.full((n,), np.nan, dtype)
    weights = devices.full((n,), np.nan)
    patk.literal_choices[(n + BLOCK - 1) // BLOCK, BLOCK](devices.array(x), 1, out, weights)
    devices.synchronize()
    v = x.astype(np.int32)  # toward zero, as i32(x) converts
    indicator = (v == 1).astype(np.float32)
    w = np.where(v > 1, 0.25, 0.5).astype(np.float32)
    np.testing.assert_allclose(to_numpy(weights), indicator + w * x.astype(np.float32), rtol=1e-6, atol=1e-6)
    want = np.where(x * x + x > 4.0, 2.0, -1.0).astype(dtype)
    np.testing.assert_array_equal(to_numpy(out), want)


def test_threadfence_reduction_twice() -> None:
    import patk

    for blocks in (37, 64):  # the device counter wraps to 0 after each launch's last block
        n = blocks * BLOCK * 3 + 17
        x = rng.random(n).astype(np.float32)
        partial = devices.full((blocks,), np.nan)
        total = devices.full((1,), np.nan)
        patk.threadfence_sum[blocks, BLOCK](devices.array(x), partial, total)
        devices.synchronize()
        np.testing.assert_allclose(to_numpy(total)[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_half2_atomic_add() -> None:
    """Item 12: the pair atomic on f16 elements; small integers, so every order of the adds gives
    the exact sum."""
    import patk

    pairs, slots = 4096, 8
    x = rng.integers(0, 4, 2 * pairs).astype(np.float16)
    acc = devices.zeros(2 * slots, np.float16)
    patk.half2_atomic_add[(pairs + BLOCK - 1) // BLOCK, BLOCK](devices.array(x), acc, slots)
    devices.synchronize()
    want = x.astype(np.float64).reshape(pairs // slots, slots, 2).sum(0).reshape(-1)
    np.testing.assert_array_equal(to_numpy(acc).astype(np.float64), want)


@pytest.fixture(scope="module", params=["device", "sm_80"])
def bf16_patk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """bf16patk.py built for this GPU's arch (atom.add.noftz.bf16x2 on sm_90 and newer), or for sm_80
    only (the compare-and-swap loop; its PTX is JIT-compiled by the driver for this GPU). The CPU
    device compiles the source itself: there only the first."""
    if devices.on_cpu():
        if request.param == "sm_80":
            pytest.skip("the sm_80 build's compare-and-swap loop is GPU code (the CPU device compiles the source)")
        root = tmp_path_factory.mktemp("bf16patk_cpu")
        yield devices.compiled_package([Path(__file__).parent / "packages" / "cudapatterns" / "bf16patk.py"],
                                       "bf16patk_cpu", root)
        sys.path.remove(str(root))
        return
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch if request.param == "device" else request.param
    name = f"bf16patk_{request.param}"
    root = tmp_path_factory.mktemp(name)
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(Path(__file__).parent / "packages" / "cudapatterns" / "bf16patk.py", pkg / "bf16patk.py")
    compiled = compile_module(pkg / "bf16patk.py", f"{name}.bf16patk", CompileOptions(archs=(arch,), embed_ptx=True),
                              root=root)
    assert ("add.noftz.bf16x2" in compiled.ptx[arch]) == (arch != "sm_80")
    write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module(f"{name}.bf16patk")
    sys.path.remove(str(root))


def test_bf16x2_atomic_add(bf16_patk: ModuleType) -> None:
    """Item 12: the pair atomic on bf16 elements at each scope, and the bf16 scalar add, natively
    and by the sm_80 loop; zeros and ones, whose partial sums (at most 128: a block's) are exact
    in bf16, so every order of the adds gives the exact sum."""
    pairs, slots = 4096, 64
    x = devices.bf16(rng.integers(0, 2, 2 * pairs))
    blocks = (pairs + BLOCK - 1) // BLOCK
    acc = devices.bf16(np.zeros(2 * slots))
    per_block = devices.bf16(np.zeros(2 * blocks))
    small = x[: 2 * 64]  # the second launch: 64 pairs
    total = devices.bf16(np.zeros(4))
    bf16_patk.bf16x2_atomic_add[blocks, BLOCK](x, acc, per_block, devices.bf16(np.zeros(4)), slots)
    bf16_patk.bf16x2_atomic_add[1, 64](small, devices.bf16(np.zeros(2 * slots)), devices.bf16(np.zeros(2)), total, slots)
    devices.synchronize()
    pairs_f = to_numpy(x).astype(np.float64).reshape(pairs, 2)
    np.testing.assert_array_equal(to_numpy(acc), pairs_f.reshape(pairs // slots, slots, 2).sum(0).reshape(-1))
    np.testing.assert_array_equal(to_numpy(per_block), pairs_f.reshape(blocks, BLOCK, 2).sum(1).reshape(-1))
    small_f = pairs_f[:64]
    got = to_numpy(total)
    np.testing.assert_array_equal(got[:2], small_f.sum(0))
    assert got[2] == small_f[:, 0].sum() and got[3] == 0.0
