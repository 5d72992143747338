"""oxide's CPU device against numba-cuda's CUDA simulator, on the same kernels, in the same run.

    python -m benchmarks.cpu_device [--runs 20] [--json FILE]

Four kernels, each written once for oxide (examples/saxpy.py, examples/sgemm.py,
benchmarks/cpu_device_kernels.py) and once for numba (below, the same algorithm):

- saxpy: one element per thread, no barrier;
- block_reduce: a 256-thread tree reduction in shared memory, ``block.sync()`` per step;
- warp_scan: an inclusive scan within each warp by five ``shfl_up`` (the simulator has no warp
  shuffles: its kernel does each step through shared memory and two barriers);
- sgemm: the 32x32-tiled shared-memory GEMM (blocks of 1024 threads, two barriers per tile).

The numba kernels are benchmarks/cpu_device_numba.py.

Each case is timed round-robin (oxide, then the simulator, then the next case, ``--runs`` times);
the figure is the median, as threads per second (grid x block over the launch's wall time: an
oxide launch runs to completion before it returns; the simulator's too). The grids differ, the
work of one thread does not: the simulator runs one Python thread per CUDA thread (about 3,000
threads/s for saxpy, issue 30), so it gets a few thousand threads, oxide millions (sgemm: the same
k for both, 256 x 256 outputs for oxide, one 32 x 32 block for the simulator). Both results are
checked against NumPy once.

Requires ``pip install numba-cuda``; sets ``NUMBA_ENABLE_CUDASIM=1`` itself, and
``oxide.runtime.set_device("cpu")``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

__all__ = ["Case", "cases", "main"]


@dataclass
class Case:
    name: str
    oxide_threads: int
    numba_threads: int
    run_oxide: Callable[[], None]
    run_numba: Callable[[], None]
    check: Callable[[], None]  # compares both results with NumPy (after one run of each)


def _warp_scan_reference(x: np.ndarray) -> np.ndarray:
    pad = -len(x) % 32
    return np.cumsum(np.pad(x.astype(np.float64), (0, pad)).reshape(-1, 32), axis=1).ravel()[: len(x)]


def cases(scale: float = 1.0) -> list[Case]:
    """The four cases, their inputs made and their kernels compiled (oxide's at a first launch,
    made here) on the CPU device."""
    import oxide.runtime

    oxide.runtime.set_device("cpu")
    from benchmarks.cpu_device_kernels import block_reduce, warp_scan
    from examples.saxpy import saxpy
    from examples.sgemm import sgemm

    from benchmarks.cpu_device_numba import block_reduce as nb_reduce
    from benchmarks.cpu_device_numba import saxpy as nb_saxpy
    from benchmarks.cpu_device_numba import sgemm as nb_sgemm
    from benchmarks.cpu_device_numba import warp_scan as nb_scan

    rng = np.random.default_rng(30)
    out: list[Case] = []

    def sized(n: int) -> int:
        return max(int(n * scale) // 256 * 256, 256)

    # saxpy
    n_ox, n_nb = sized(1 << 22), sized(2048)
    x, y = rng.standard_normal(n_ox).astype(np.float32), rng.standard_normal(n_ox).astype(np.float32)
    o_ox, o_nb = np.empty(n_ox, np.float32), np.empty(n_nb, np.float32)
    a = np.float32(1.5)
    out.append(Case(
        "saxpy", n_ox, n_nb,
        lambda: saxpy[n_ox // 256, 256](a, x, y, o_ox),
        lambda: nb_saxpy[n_nb // 256, 256](a, x[:n_nb], y[:n_nb], o_nb),
        lambda: (np.testing.assert_allclose(o_ox, a * x + y, rtol=1e-6, atol=1e-6),
                 np.testing.assert_allclose(o_nb, (a * x + y)[:n_nb], rtol=1e-6, atol=1e-6)),
    ))

    # block_reduce
    r_ox, r_nb = sized(1 << 20), sized(512)
    xr = rng.standard_normal(r_ox).astype(np.float32)
    p_ox, p_nb = np.empty(r_ox // 256, np.float32), np.empty(r_nb // 256, np.float32)
    ref_r = xr.astype(np.float64).reshape(-1, 256).sum(1)
    out.append(Case(
        "block_reduce (shared memory, barriers)", r_ox, r_nb,
        lambda: block_reduce[r_ox // 256, 256](xr, p_ox),
        lambda: nb_reduce[r_nb // 256, 256](xr[:r_nb], p_nb),
        lambda: (np.testing.assert_allclose(p_ox, ref_r, rtol=1e-4, atol=1e-3),
                 np.testing.assert_allclose(p_nb, ref_r[: len(p_nb)], rtol=1e-4, atol=1e-3)),
    ))

    # warp_scan
    s_ox, s_nb = sized(1 << 20), sized(1024)
    xs = rng.standard_normal(s_ox).astype(np.float32)
    q_ox, q_nb = np.empty(s_ox, np.float32), np.empty(s_nb, np.float32)
    ref_s = _warp_scan_reference(xs)
    out.append(Case(
        "warp_scan (shfl_up)", s_ox, s_nb,
        lambda: warp_scan[s_ox // 256, 256](xs, q_ox),
        lambda: nb_scan[s_nb // 256, 256](xs[:s_nb], q_nb),
        lambda: (np.testing.assert_allclose(q_ox, ref_s, rtol=1e-4, atol=1e-4),
                 np.testing.assert_allclose(q_nb, ref_s[:s_nb], rtol=1e-4, atol=1e-4)),
    ))

    # sgemm: the same k (the work of one thread: k multiply-adds, 2 * k / 32 barriers) for both; m = n
    # = 256 for oxide, one 32x32 block for the simulator
    k = max(int(256 * scale ** 0.5) // 32 * 32, 32)
    d_ox, d_nb = k, 32
    am = rng.standard_normal((d_ox, k)).astype(np.float32)
    bm = rng.standard_normal((k, d_ox)).astype(np.float32)
    an, bn = np.ascontiguousarray(am[:d_nb]), np.ascontiguousarray(bm[:, :d_nb])
    c_ox, c_nb = np.empty(d_ox * d_ox, np.float32), np.empty(d_nb * d_nb, np.float32)
    grid_ox, grid_nb = (d_ox // 32, d_ox // 32), (d_nb // 32, d_nb // 32)
    a_flat, b_flat, an_flat, bn_flat = am.ravel(), bm.ravel(), an.ravel(), bn.ravel()
    out.append(Case(
        f"sgemm (examples/sgemm.py, k={k})", d_ox * d_ox, d_nb * d_nb,
        lambda: sgemm[grid_ox, (32, 32)](a_flat, b_flat, d_ox, d_ox, k, c_ox),
        lambda: nb_sgemm[grid_nb, (32, 32)](an_flat, bn_flat, d_nb, d_nb, k, c_nb),
        lambda: (np.testing.assert_allclose(c_ox.reshape(d_ox, d_ox), am.astype(np.float64) @ bm, rtol=1e-3,
                                            atol=1e-3 * k ** 0.5),
                 np.testing.assert_allclose(c_nb.reshape(d_nb, d_nb), an.astype(np.float64) @ bn, rtol=1e-3,
                                            atol=1e-3 * k ** 0.5)),
    ))
    return out


def _timed(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each case (the median is reported)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every problem size by this")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    try:
        import numba.cuda  # noqa: F401
    except ImportError as e:
        print(f"numba-cuda is not importable ({e}): pip install numba-cuda", file=sys.stderr)
        return 2
    load_before = _load()
    all_cases = cases(args.scale)
    for case in all_cases:  # compile (oxide: the first launch) and check once
        case.run_oxide()
        case.run_numba()
        case.check()
    times: dict[str, tuple[list[float], list[float]]] = {c.name: ([], []) for c in all_cases}
    for _ in range(args.runs):
        for case in all_cases:
            times[case.name][0].append(_timed(case.run_oxide))
            times[case.name][1].append(_timed(case.run_numba))
    rows = []
    print(f"oxide CPU device vs numba-cuda simulator: median of {args.runs} round-robin runs; "
          f"{os.cpu_count()} cores, load {load_before} -> {_load()}, Python {platform.python_version()}")
    print(f"{'kernel':40} {'oxide thr':>10} {'oxide thr/s':>12} {'sim thr':>8} {'sim thr/s':>10} {'ratio':>9}")
    for case in all_cases:
        ox_t, nb_t = (statistics.median(v) for v in times[case.name])
        ox_rate, nb_rate = case.oxide_threads / ox_t, case.numba_threads / nb_t
        rows.append({"kernel": case.name, "oxide_threads": case.oxide_threads, "oxide_median_s": ox_t,
                     "oxide_threads_per_s": ox_rate, "numba_threads": case.numba_threads, "numba_median_s": nb_t,
                     "numba_threads_per_s": nb_rate, "ratio": ox_rate / nb_rate})
        print(f"{case.name:40} {case.oxide_threads:>10} {ox_rate:>12.3g} {case.numba_threads:>8} {nb_rate:>10.3g} "
              f"{ox_rate / nb_rate:>8.0f}x")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": args.runs, "cores": os.cpu_count(), "load": load_before,
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
