"""Hopper tensor cores on the GPU (issue #18): one-warpgroup wgmma tiles (K-major and N-major
B, written by ordinary stores and fenced for the async proxy) and the warp-specialized
persistent GEMM of examples/gemm/wgmma_gemm.py against torch in float64, at odd sizes and
with more tiles than SMs. Inputs are fresh random non-zero values, outputs are poisoned with
NaN before every launch and every element is checked. Both modules need sm_90a: on a 9.0 GPU
the JIT compiles them for it (their kernels need it), elsewhere the tests skip.
Kernels: packages/wgmmakernels/, examples/gemm/wgmma_gemm.py."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "packages" / "wgmmakernels"
sys.path.insert(0, str(KERNELS))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


@pytest.fixture(autouse=True)
def _needs_sm_90() -> None:
    from oxide.runtime import device

    if device.context_device(device.current_context()).arch != "sm_90":
        pytest.skip("wgmma needs an sm_90 GPU (H100/H200)")


def randn(*shape: int, dtype: Any = torch.float32) -> Any:
    x = torch.randn(*shape, device="cuda", dtype=torch.float32)
    x[x.abs() < 1e-3] = 0.5  # never zero
    return x.to(dtype)


def poison(*shape: int, dtype: Any = torch.float32) -> Any:
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def check(out: Any, a: Any, b: Any, rounding: float) -> None:
    """Every element of ``out`` within the output's rounding and an f32 accumulation of A @ B."""
    ref = a.double() @ b.double()
    bound = rounding * ref.abs() + 1e-5 * (a.double().abs() @ b.double().abs()) + 1e-6
    err = (out.double() - ref).abs()
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    n = out.shape[1]
    assert not bool(bad.any()), (f"{int(bad.sum())} of {out.numel()} wrong, first at "
                                 f"{divmod(int(bad.reshape(-1).nonzero()[0]), n)}, max error {err.nan_to_num(1e30).max().item()}")


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_wgmma_tile_k_major_b(elem: str) -> None:
    import wgk

    a, b = randn(64, 64, dtype=DTYPES[elem]), randn(64, 128, dtype=DTYPES[elem])
    out = poison(64, 128)
    wgk.tile_k_major[1, 128](a.reshape(-1), b.t().contiguous().reshape(-1), out.reshape(-1))
    check(out, a, b, 0.0)


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_wgmma_tile_n_major_b(elem: str) -> None:
    import wgk

    a, b = randn(64, 64, dtype=DTYPES[elem]), randn(64, 128, dtype=DTYPES[elem])
    out = poison(64, 128)
    wgk.tile_n_major[1, 128](a.reshape(-1), b.reshape(-1), out.reshape(-1))
    check(out, a, b, 0.0)


# one tile; odd M with edges in every direction; more tiles than SMs (the persistent loop)
GEMM_SIZES = [(128, 256, 64), (999, 520, 328), (77, 8, 40), (1280, 2304, 1032), (4096, 4096, 512)]


@pytest.mark.parametrize("elem", ["bf16", "f16"])
@pytest.mark.parametrize("mnk", GEMM_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_gemm(elem: str, mnk: tuple[int, int, int]) -> None:
    from examples.gemm.wgmma_gemm import SMEM_BYTES, THREADS, wgmma_gemm, BM, BN

    m, n, k = mnk
    dt = DTYPES[elem]
    a, b = randn(m, k, dtype=dt), randn(k, n, dtype=dt)
    c = poison(m, n, dtype=dt)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles = ((m + BM - 1) // BM) * ((n + BN - 1) // BN)
    wgmma_gemm[min(sms, tiles), THREADS, None, SMEM_BYTES](a.reshape(-1), b.reshape(-1), m, n, k, c.reshape(-1))
    check(c, a, b, 2.0 ** -8 if elem == "bf16" else 2.0 ** -11)


def test_wgmma_gemm_grid_smaller_than_the_tiles() -> None:
    """Few blocks each walking many tiles: the stage ring carries across tiles."""
    from examples.gemm.wgmma_gemm import SMEM_BYTES, THREADS, wgmma_gemm

    m, n, k = 1024, 1024, 200
    a, b = randn(m, k, dtype=torch.bfloat16), randn(k, n, dtype=torch.bfloat16)
    c = poison(m, n, dtype=torch.bfloat16)
    wgmma_gemm[3, THREADS, None, SMEM_BYTES](a.reshape(-1), b.reshape(-1), m, n, k, c.reshape(-1))
    check(c, a, b, 2.0 ** -8)
