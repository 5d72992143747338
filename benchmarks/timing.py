"""Timing: CUDA events around each run, after warm-up; the median and the spread of the runs.

Each timed run is preceded by a short GPU sleep (``torch.cuda._sleep``) on the same stream, so
that the host has queued the whole run before the GPU reaches the start event. Without it an
idle GPU would record the start event at once and then wait for the host to finish packing the
launch: host overhead (90 µs a launch for numba-cuda) would leak into device times, and more so
for a multi-launch algorithm like the scan. Host overhead is measured on its own
(``benchmarks.launch_overhead``).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

__all__ = ["Stats", "summarize", "percentile", "GpuTimer", "time_cpu"]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already sorted values, linearly interpolated."""
    if not sorted_values:
        raise ValueError("no values")
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return float(sorted_values[lo] * (1 - frac) + sorted_values[hi] * frac)


@dataclass(frozen=True)
class Stats:
    """Times of repeated runs, in milliseconds."""

    median_ms: float
    min_ms: float
    p10_ms: float
    p90_ms: float
    q1_ms: float
    q3_ms: float
    max_ms: float
    runs: int

    @property
    def spread_pct(self) -> float:
        """Half the p10–p90 range, relative to the median, in percent."""
        if self.median_ms <= 0:
            return 0.0
        return 100.0 * (self.p90_ms - self.p10_ms) / 2.0 / self.median_ms

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["spread_pct"] = round(self.spread_pct, 3)
        return d

    def render(self, unit: str = "ms") -> str:
        """``1.234 ms ±0.5%`` (± half the p10–p90 range)."""
        scale = {"ms": 1.0, "us": 1e3, "s": 1e-3}[unit]
        v = self.median_ms * scale
        digits = 3 if v < 10 else (2 if v < 100 else 1)
        return f"{v:.{digits}f} {unit} ±{self.spread_pct:.1f}%"


def summarize(samples_ms: Sequence[float]) -> Stats:
    values = sorted(float(s) for s in samples_ms)
    if not values:
        raise ValueError("no samples to summarize")
    return Stats(
        median_ms=percentile(values, 50),
        min_ms=values[0],
        p10_ms=percentile(values, 10),
        p90_ms=percentile(values, 90),
        q1_ms=percentile(values, 25),
        q3_ms=percentile(values, 75),
        max_ms=values[-1],
        runs=len(values),
    )


def time_cpu(fn: Callable[[], Any], runs: int, warmup: int = 1) -> tuple[Stats, list[float]]:
    """Wall time of ``fn`` (no GPU), ``warmup`` runs discarded."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return summarize(samples), samples


class GpuTimer:
    """Times GPU work with ``torch.cuda.Event`` pairs on torch's current stream.

    Every implementation launches on the legacy default stream (torch's, CuPy's, numba's and
    oxide's default), so the events order with the kernels.
    """

    def __init__(self, torch: Any, warmup: int = 3) -> None:
        self.torch = torch
        self.warmup = warmup
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_ms = self._calibrate() if self._sleep is not None else 0.0

    def _calibrate(self) -> float:
        torch = self.torch
        assert self._sleep is not None
        cycles = 2_000_000
        self._sleep(cycles)  # warm
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self._sleep(cycles)
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        return cycles / ms if ms > 0 else 1.5e6

    def time(self, fn: Callable[[], Any], runs: int) -> Stats:
        """Median of ``runs`` event-timed calls of ``fn`` after ``self.warmup`` untimed ones."""
        return self.time_round_robin({"": fn}, runs)[""]

    def time_round_robin(self, fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, Stats]:
        """Each of ``fns`` timed ``runs`` times, taking turns (run r of every contender before
        run r + 1 of any), so clock and thermal drift hit all alike; medians per name."""
        torch = self.torch
        host_ms = 0.0
        for fn in fns.values():
            for k in range(self.warmup):
                t0 = time.perf_counter()
                fn()
                if k > 0:
                    host_ms = max(host_ms, (time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        # cover the host's enqueue time of one run, with a margin; at most 20 ms of sleep
        sleep_cycles = int(min(20.0, 0.05 + 3.0 * host_ms) * self.cycles_per_ms)
        events = {name: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                         for _ in range(runs)] for name in fns}
        for r in range(runs):
            for name, fn in fns.items():
                start, end = events[name][r]
                if self._sleep is not None and sleep_cycles > 0:
                    self._sleep(sleep_cycles)
                start.record()
                fn()
                end.record()
        torch.cuda.synchronize()
        return {name: summarize([s.elapsed_time(e) for s, e in pairs]) for name, pairs in events.items()}
