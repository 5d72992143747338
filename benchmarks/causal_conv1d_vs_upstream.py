"""examples/causal_conv1d (oxide) against upstream Dao-AILab/causal-conv1d built from source
(benchmarks/causal_conv1d_upstream_build.py), on one GPU: the forward and backward entry
points (``cpp_functions.causal_conv1d_fwd_function`` / ``_bwd_function``, the same signature in
both) and the update, at the issue's shapes (b4, d 2048/4096, l 2048/4096/8192, width 4, bf16
and fp16, channel-first and channel-last, SiLU and bias) and at launch-bound shapes.

Each figure is the median of ``--reps`` (default 30) timings by CUDA events, each around
``--calls`` (default 10) back-to-back calls and divided by them, after warm-up, the contenders
taken in turn (round-robin) for every repetition, the GPU idle at each start: where the host is
slower than the GPU (launch-bound shapes) the figure is the host time of a call, elsewhere the
GPU's. Before timing, every shape's outputs are compared with upstream's.

    python benchmarks/causal_conv1d.py UPSTREAM_DIR BUILD_DIR [--json out.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import types
from pathlib import Path
from typing import Any, Callable

import torch

__all__ = ["load_upstream", "main"]


def load_upstream(upstream: Path, build_dir: Path) -> types.ModuleType:
    """Upstream's cpp_functions module, under another name (ours is ``causal_conv1d``)."""
    sys.path.insert(0, str(build_dir))
    import causal_conv1d_cuda  # noqa: F401  (the extension the build made)
    spec = importlib.util.spec_from_file_location("upstream_causal_conv1d_cpp",
                                                  upstream / "causal_conv1d" / "cpp_functions.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["upstream_causal_conv1d_cpp"] = mod
    spec.loader.exec_module(mod)
    return mod


CALLS = 10


def _time(fns: dict[str, Callable[[], Any]], reps: int, warmup: int = 5) -> dict[str, float]:
    for f in fns.values():
        for _ in range(warmup):
            f()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for name, f in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(CALLS):
                f()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1000.0 / CALLS)
    return {k: statistics.median(v) for k, v in times.items()}


