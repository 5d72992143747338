"""32-byte vectors (f64x4, f32x8: two 16-byte accesses) and 16-byte vectors of 8 halves
(bf16x8 / f16x8, converted to f32x8 lane by lane and back) on the GPU, against NumPy.
Inputs random, outputs poisoned, every element checked. Kernels: packages/widevec/widek.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "widevec"))
BLOCK = 128
rng = np.random.default_rng()


def test_double4_axpy() -> None:
    import widek

    n = 4 * 1001
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    out = devices.full(n, np.nan, np.float64)
    widek.double4_axpy[(n // 4 + BLOCK - 1) // BLOCK, BLOCK](1.5, devices.array(x), devices.array(y), out)
    devices.synchronize()
    np.testing.assert_allclose(to_numpy(out), x * 1.5 + y, rtol=1e-15, atol=1e-15)


def test_float8_scale() -> None:
    import widek

    n = 8 * 777
    x = rng.standard_normal(n).astype(np.float32)
    out = devices.full(n, np.nan)
    widek.float8_scale[(n // 8 + BLOCK - 1) // BLOCK, BLOCK](devices.array(x), out, 0.75)
    devices.synchronize()
    lane = np.arange(n) % 8
    np.testing.assert_allclose(to_numpy(out), x.astype(np.float64) * 0.75 + lane, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("half", ["bf16", "f16"])
def test_x128_halves_round_trip_through_f32_lanes(half: str) -> None:
    """x * 1.25 + lane in f32 (one fma: exact in float64 for these few bits, then rounded once
    to f32), rounded to the half type to nearest even."""
    import widek

    n = 8 * 1003
    values = rng.standard_normal(n) * 4
    lane = (np.arange(n) % 8).astype(np.float64)
    grid = (n // 8 + BLOCK - 1) // BLOCK
    if half == "bf16":
        x = devices.bf16(values)
        out = devices.bf16(np.full(n, np.nan))
        widened = devices.full(n, np.nan)
        widek.bf16x128[grid, BLOCK](x, out, widened, 1.25)
        devices.synchronize()
        xf = to_numpy(x)  # bf16 -> f32, exactly
        np.testing.assert_array_equal(to_numpy(widened), xf)
        torch = devices.needs_torch("bfloat16 rounding")
        want = torch.as_tensor(np.float32(xf.astype(np.float64) * 1.25 + lane)).to(torch.bfloat16).float().numpy()
    else:
        xh = values.astype(np.float16)
        x, out = devices.array(xh), devices.full(n, np.nan, np.float16)
        widek.f16x128[grid, BLOCK](x, out, 1.25)
        devices.synchronize()
        want = np.float32(xh.astype(np.float64) * 1.25 + lane).astype(np.float16)
    got = to_numpy(out)
    np.testing.assert_array_equal(got, want)
