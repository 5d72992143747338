"""benchmarks/cpu_device.py at a tiny size, one run: both sides' results checked against NumPy
(the script checks them before timing), four rows of figures written (skipped without
numba-cuda, which the test extra does not install, or without a working CPU device)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import devices

REPO = Path(__file__).resolve().parent.parent


def test_the_cpu_device_benchmark_runs_and_checks_both_sides(tmp_path: Path) -> None:
    pytest.importorskip("numba.cuda")
    problem = devices.cpu_device_problem()
    if problem is not None:
        pytest.skip(problem)
    out = tmp_path / "figures.json"
    result = subprocess.run([sys.executable, "-m", "benchmarks.cpu_device", "--runs", "1", "--scale", "0.01", "--json",
                             str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["kernel"].split()[0] for r in rows] == ["saxpy", "block_reduce", "warp_scan", "sgemm"]
    assert all(r["oxide_threads_per_s"] > 0 and r["numba_threads_per_s"] > 0 and r["ratio"] > 0 for r in rows)
