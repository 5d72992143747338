"""8-bit floats on the GPU (issue #18, sm_89+): conversions against torch's, every element and
every fp8 bit pattern; the fp8 mma.sync GEMM (examples/gemm/mma_gemm_fp8.py) against torch's
float64 matmul of the dequantized inputs at odd sizes; and torch float8 tensors as views.
Outputs are poisoned (NaN) before each launch. Kernels: packages/fp8/."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("fp8 tensor-core mma and torch's fp8 CUDA conversions")]
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent / "packages" / "fp8"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FINITE_MAX = {E4M3: 448.0, E5M2: 57344.0}


@pytest.fixture(autouse=True)
def _needs_sm89() -> None:
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 needs sm_89 or newer")


def poison8(n: int, dtype: Any) -> Any:
    return torch.full((n,), 0x7F, dtype=torch.uint8, device="cuda").view(dtype)  # NaN in both formats


def spread(n: int, lo: float, hi: float) -> Any:
    """Signed values whose magnitudes spread evenly over the exponents 2^lo .. 2^hi (subnormals,
    normals and values past the largest finite one), none zero."""
    mag = torch.exp2(torch.empty(n, device="cuda").uniform_(lo, hi))
    sign = torch.where(torch.rand(n, device="cuda") < 0.5, -1.0, 1.0)
    return mag * sign


@pytest.mark.parametrize("src", ["f32", "f16", "bf16"])
def test_narrowing_matches_torch_with_saturation(src: str) -> None:
    import fp8k

    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[src]
    n = 100_003
    x = spread(n, -20.0, 16.5 if src != "f16" else 15.9).to(dt)
    o4, o5 = poison8(n, E4M3), poison8(n, E5M2)
    fp8k.narrow[(n + 255) // 256, 256](x, o4, o5)
    for out, dtype in ((o4, E4M3), (o5, E5M2)):
        # PTX's .satfinite clamps to the largest finite value (torch gives NaN or inf there)
        big = FINITE_MAX[dtype]
        ref = x.float().clamp(-big, big).to(dtype)
        bad = out.view(torch.uint8) != ref.view(torch.uint8)
        assert not bool(bad.any()), (f"{int(bad.sum())} of {n} differ from torch, first x = "
                                     f"{x[bad.nonzero()[0]].item()!r}: {out.view(torch.uint8)[bad][0].item():#x} "
                                     f"vs {ref.view(torch.uint8)[bad][0].item():#x}")


def test_narrowing_keeps_nan() -> None:
    import fp8k

    x = torch.tensor([float("nan"), -float("nan"), 1.0, float("inf"), -float("inf")], device="cuda")
    o4, o5 = poison8(5, E4M3), poison8(5, E5M2)
    o4.view(torch.uint8)[:] = 0
    o5.view(torch.uint8)[:] = 0
    fp8k.narrow[1, 32](x, o4, o5)
    for out, dtype in ((o4, E4M3), (o5, E5M2)):
        got = out.float().cpu()
        assert torch.isnan(got[:2]).all() and got[2].item() == 1.0
        assert got[3].item() == FINITE_MAX[dtype] and got[4].item() == -FINITE_MAX[dtype]  # satfinite


def test_widening_every_bit_pattern_matches_torch() -> None:
    import fp8k

    bits = torch.arange(256, dtype=torch.int32, device="cuda").to(torch.uint8)
    q4, q5 = bits.view(E4M3), bits.view(E5M2)
    outs = [torch.full((256,), float("nan"), dtype=dt, device="cuda")
            for dt in (torch.float32, torch.float16, torch.bfloat16) * 2]
    for o in outs:
        o[:] = 1234.0  # a value no pattern has: a missed write shows
    fp8k.widen[1, 256](q4, q5, *outs)
    refs = [q4.to(torch.float32), q4.to(torch.float16), q4.to(torch.bfloat16),
            q5.to(torch.float32), q5.to(torch.float16), q5.to(torch.bfloat16)]
    for got, ref in zip(outs, refs):
        g, r = got.double().cpu(), ref.double().cpu()
        nan = torch.isnan(r)
        assert torch.equal(torch.isnan(g), nan), f"{got.dtype}: NaN patterns differ"
        assert torch.equal(g[~nan], r[~nan]), f"{got.dtype}: {int((g[~nan] != r[~nan]).sum())} patterns differ"


def test_fp8_view_of_the_wrong_format_is_refused() -> None:
    import oxide
    import fp8k

    x = torch.ones(64, device="cuda")
    with pytest.raises((TypeError, ValueError, oxide.OxideError), match="o4: f8e5m2"):
        fp8k.narrow[1, 64](x, poison8(64, E5M2), poison8(64, E5M2))


GEMM_SIZES = [(128, 256, 128), (1000, 776, 400), (300, 136, 16), (513, 1032, 1056), (77, 8, 48)]


def quantized(rows: int, cols: int) -> Any:
    x = torch.randn(rows, cols, device="cuda")
    x[x.abs() < 1e-2] = 0.5  # never zero (e4m3's smallest subnormal is 2^-9)
    return x.to(E4M3)


@pytest.mark.parametrize("mnk", GEMM_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_fp8_gemm_matches_the_dequantized_product(mnk: tuple[int, int, int]) -> None:
    from examples.gemm.mma_gemm_fp8 import BM, BN, SMEM_BYTES, THREADS, mma_gemm_fp8

    m, n, k = mnk
    a, bt = quantized(m, k), quantized(n, k)
    c = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    scale = 0.75
    mma_gemm_fp8[((n + BN - 1) // BN, (m + BM - 1) // BM), THREADS, None, SMEM_BYTES](
        a.reshape(-1), bt.reshape(-1), scale, m, n, k, c.reshape(-1))
    ad, bd = a.double(), bt.double().t()
    ref = (ad @ bd) * scale
    bound = 2.0 ** -8 * ref.abs() + 1e-6 * (ad.abs() @ bd.abs()) + 1e-6  # bf16 output rounding
    err = (c.double() - ref).abs()
    bad = ~(err <= bound)
    assert not bool(bad.any()), (f"{int(bad.sum())} of {m * n} wrong, first at "
                                 f"{divmod(int(bad.reshape(-1).nonzero()[0]), n)}, max error {err.max().item()}")
