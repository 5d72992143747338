"""32-byte vectors (f64x4, f32x8: two 16-byte accesses) and 16-byte vectors of 8 halves
(bf16x8 / f16x8, converted to f32x8 lane by lane and back) on the GPU, against torch.
Inputs random, outputs poisoned, every element checked. Kernels: packages/widevec/widek.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("uses torch CUDA tensors (not yet written with tests/devices.py)")]
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "widevec"))
BLOCK = 128


def test_double4_axpy() -> None:
    import widek

    n = 4 * 1001
    x, y = torch.randn(n, dtype=torch.float64, device="cuda"), torch.randn(n, dtype=torch.float64, device="cuda")
    out = torch.full((n,), float("nan"), dtype=torch.float64, device="cuda")
    widek.double4_axpy[(n // 4 + BLOCK - 1) // BLOCK, BLOCK](1.5, x, y, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 1.5 + y, rtol=1e-15, atol=1e-15)


def test_float8_scale() -> None:
    import widek

    n = 8 * 777
    x = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    widek.float8_scale[(n // 8 + BLOCK - 1) // BLOCK, BLOCK](x, out, 0.75)
    torch.cuda.synchronize()
    lane = torch.arange(n, device="cuda") % 8
    torch.testing.assert_close(out, x * 0.75 + lane.float(), rtol=1e-6, atol=1e-6)


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
        widened = torch.full((n,), float("nan"), device="cuda")
        widek.bf16x128[grid, BLOCK](x, out, widened, 1.25)
        torch.cuda.synchronize()
        assert torch.equal(widened, x.float())  # bf16 -> f32 is exact
    else:
        widek.f16x128[grid, BLOCK](x, out, 1.25)
        torch.cuda.synchronize()
    # f32 math (one fma per lane) rounded to the half type to nearest even, as torch's .to() rounds
    want = torch.addcmul(lane, x.float(), torch.full_like(lane, 1.25)).to(dt)
    assert torch.equal(out, want), (out - want).abs().max()
