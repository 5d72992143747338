"""f16x2 / bf16x2 arithmetic on the GPU against NumPy in float64, rounded as the hardware's
paired half instructions round (every element checked, outputs poisoned)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "half2"))
rng = np.random.default_rng()


def test_f16x2_fma() -> None:
    import half2k

    n = 2 * 4099
    x = rng.uniform(-4, 4, n).astype(np.float16)
    y = rng.uniform(-4, 4, n).astype(np.float16)
    lo, hi = devices.full(n // 2, np.nan, np.float16), devices.full(n // 2, np.nan, np.float16)
    half2k.axpy_half2[(n // 2 + 255) // 256, 256](1.5, devices.array(x), devices.array(y), lo, hi)
    devices.synchronize()
    # contracted to fma.rn.f16x2 (test_half2.py): one rounding of the exact value (exact in f64 here)
    ref = (x.astype(np.float64) * 1.5 + y.astype(np.float64)).astype(np.float16)
    got = np.stack([to_numpy(lo), to_numpy(hi)], 1).reshape(-1)
    np.testing.assert_array_equal(got, ref)


def test_bf16x2_sub_mul() -> None:
    import half2k

    n = 2 * 3001
    x = devices.bf16(rng.uniform(-4, 4, n))
    y = devices.bf16(rng.uniform(-4, 4, n))
    lo, hi = devices.bf16(np.full(n // 2, np.nan)), devices.bf16(np.full(n // 2, np.nan))
    half2k.sub_mul_bf162[(n // 2 + 255) // 256, 256](x, y, lo, hi)
    devices.synchronize()
    xd, yd = to_numpy(x).astype(np.float64), to_numpy(y).astype(np.float64)
    ref = (xd - yd) * yd  # two bf16 roundings (the difference, then the product): 2 ulp of 2^-7
    got = np.stack([to_numpy(lo), to_numpy(hi)], 1).reshape(-1).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=2 ** -6, atol=2 ** -6)
