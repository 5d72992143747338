"""Hopper tensor cores on the GPU (issue #18): one-warpgroup wgmma tiles (K-major and N-major
B, written by ordinary stores and fenced for the async proxy), the TMA + wgmma GEMM of
examples/gemm/wgmma_gemm.py and its cp.async variant examples/gemm/wgmma_cpasync_gemm.py, and the
e4m3 one examples/gemm/wgmma_gemm_fp8.py and the TF32 one wgmma_gemm_tf32.py, against torch in float64, at odd sizes and with more tiles than SMs. Inputs are fresh random non-zero
values, outputs are poisoned with NaN before every launch and every element is checked. The
modules need sm_90a: on a 9.0 GPU the JIT compiles them for it (their kernels need it),
elsewhere the tests skip. Kernels: packages/wgmmakernels/, examples/gemm/."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("wgmma (tensor cores)")]
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "packages" / "wgmmakernels"
sys.path.insert(0, str(KERNELS))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from wgmma_gemm_cases import GEMM_SIZES, error_count  # noqa: E402

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
    wrong, where = error_count(out, a, b, rounding)
    assert not wrong, f"{wrong} of {out.numel()} wrong, {where}"


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


def test_wgmma_tma_gemm() -> None:
    """examples/gemm/wgmma_gemm.py at every size of GEMM_SIZES, bf16 and f16, and on 3 blocks
    walking 32 tiles, in a process of its own with a timeout (a hang fails the test)."""
    try:
        result = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "wgmma_gemm_cases.py")],
                                capture_output=True, text=True, timeout=90, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the TMA GEMM did not finish in 90 s (a barrier never completed?); it printed:\n{e.stdout}")
    assert result.returncode == 0, result.stdout + result.stderr


def test_wgmma_tma_gemm_fp8() -> None:
    """examples/gemm/wgmma_gemm_fp8.py (e4m3, per-tensor scales, bf16 out) at every size of
    FP8_GEMM_SIZES and on 3 blocks walking 16 tiles, in a process of its own with a timeout."""
    try:
        result = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "wgmma_gemm_fp8_cases.py")],
                                capture_output=True, text=True, timeout=120, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the fp8 TMA GEMM did not finish in 120 s (a barrier never completed?); it printed:\n{e.stdout}")
    assert result.returncode == 0, result.stdout + result.stderr


def test_wgmma_tma_gemm_tf32() -> None:
    """examples/gemm/wgmma_gemm_tf32.py (f32 in, read as tf32, f32 out, C = A @ Btᵀ) at every
    size of TF32_GEMM_SIZES and on 3 blocks walking 16 tiles, every element within tf32's bound and
    the RMS error within 2^-8 of the result's, and gemm_tf32's refusals, in a process of its own
    with a timeout."""
    try:
        result = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "wgmma_gemm_tf32_cases.py")],
                                capture_output=True, text=True, timeout=180, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the tf32 TMA GEMM did not finish in 180 s (a barrier never completed?); it printed:\n{e.stdout}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": ok") == 7 + 8, result.stdout  # 7 GEMM cases, 8 refusals


def cpasync_gemm(a: Any, b: Any, c: Any, blocks: int) -> None:
    from examples.gemm.wgmma_cpasync_gemm import BM, BN, SMEM_BYTES, THREADS, wgmma_cpasync_gemm

    (m, k), n = a.shape, b.shape[1]
    tiles = ((m + BM - 1) // BM) * ((n + BN - 1) // BN)
    wgmma_cpasync_gemm[min(blocks, tiles), THREADS, None, SMEM_BYTES](a.reshape(-1), b.reshape(-1), m, n, k,
                                                                      c.reshape(-1))


@pytest.mark.parametrize("elem", ["bf16", "f16"])
@pytest.mark.parametrize("mnk", GEMM_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_cpasync_gemm(elem: str, mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    dt = DTYPES[elem]
    a, b = randn(m, k, dtype=dt), randn(k, n, dtype=dt)
    c = poison(m, n, dtype=dt)
    cpasync_gemm(a, b, c, torch.cuda.get_device_properties(0).multi_processor_count)
    check(c, a, b, 2.0 ** -8 if elem == "bf16" else 2.0 ** -11)


def test_wgmma_cpasync_gemm_grid_smaller_than_the_tiles() -> None:
    """Few blocks each walking many tiles: the stage ring carries across tiles."""
    m, n, k = 1024, 1024, 200
    a, b = randn(m, k, dtype=torch.bfloat16), randn(k, n, dtype=torch.bfloat16)
    c = poison(m, n, dtype=torch.bfloat16)
    cpasync_gemm(a, b, c, 3)
    check(c, a, b, 2.0 ** -8)
