"""``OXIDE_DEVICE=cpu python -m sample`` from the source tree (no build, no GPU): the table on
oxide's CPU device, every row checked against NumPy by sample itself; the only rows allowed to be
skipped are those whose kernels call CUDA C++ or launch from C++ host code, each saying so."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "sample_project"


def test_python_m_sample_runs_on_the_cpu_device(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    env = {**os.environ, "OXIDE_DEVICE": "cpu", "PYTHONPATH": os.pathsep.join([str(SAMPLE), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "sample"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["op", "array", "size", "time", "max", "error", "ok"]
    assert lines[-1] == "OK"
    rows = lines[1:-1]
    libraries = {row.split()[1] if not row.startswith("gelu [") else row.split()[2] for row in rows}
    assert {"oxide", "numpy"} <= libraries  # DeviceArrays in host memory, and NumPy arrays
    for row in rows:
        if "skipped" in row:
            assert ("CUDA C++" in row or "C++ host code" in row or "sample._native is not built" in row), row
        else:
            assert " yes" in row, row
    ran = {row.split()[0] for row in rows if " yes" in row}
    assert {"histogram", "blur", "saxpy"} <= ran, rows  # the kernels that call no C++ run
