"""ox.mma.stmatrix on the GPU (issue #18, sm_90): one warp stores registers loaded from fresh
random non-zero data with stmatrix .x1/.x2/.x4, plain and .trans, from a local array and from
mma fragments (one A fragment, two B fragments of an array of them), at row starts scattered at
random over shared memory that was poisoned with NaN. All of shared memory comes back and every
element is compared, bit for bit, with where PTX's stmatrix puts it, computed in NumPy: lane l's
register k holds the elements at row l // 4, columns 2 * (l % 4) and +1 of matrix k, whose row
r starts at the address lane 8k + r gives (.trans: the element goes to row column, column row).
Kernels: packages/stmatrixkernels/."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("stmatrix (tensor-core fragments)")]
torch = pytest.importorskip("torch")
KERNELS = Path(__file__).resolve().parent / "packages" / "stmatrixkernels"
sys.path.insert(0, str(KERNELS))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
SMEM = 1024  # stk.SMEM
ROW = 8  # 16-bit elements in a 16-byte row


@pytest.fixture(autouse=True)
def _needs_sm_90() -> None:
    from oxide.runtime import device

    if not device.context_device(device.current_context()).arch.startswith("sm_9"):
        pytest.skip("stmatrix needs sm_90")


def bits(t: Any) -> np.ndarray:
    return t.cpu().view(torch.int16).numpy().view(np.uint16)


def inputs(elem: str, slots: int, seed: int) -> tuple[Any, Any, Any, Any]:
    """Registers (32 lanes x 8 elements, random, never zero), 32 distinct row starts among
    ``slots`` 16-byte rows, the NaN poison, and the output (poisoned too)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(32 * 8, generator=gen)
    x[x.abs() < 1e-3] = 0.5
    x = x.to(DTYPES[elem]).cuda()
    rows = torch.randperm(slots, generator=gen)[:32].to(torch.int32) * ROW
    fill = torch.full((SMEM,), float("nan"), dtype=DTYPES[elem], device="cuda")
    out = torch.full((SMEM,), float("nan"), dtype=DTYPES[elem], device="cuda")
    return x, rows.cuda(), fill, out


def expected(x: np.ndarray, rows: np.ndarray, fill: np.ndarray, matrices: int, trans: bool,
             base: int = 0) -> np.ndarray:
    """Shared memory after stmatrix of ``matrices`` registers per lane (PTX ISA, stmatrix)."""
    smem = fill.copy()
    for k in range(matrices):
        for lane in range(32):
            for j in range(2):
                r, c = lane // 4, 2 * (lane % 4) + j
                value = x[8 * lane + 2 * k + j]
                if trans:
                    smem[base + rows[8 * k + c] + r] = value
                else:
                    smem[base + rows[8 * k + r] + c] = value
    return smem


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    wrong = np.nonzero(got != want)[0]
    assert wrong.size == 0, (f"{wrong.size} of {got.size} elements wrong, first at {wrong[0]}: "
                             f"{got[wrong[0]]:#06x}, expected {want[wrong[0]]:#06x}")


@pytest.mark.parametrize("trans", [False, True], ids=["plain", "trans"])
@pytest.mark.parametrize("matrices", [1, 2, 4], ids=["x1", "x2", "x4"])
@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_stmatrix_local_array(elem: str, matrices: int, trans: bool) -> None:
    import stk

    for seed in range(3):
        x, rows, fill, out = inputs(elem, SMEM // ROW, 100 * matrices + 10 * trans + seed)
        stk.store[1, 32](x, rows, fill, out, matrices, trans)
        torch.cuda.synchronize()
        assert_same(bits(out), expected(bits(x), rows.cpu().numpy(), bits(fill), matrices, trans))


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_stmatrix_fragments(elem: str) -> None:
    """.x4 of an A fragment, then .x4.trans of two B fragments (fb[0], fb[1]) in the upper half."""
    import stk

    x, rows, fill, out = inputs(elem, SMEM // 2 // ROW, 7)
    stk.store_fragments[1, 32](x, rows, fill, out)
    torch.cuda.synchronize()
    xs, rs = bits(x), rows.cpu().numpy()
    want = expected(xs, rs, bits(fill), 4, False)
    want = expected(xs, rs, want, 4, True, base=SMEM // 2)
    assert_same(bits(out), want)
