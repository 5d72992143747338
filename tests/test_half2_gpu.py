"""f16x2 / bf16x2 arithmetic on the GPU against NumPy in float64, rounded as the hardware's
paired half instructions round (every element checked, outputs poisoned)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("uses torch CUDA tensors (not yet written with tests/devices.py)")]
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "half2"))
rng = np.random.default_rng()


def test_f16x2_fma() -> None:
    import half2k

    n = 2 * 4099
    x = torch.as_tensor(rng.uniform(-4, 4, n), device="cuda").half()
    y = torch.as_tensor(rng.uniform(-4, 4, n), device="cuda").half()
    lo = torch.full((n // 2,), float("nan"), dtype=torch.float16, device="cuda")
    hi = torch.full((n // 2,), float("nan"), dtype=torch.float16, device="cuda")
    half2k.axpy_half2[(n // 2 + 255) // 256, 256](1.5, x, y, lo, hi)
    ref = (x.double() * 1.5 + y.double()).cpu().numpy()  # one rounding (fused) or two: within 1 ulp
    got = torch.stack([lo, hi], 1).reshape(-1).double().cpu().numpy()
    np.testing.assert_allclose(got, ref, rtol=2 ** -10, atol=2 ** -14)


def test_bf16x2_sub_mul() -> None:
    import half2k

    n = 2 * 3001
    x = torch.as_tensor(rng.uniform(-4, 4, n), device="cuda").bfloat16()
    y = torch.as_tensor(rng.uniform(-4, 4, n), device="cuda").bfloat16()
    lo = torch.full((n // 2,), float("nan"), dtype=torch.bfloat16, device="cuda")
    hi = torch.full((n // 2,), float("nan"), dtype=torch.bfloat16, device="cuda")
    half2k.sub_mul_bf162[(n // 2 + 255) // 256, 256](x, y, lo, hi)
    xd, yd = x.double().cpu().numpy(), y.double().cpu().numpy()
    ref = (xd - yd) * yd  # two bf16 roundings (the difference, then the product): 2 ulp of 2^-7
    got = torch.stack([lo, hi], 1).reshape(-1).double().cpu().numpy()
    np.testing.assert_allclose(got, ref, rtol=2 ** -6, atol=2 ** -6)
