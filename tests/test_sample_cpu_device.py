"""``OXIDE_DEVICE=cpu python -m sample`` from the source tree (no build, no GPU): the table on
oxide's CPU device, every row checked against NumPy by sample itself; the only row allowed to be
skipped is the one launched from C++ host code (the pybind11 module), saying so: the kernels that
call CUDA C++ (CUB, cuRAND, a fast tanh) and the C++ kernel run their Python implementations
(``cpu=``). And the CPU dropout's draws are cuRAND's: Philox4x32-10, checked against its
known-answer vectors through a NumPy reference."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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
            assert row.startswith("gelu [native]"), row
            assert "C++ host code" in row or "sample._native is not built" in row, row
        else:
            assert " yes" in row, row
    ran = {" ".join(row.split()[:2]) if row.startswith("gelu [") else row.split()[0] for row in rows if " yes" in row}
    assert {"gelu [python]", "gelu [cpp]", "softmax", "histogram", "dropout", "blur", "saxpy"} <= ran, rows


PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox4x32_10(counter: tuple[np.ndarray, ...], key: tuple[int, int]) -> list[np.ndarray]:
    """Philox4x32-10 (Salmon et al., SC'11) in NumPy, over arrays of counters."""
    c = [np.asarray(v, np.uint64) & 0xFFFFFFFF for v in counter]
    k = [np.uint64(key[0]), np.uint64(key[1])]
    for _ in range(10):
        p0, p1 = np.uint64(PHILOX_M[0]) * c[0], np.uint64(PHILOX_M[1]) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k[0], p1 & np.uint64(0xFFFFFFFF), (p0 >> np.uint64(32)) ^ c[3] ^ k[1],
             p0 & np.uint64(0xFFFFFFFF)]
        k = [(k[0] + np.uint64(PHILOX_W[0])) & np.uint64(0xFFFFFFFF), (k[1] + np.uint64(PHILOX_W[1])) & np.uint64(0xFFFFFFFF)]
    return c


def test_the_reference_philox_gives_the_known_answers() -> None:
    """Random123's known-answer vectors for philox4x32-10 (counter, key -> output)."""
    zero = philox4x32_10((np.zeros(1),) * 4, (0, 0))
    assert [int(v[0]) for v in zero] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = philox4x32_10((np.full(1, 0xFFFFFFFF),) * 4, (0xFFFFFFFF, 0xFFFFFFFF))
    assert [int(v[0]) for v in ones] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def test_the_cpu_dropout_draws_are_curands(tmp_path: Path) -> None:
    """dropout_forward on the CPU device keeps element i exactly where cuRAND's curand_uniform after
    curand_init(seed, i, 0) is at least p: the first Philox4x32-10 output for counter (0, 0, i) and
    key seed, as x * 2^-32 + 2^-33 rounded once (an fma, as nvcc compiles it). Two thresholds are
    the reference's own draws: those are checked to the bit, every other draw against them."""
    pytest.importorskip("llvmlite")
    from oxide_build.cpu_engine import compile_module_for_cpu

    m = compile_module_for_cpu(SAMPLE / "sample" / "kernels.py", "sample.kernels", SAMPLE)
    spec = next(k for k in m.kernels if k.name == "dropout_forward")
    n = 4099
    i = np.arange(n, dtype=np.uint64)
    for seed in (0, 1234, 0xDEADBEEF12345678):
        x0 = philox4x32_10((np.zeros(n), np.zeros(n), i & np.uint64(0xFFFFFFFF), i >> np.uint64(32)),
                           (seed & 0xFFFFFFFF, seed >> 32))[0]
        scale = np.float32(2.0**-32 - 2.0**-57)  # CURAND_2POW32_INV: 2.3283064e-10f
        draws = (x0.astype(np.float32).astype(np.float64) * np.float64(scale) + np.float64(scale) / 2).astype(np.float32)
        x = np.ones(n, np.float32)
        for p in (draws[17], draws[1000], np.float32(0.5)):
            out = np.full(n, np.nan, np.float32)
            one = int(np.array(1.0, np.float32).view(np.uint32))
            values = [x.ctypes.data, n, int(np.array(p, np.float32).view(np.uint32)), one, seed, out.ctypes.data, n]
            m.function(spec.symbol).launch((17, 1, 1), (256, 1, 1), 0,
                                           values if spec.param_slots is None else [values[s] for s in spec.param_slots])
            np.testing.assert_array_equal(out != 0, draws >= p)
