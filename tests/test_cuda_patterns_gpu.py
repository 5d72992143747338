"""CUDA as people write it (issue 29) on the GPU: conditionals of literals and a conversion in a
generic condition (items 4, 8), and cuda-samples' threadfence reduction (a device counter, the
last block's flag read through block.sync_or: items 2, 10). Random inputs, poisoned outputs,
every element checked. Kernels: packages/cudapatterns/patk.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
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
