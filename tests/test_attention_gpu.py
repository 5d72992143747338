"""The attention example (examples/attention, issue #18) on the GPU against an explicit
float64 softmax(q k^T * scale) v: odd sequence lengths (the tails of the 64-row tiles), both
head dims, causal and not, bf16 and f16. Inputs are fresh random non-zero values, outputs are
poisoned with NaN before the launch and every element of o and lse is checked.

Tolerance: the kernel rounds P to the input type before P V (as FlashAttention does) and the
output once, so an element may be off by ulp * |o| (output rounding, 2x its bound) plus
ulp * (P |V|) (P's rounding, 2x its bound), with ulp = 2^-8 for bf16 and 2^-11 for f16; lse is
computed in f32 throughout: 1e-4 * (1 + |lse|)."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
ULP = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}


def randn(*shape: int, dtype: Any) -> Any:
    x = torch.randn(*shape, device="cuda", dtype=torch.float32)
    x[x.abs() < 1e-3] = 0.5  # never zero
    return x.to(dtype)


def reference(q: Any, k: Any, v: Any, causal: bool, scale: float) -> tuple[Any, Any, Any]:
    """o, lse and P |V| in float64."""
    scores = (q.double() @ k.double().transpose(-1, -2)) * scale
    if causal:
        seq = q.shape[-2]
        scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    p = torch.exp(scores - lse[..., None])
    return p @ v.double(), lse, p @ v.double().abs()


def check(elem: str, batch: int, heads: int, seq: int, dim: int, causal: bool, scale: float | None = None,
          warps: int = 4) -> None:
    from examples.attention import attention_forward
    from examples.attention.flash_attention import flash_attention

    dt = DTYPES[elem]
    q, k, v = (randn(batch, heads, seq, dim, dtype=dt) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((batch, heads, seq), float("nan"), device="cuda", dtype=torch.float32)
    s = 1.0 / math.sqrt(dim) if scale is None else scale
    rows = 16 * warps
    flash_attention[((seq + rows - 1) // rows, batch * heads), 32 * warps](
        q.view(-1), k.view(-1), v.view(-1), batch * heads, seq, s, o.view(-1), lse.view(-1), dim, causal, warps)
    torch.cuda.synchronize()
    ref, ref_lse, spread = reference(q, k, v, causal, s)
    err = (o.double() - ref).abs()
    bound = ULP[elem] * (ref.abs() + spread) + 1e-6
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    assert not bool(bad.any()), (f"o: {int(bad.sum())} of {bad.numel()} wrong, first at "
                                 f"{tuple(int(i) for i in bad.nonzero()[0])}, max error {err.max().item()}")
    lse_err = (lse.double() - ref_lse).abs()
    bad = ~(lse_err <= 1e-4 * (1.0 + ref_lse.abs()))
    assert not bool(bad.any()), (f"lse: {int(bad.sum())} of {bad.numel()} wrong, first at "
                                 f"{tuple(int(i) for i in bad.nonzero()[0])}, max error {lse_err.max().item()}")
    # the torch wrapper launches the same kernel
    o2, lse2 = attention_forward(q, k, v, causal=causal, scale=scale, warps=warps)
    assert torch.equal(o2, o) and torch.equal(lse2, lse)


SHAPES = [(1, 1, 1), (2, 3, 77), (1, 2, 1000), (1, 2, 128), (2, 1, 129)]


@pytest.mark.parametrize("warps", [4, 8])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_attention_bf16(shape: tuple[int, int, int], dim: int, causal: bool, warps: int) -> None:
    check("bf16", *shape, dim, causal, warps=warps)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_attention_f16(dim: int, causal: bool) -> None:
    check("f16", 2, 2, 333, dim, causal)


def test_attention_scale_and_long_sequence() -> None:
    """A larger scale (sharper rows) and a sequence of many tiles, causal."""
    check("bf16", 1, 1, 2049, 128, True, scale=0.3)
    check("bf16", 1, 1, 2049, 64, False, scale=0.3, warps=8)


def test_attention_refuses_bad_arguments() -> None:
    import oxide
    from examples.attention import attention_forward
    from examples.attention.flash_attention import flash_attention

    q = randn(1, 2, 64, 64, dtype=torch.bfloat16)
    o = torch.full_like(q, float("nan"))
    lse = torch.empty((1, 2, 64), device="cuda", dtype=torch.float32)
    with pytest.raises(oxide.KernelError, match="grid.dim.y == heads"):  # a precondition: before the launch
        flash_attention[(1, 1), 128](q.view(-1), q.view(-1), q.view(-1), 2, 64, 0.125, o.view(-1), lse.view(-1),
                                     64, False, 4)
    with pytest.raises(oxide.KernelError, match="block.dim.x == 32 [*] WARPS"):
        flash_attention[(1, 2), 128](q.view(-1), q.view(-1), q.view(-1), 2, 64, 0.125, o.view(-1), lse.view(-1),
                                     64, False, 8)
    with pytest.raises(ValueError, match="head dim 96"):
        attention_forward(*(randn(1, 1, 8, 96, dtype=torch.bfloat16) for _ in range(3)))
