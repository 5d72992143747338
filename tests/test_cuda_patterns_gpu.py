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

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("uses torch CUDA tensors (not yet written with tests/devices.py)")]
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "cudapatterns"))
BLOCK = 128


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_literal_choices(dtype: torch.dtype) -> None:
    import patk

    n = 5003
    x = (torch.rand(n, device="cuda", dtype=dtype) * 8 - 4)
    out = torch.full((n,), float("nan"), dtype=dtype, device="cuda")
    weights = torch.full((n,), float("nan"), device="cuda")
    patk.literal_choices[(n + BLOCK - 1) // BLOCK, BLOCK](x, 1, out, weights)
    torch.cuda.synchronize()
    v = x.to(torch.int32)  # toward zero, as i32(x) converts
    indicator = (v == 1).float()
    w = torch.where(v > 1, 0.25, 0.5).float()
    torch.testing.assert_close(weights, indicator + w * x.float(), rtol=1e-6, atol=1e-6)
    want = torch.where(x * x + x > 4.0, 2.0, -1.0).to(dtype)
    assert torch.equal(out, want)


def test_threadfence_reduction_twice() -> None:
    import patk

    for blocks in (37, 64):  # the device counter wraps to 0 after each launch's last block
        n = blocks * BLOCK * 3 + 17
        x = torch.rand(n, device="cuda")
        partial = torch.full((blocks,), float("nan"), device="cuda")
        total = torch.full((1,), float("nan"), device="cuda")
        patk.threadfence_sum[blocks, BLOCK](x, partial, total)
        torch.cuda.synchronize()
        torch.testing.assert_close(total[0], x.double().sum().float(), rtol=1e-4, atol=1e-3)


def test_half2_atomic_add() -> None:
    """Item 12: the pair atomic on f16 elements; small integers, so every order of the adds gives
    the exact sum."""
    import patk

    pairs, slots = 4096, 8
    x = torch.randint(0, 4, (2 * pairs,), device="cuda").to(torch.float16)
    acc = torch.zeros(2 * slots, dtype=torch.float16, device="cuda")
    patk.half2_atomic_add[(pairs + BLOCK - 1) // BLOCK, BLOCK](x, acc, slots)
    torch.cuda.synchronize()
    want = x.view(pairs, 2).float().view(pairs // slots, slots, 2).sum(0).reshape(-1)
    assert torch.equal(acc.float(), want)


@pytest.fixture(scope="module", params=["device", "sm_80"])
def bf16_patk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """bf16patk.py built for this GPU's arch (atom.add.noftz.bf16x2 on sm_90 and newer), or for sm_80
    only (the compare-and-swap loop; its PTX is JIT-compiled by the driver for this GPU)."""
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
    x = torch.randint(0, 2, (2 * pairs,), device="cuda").to(torch.bfloat16)
    blocks = (pairs + BLOCK - 1) // BLOCK
    acc = torch.zeros(2 * slots, dtype=torch.bfloat16, device="cuda")
    per_block = torch.zeros(2 * blocks, dtype=torch.bfloat16, device="cuda")
    small = x[: 2 * 64]  # the second launch: 64 pairs
    total = torch.zeros(4, dtype=torch.bfloat16, device="cuda")
    bf16_patk.bf16x2_atomic_add[blocks, BLOCK](x, acc, per_block, torch.zeros(4, dtype=torch.bfloat16, device="cuda"),
                                               slots)
    bf16_patk.bf16x2_atomic_add[1, 64](small, torch.zeros(2 * slots, dtype=torch.bfloat16, device="cuda"),
                                       torch.zeros(2, dtype=torch.bfloat16, device="cuda"), total, slots)
    torch.cuda.synchronize()
    pairs_f = x.view(pairs, 2).float()
    assert torch.equal(acc.float(), pairs_f.view(pairs // slots, slots, 2).sum(0).reshape(-1))
    assert torch.equal(per_block.float(), pairs_f.view(blocks, BLOCK, 2).sum(1).reshape(-1))
    small_f = small.view(64, 2).float()
    assert torch.equal(total.float()[:2], small_f.sum(0))
    assert total.float()[2].item() == small_f[:, 0].sum().item() and total.float()[3].item() == 0.0
