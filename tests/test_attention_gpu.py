"""The attention examples (examples/attention, issue #18) on the GPU against an explicit
float64 softmax(q k^T * scale) v: odd sequence lengths (the tails of the 64- and 128-key
tiles), both head dims, causal and not, bf16 and f16; the sm_80 kernel with 4 and 8 warps, the
sm_90a one (wgmma_attention.py: sm_90 GPUs only) with and without its consumers' pingpong. Inputs are fresh random non-zero
values, outputs are poisoned with NaN before the launch and every element of o and lse is
checked.

Tolerance: the kernel rounds P to the input type before P V (as FlashAttention does) and the
output once, so an element may be off by ulp * |o| (output rounding, 2x its bound) plus
ulp * (P |V|) (P's rounding, 2x its bound), with ulp = 2^-8 for bf16 and 2^-11 for f16; lse is
computed in f32 throughout: 1e-4 * (1 + |lse|).

The cases run in one child process with a time limit (this file run as a script), each
reporting as it finishes: a kernel that hangs fails these tests with what finished and what did
not, instead of stopping the GPU suite."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import devices

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 240  # both modules' JIT compiles (16 instances each: ~15-40 s) and every case below, with a margin
ULP = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}

# (name, elem, batch, heads, seq, dim, causal, scale or None, warps; 0 for the wgmma kernel)
CASES: list[tuple[str, str, int, int, int, int, bool, float | None, int]] = [
    (f"bf16-{b}x{h}x{s}-d{d}-{'causal' if c else 'full'}-w{w}", "bf16", b, h, s, d, c, None, w)
    for (b, h, s) in [(1, 1, 1), (2, 3, 77), (1, 2, 1000), (1, 2, 128), (2, 1, 129)]
    for d in (64, 128) for c in (False, True) for w in (4, 8)
] + [
    (f"f16-2x2x333-d{d}-{'causal' if c else 'full'}", "f16", 2, 2, 333, d, c, None, 4)
    for d in (64, 128) for c in (False, True)
] + [
    ("bf16-1x1x2049-d128-causal-scale0.3", "bf16", 1, 1, 2049, 128, True, 0.3, 4),
    ("bf16-1x1x2049-d64-full-scale0.3-w8", "bf16", 1, 1, 2049, 64, False, 0.3, 8),
]
# the sm_90a kernel: warps -1 without pingpong, -2 with; 128-row tiles, heads in groups of 8 under causal
WGMMA_CASES: list[tuple[str, str, int, int, int, int, bool, float | None, int]] = [
    (f"wgmma-bf16-{b}x{h}x{s}-d{d}-{'causal' if c else 'full'}-{'pingpong' if p == -2 else 'plain'}",
     "bf16", b, h, s, d, c, None, p)
    for (b, h, s) in [(1, 1, 1), (2, 3, 77), (1, 2, 1000), (1, 2, 128), (2, 1, 129), (1, 9, 300)]
    for d in (64, 128) for c in (False, True) for p in (-1, -2)
] + [
    (f"wgmma-f16-2x2x333-d{d}-{'causal' if c else 'full'}", "f16", 2, 2, 333, d, c, None, -2)
    for d in (64, 128) for c in (False, True)
] + [
    ("wgmma-bf16-1x2x4096-d128-causal-scale0.3", "bf16", 1, 2, 4096, 128, True, 0.3, -2),
    ("wgmma-bf16-1x1x2049-d64-full-scale0.3", "bf16", 1, 1, 2049, 64, False, 0.3, -1),
]
CASES += WGMMA_CASES


# the child: runs the cases, one JSON line per finished case ---------------------------------

def randn(torch: Any, *shape: int, dtype: Any) -> Any:
    x = torch.randn(*shape, device="cuda", dtype=torch.float32)
    x[x.abs() < 1e-3] = 0.5  # never zero
    return x.to(dtype)


def run_case(torch: Any, elem: str, batch: int, heads: int, seq: int, dim: int, causal: bool,
             scale: float | None, warps: int) -> str | None:
    """None when every element is right, else what is wrong."""
    from examples.attention import attention_forward, wgmma_attention_launch
    from examples.attention.flash_attention import flash_attention

    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[elem]
    q, k, v = (randn(torch, batch, heads, seq, dim, dtype=dt) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((batch, heads, seq), float("nan"), device="cuda", dtype=torch.float32)
    s = 1.0 / math.sqrt(dim) if scale is None else scale
    if warps > 0:
        rows = 16 * warps
        flash_attention[((seq + rows - 1) // rows, batch * heads), 32 * warps](
            q.view(-1), k.view(-1), v.view(-1), batch * heads, seq, s, o.view(-1), lse.view(-1), dim, causal, warps)
    else:
        wgmma_attention_launch(q, k, v, o, lse, causal, s, pingpong=warps == -2)
    torch.cuda.synchronize()
    scores = (q.double() @ k.double().transpose(-1, -2)) * s
    if causal:
        scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    ref_lse = torch.logsumexp(scores, dim=-1)
    p = torch.exp(scores - ref_lse[..., None])
    ref, spread = p @ v.double(), p @ v.double().abs()
    err = (o.double() - ref).abs()
    bad = ~(err <= ULP[elem] * (ref.abs() + spread) + 1e-6)  # NaN (an element never written) is bad too
    if bool(bad.any()):
        return (f"o: {int(bad.sum())} of {bad.numel()} wrong, first at {tuple(int(i) for i in bad.nonzero()[0])}, "
                f"max error {err.max().item()}")
    lse_err = (lse.double() - ref_lse).abs()
    bad = ~(lse_err <= 1e-4 * (1.0 + ref_lse.abs()))
    if bool(bad.any()):
        return (f"lse: {int(bad.sum())} of {bad.numel()} wrong, first at {tuple(int(i) for i in bad.nonzero()[0])}, "
                f"max error {lse_err.max().item()}")
    if warps > 0:
        o2, lse2 = attention_forward(q, k, v, causal=causal, scale=scale, warps=warps, kernel="mma")  # the same kernel
    else:
        o2, lse2 = attention_forward(q, k, v, causal=causal, scale=scale, kernel="wgmma", pingpong=warps == -2)
    if not (torch.equal(o2, o) and torch.equal(lse2, lse)):
        return "attention_forward gave other results than the direct launch"
    return None


def child() -> None:
    import torch

    sys.path.insert(0, str(ROOT))
    print(json.dumps({"progress": "started"}), flush=True)
    hopper = torch.cuda.get_device_capability(0) == (9, 0)
    only = sys.argv[1] if len(sys.argv) > 1 else ""  # `python tests/test_attention_gpu.py wgmma`: those cases
    for name, *args in CASES:
        if only not in name:
            continue
        if args[-1] <= 0 and not hopper:
            print(json.dumps({"case": name, "skipped": "the wgmma kernel needs an sm_90 GPU (H100/H200)"}), flush=True)
            continue
        t0 = time.perf_counter()
        try:
            problem = run_case(torch, *args)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - reported to the parent as this case's failure
            problem = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"case": name, "problem": problem, "seconds": round(time.perf_counter() - t0, 3)}),
              flush=True)


# the parent: pytest --------------------------------------------------------------------------

torch: Any = pytest.importorskip("torch") if __name__ != "__main__" else None

pytestmark = [pytest.mark.gpu, devices.gpu_only("the attention examples use tensor cores (mma)")]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Any]:
    """Each case's outcome from one child process; ``"__incomplete__"`` says why cases are missing."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=LIMIT_S,
                              cwd=str(ROOT), env=env)
        out, err, why = proc.stdout, proc.stderr, f"the child exited with {proc.returncode}"
    except subprocess.TimeoutExpired as exc:
        def text(b: Any) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        out, err, why = text(exc.stdout), text(exc.stderr), f"the child ran past {LIMIT_S} s (a hang?)"
    results: dict[str, Any] = {}
    last = "none (it hung compiling or in the first case)"
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "case" in record:
                results[record["case"]] = record
                last = f"{record['case']} ({record.get('seconds', 0)} s)"
    results["__incomplete__"] = f"{why}; last case finished: {last}; stderr tail: {err[-1500:]}"
    return results


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_attention(outcomes: dict[str, Any], case: str) -> None:
    record = outcomes.get(case)
    assert record is not None, f"{case} did not finish: {outcomes['__incomplete__']}"
    if "skipped" in record:
        pytest.skip(record["skipped"])
    assert record["problem"] is None, f"{case}: {record['problem']}"


def test_attention_refuses_bad_arguments() -> None:
    import oxide

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from examples.attention import attention_forward
    from examples.attention.flash_attention import flash_attention

    q = randn(torch, 1, 2, 64, 64, dtype=torch.bfloat16)
    o = torch.full_like(q, float("nan"))
    lse = torch.empty((1, 2, 64), device="cuda", dtype=torch.float32)
    # launch preconditions: refused before anything runs
    with pytest.raises(oxide.KernelError, match="grid.dim.y == heads"):
        flash_attention[(1, 1), 128](q.view(-1), q.view(-1), q.view(-1), 2, 64, 0.125, o.view(-1), lse.view(-1),
                                     64, False, 4)
    with pytest.raises(oxide.KernelError, match="block.dim.x == 32 [*] WARPS"):
        flash_attention[(1, 2), 128](q.view(-1), q.view(-1), q.view(-1), 2, 64, 0.125, o.view(-1), lse.view(-1),
                                     64, False, 8)
    with pytest.raises(ValueError, match="head dim 96"):
        attention_forward(*(randn(torch, 1, 1, 8, 96, dtype=torch.bfloat16) for _ in range(3)))
    assert bool(o.isnan().all())


if __name__ == "__main__":
    child()
