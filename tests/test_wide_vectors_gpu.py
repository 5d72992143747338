"""32-byte vectors (f64x4, f32x8: two 16-byte accesses) and 16-byte vectors of 8 halves
(bf16x8 / f16x8, converted to f32x8 lane by lane and back) on the GPU, against torch.
Inputs random, outputs poisoned, every element checked. Kernels: packages/widevec/widek.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
torch = devices.torch_or_none()  # PyTorch references of tests marked torch_reference (GPU only)
torch_reference = devices.gpu_only("PyTorch (CUDA) computes the reference or makes the input")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "widevec"))
BLOCK = 128


@torch_reference
def test_double4_axpy() -> None:
    import widek

    n = 4 * 1001
    x, y = torch.randn(n, dtype=np.float64, device="cuda"), torch.randn(n, dtype=np.float64, device="cuda")
    out = devices.full((n,), np.nan, np.float64)
    widek.double4_axpy[(n // 4 + BLOCK - 1) // BLOCK, BLOCK](1.5, x, y, out)
    devices.synchronize()
    torch.testing.assert_close(out, x * 1.5 + y, rtol=1e-15, atol=1e-15)


@torch_reference
def test_float8_scale() -> None:
    import widek

    n = 8 * 777
    x = torch.randn(n, device="cuda")
    out = devices.full((n,), np.nan)
    widek.float8_scale[(n // 8 + BLOCK - 1) // BLOCK, BLOCK](x, out, 0.75)
    devices.synchronize()
    lane = torch.arange(n, device="cuda") % 8
    torch.testing.assert_close(out, x * 0.75 + lane.float(), rtol=1e-6, atol=1e-6)


@torch_reference
@pytest.mark.parametrize("half", ["bf16", "f16"])
def test_x128_halves_round_trip_through_f32_lanes(half: str) -> None:
    import widek

    dt = torch.bfloat16 if half == "bf16" else torch.float16
    n = 8 * 1003
    x = (torch.randn(n, device="cuda") * 4).to(dt)
    out = torch.full((n,), float("nan"), dtype=dt, device="cuda")
    lane = (torch.arange(n, device="cuda") % 8).float()
    grid = (n // 8 + BLOCK - 1) // BLOCK
    if half == "bf16":
        widened = devices.full((n,), np.nan)
        widek.bf16x128[grid, BLOCK](x, out, widened, 1.25)
        devices.synchronize()
        assert torch.equal(widened, x.float())  # bf16 -> f32 is exact
    else:
        widek.f16x128[grid, BLOCK](x, out, 1.25)
        devices.synchronize()
    # f32 math (one fma per lane) rounded to the half type to nearest even, as torch's .to() rounds
    want = torch.addcmul(lane, x.float(), torch.full_like(lane, 1.25)).to(dt)
    assert torch.equal(out, want), (out - want).abs().max()