def _inputs(b: int, d: int, l: int, w: int, dtype: torch.dtype, channel_last: bool) -> tuple[torch.Tensor, ...]:
    g = torch.Generator(device="cuda").manual_seed(0)
    if channel_last:
        x = torch.randn(b, l, d, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        dout = torch.randn(b, l, d, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
    else:
        x = torch.randn(b, d, l, device="cuda", dtype=dtype, generator=g)
        dout = torch.randn(b, d, l, device="cuda", dtype=dtype, generator=g)
    weight = torch.randn(d, w, device="cuda", dtype=torch.float32, generator=g)
    bias = torch.randn(d, device="cuda", dtype=torch.float32, generator=g)
    return x, weight, bias, dout


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    tol = 5e-2 if a.dtype == torch.bfloat16 else 5e-3
    if not torch.allclose(a.float(), b.float(), rtol=tol, atol=tol):
        raise AssertionError(f"{what}: oxide and upstream differ by {(a.float() - b.float()).abs().max().item()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("upstream", type=Path)
    ap.add_argument("build_dir", type=Path)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    global CALLS
    CALLS = a.calls
    from oxide.runtime import launcher
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, oxide's C launcher: {launcher.ENABLED}")
    up = load_upstream(a.upstream, a.build_dir)
    from causal_conv1d import cpp_functions as ours

    rows: list[dict[str, Any]] = []
    mismatches: list[str] = []
    shapes = [(4, d, l) for d in (2048, 4096) for l in (2048, 4096, 8192)]
    launch_bound = [(1, 64, 16), (1, 64, 128), (2, 256, 64)]
    for dtype in (torch.bfloat16, torch.float16):
        for channel_last in (False, True):
            for (b, d, l) in launch_bound + shapes:
                x, weight, bias, dout = _inputs(b, d, l, 4, dtype, channel_last)
                fwd = {
                    "oxide": lambda: ours.causal_conv1d_fwd_function(x, weight, bias, None, None, None, True),
                    "upstream": lambda: up.causal_conv1d_fwd_function(x, weight, bias, None, None, None, True),
                }
                bwd = {
                    "oxide": lambda: ours.causal_conv1d_bwd_function(x, weight, bias, dout, None, None, None, None,
                                                                     False, True),
                    "upstream": lambda: up.causal_conv1d_bwd_function(x, weight, bias, dout, None, None, None, None,
                                                                      False, True),
                }
                where = f"b{b} d{d} l{l} {str(dtype)[6:]} {'channel-last' if channel_last else 'channel-first'}"
                o, u = fwd["oxide"](), fwd["upstream"]()
                ob, ub = bwd["oxide"](), bwd["upstream"]()
                try:
                    _close(o, u, f"fwd {where}")
                    assert o.stride() == u.stride(), (where, o.stride(), u.stride())
                    for k, name in enumerate(("dx", "dweight", "dbias")):
                        _close(ob[k], ub[k], f"bwd {name} {where}")
                except AssertionError as e:  # the other shapes are still timed; the run fails at the end
                    mismatches.append(str(e))
                    print(f"MISMATCH {e}", flush=True)
                again = bwd["oxide"]()
                deterministic = all(torch.equal(p, q) for p, q in zip(ob[:3], again[:3]))
                tf = _time(fwd, a.reps)
                tb = _time(bwd, a.reps)
                os.environ["CAUSAL_CONV1D_DETERMINISTIC"] = "1"
                tbd = _time({"upstream": bwd["upstream"]}, a.reps)
                del os.environ["CAUSAL_CONV1D_DETERMINISTIC"]
                row = {"shape": where, "fwd_oxide_us": tf["oxide"], "fwd_upstream_us": tf["upstream"],
                       "bwd_oxide_us": tb["oxide"], "bwd_upstream_us": tb["upstream"],
                       "bwd_upstream_deterministic_us": tbd["upstream"], "oxide_bwd_deterministic": deterministic}
                rows.append(row)
                print(f"{where:40s} fwd {tf['oxide']:8.1f} vs {tf['upstream']:8.1f} us ({tf['upstream'] / tf['oxide']:.3f}x)"
                      f"  bwd {tb['oxide']:8.1f} vs {tb['upstream']:8.1f} us ({tb['upstream'] / tb['oxide']:.3f}x)"
                      f"  [upstream det. {tbd['upstream']:.1f}; ours det.: {deterministic}]", flush=True)
    for (b, d, state_len) in ((1, 64, 4), (64, 2048, 4), (64, 4096, 8)):
        for dtype in (torch.bfloat16,):
            x = torch.randn(b, d, device="cuda", dtype=dtype)
            weight = torch.randn(d, 4, device="cuda")
            bias = torch.randn(d, device="cuda")
            s1 = torch.randn(b, d, state_len, device="cuda", dtype=dtype)
            s2 = s1.clone()
            xs = x.unsqueeze(-1)
            o = ours.causal_conv1d_update_function(xs, s1, weight, bias, True, None, None)
            u = up.causal_conv1d_update_function(xs, s2, weight, bias, True, None, None)
            _close(o, u, f"update b{b} d{d}")
            assert torch.equal(s1, s2)
            t = _time({"oxide": lambda: ours.causal_conv1d_update_function(xs, s1, weight, bias, True, None, None),
                       "upstream": lambda: up.causal_conv1d_update_function(xs, s2, weight, bias, True, None, None)},
                      a.reps)
            where = f"update b{b} d{d} state{state_len} {str(dtype)[6:]}"
            rows.append({"shape": where, "update_oxide_us": t["oxide"], "update_upstream_us": t["upstream"]})
            print(f"{where:40s} {t['oxide']:8.1f} vs {t['upstream']:8.1f} us ({t['upstream'] / t['oxide']:.3f}x)",
                  flush=True)
    if a.json:
        a.json.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                      "rows": rows, "mismatches": mismatches}, indent=1))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
