"""The CPU device's sanitizers end to end: OXIDE_SANITIZE read by the runtime's CPU device, a
race found at the launch from Python (the message names the kernel, both threads, both
file:lines) and its corrected kernel clean; and a sweep of the gpu tests of the examples and test
packages that exercise the patterns a sanitizer could mistake for bugs (block reductions with
barriers, warp shuffles and scans, atomics histograms, the threadfence last-block reduction, grid
barriers, module arrays, every example), run on the CPU device with all four sanitizers on: no
false report."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from devices import compiled_package, cpu_device_problem, gpu_available
from oxide.errors import MemcheckError, RacecheckError

ROOT = Path(__file__).resolve().parent.parent
ALL = "memcheck,racecheck,initcheck,synccheck"

# gpu tests that run on the CPU device (tests/devices.py): every example, and the test packages'
# reductions, scans, histograms, grid barriers, fences and module memory
SWEEP = [
    "tests/test_examples_gpu.py",
    "tests/test_cuda_patterns_gpu.py",
    "tests/test_atomics_gpu.py",
    "tests/test_lang_memory_gpu.py",
    *(f"tests/test_ports_gpu.py::{name}" for name in (
        "test_reduce6", "test_grid_sync_reduce", "test_softmax_rows", "test_histogram64", "test_histogram256",
        "test_shfl_scan", "test_scan_blelloch", "test_block_scan", "test_radix_histogram")),
]

RACY = '''\
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def neighbours(x: Slice[f32], out: MutSlice[f32], sync: i32) -> None:
    s = ox.shared.array(128, f32)
    t = thread.idx.x
    if t < len(x):
        s[t] = x[t]
    if sync == 1:
        block.sync()
    if t > 0 and t < len(out):
        with ox.unsafe():
            out[t] = s[t - 1]
'''


def _cpu_device_or_skip() -> None:
    problem = cpu_device_problem()
    if problem is not None:
        pytest.skip(f"the CPU device cannot run here: {problem}")


@pytest.fixture
def on_cpu_device(monkeypatch: pytest.MonkeyPatch) -> Any:
    _cpu_device_or_skip()
    import oxide.runtime
    from oxide.runtime import cpu_driver, device_choice

    monkeypatch.setattr(cpu_driver, "_sanitize", [])  # read again from the environment
    monkeypatch.setenv("OXIDE_SANITIZE", ALL)
    previous = "cpu" if device_choice.ON_CPU else "cuda"
    oxide.runtime.set_device("cpu")
    yield
    oxide.runtime.set_device(previous)


def test_oxide_sanitize_finds_a_race_at_the_launch(tmp_path: Path, on_cpu_device: Any) -> None:
    source = tmp_path / "racy.py"
    source.write_text(RACY)
    m = compiled_package([source], "sanracy", tmp_path)
    x = np.random.default_rng(7).standard_normal(128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    with pytest.raises(RacecheckError) as e:
        m.neighbours[1, 128](x, out, 0)
    msg = str(e.value)
    assert "a race on shared memory in kernel neighbours" in msg
    assert "thread (1, 0, 0)" in msg and "thread (0, 0, 0)" in msg
    assert "racy.py:10:" in msg and "racy.py:15:" in msg  # the write and the read it races with
    m.neighbours[1, 128](x, out, 1)
    np.testing.assert_array_equal(out[1:], x[:-1])


RELAY = '''\
import oxide as ox
from oxide import MutSlice, f64, i64, thread, u32


@ox.kernel
def relay(values: MutSlice[f64], flags: MutSlice[u32], counter: MutSlice[u32], ordered: bool) -> None:
    if thread.idx.x == 0:
        k = i64(ox.atomic.add(counter, 0, u32(1)))
        prev = f64(0.0)
        if k > 0:
            if ordered:
                while ox.atomic.load(flags, k - 1, order="acquire") == u32(0):
                    pass
            else:
                while ox.atomic.load(flags, k - 1, order="relaxed") == u32(0):
                    pass
            prev = values[k - 1]
        with ox.unsafe():
            values[k] = prev + f64(k)
        if ordered:
            ox.atomic.store(flags, k, u32(1), order="release")
        else:
            ox.atomic.store(flags, k, u32(1), order="relaxed")
'''


def test_racecheck_orders_blocks_by_acquire_and_release(tmp_path: Path, on_cpu_device: Any) -> None:
    """Plain data handed from block to block behind a flag: no race with a release store and an
    acquire load of the flag (``ox.atomic.store/load(order=...)``), a race with relaxed ones."""
    source = tmp_path / "relay.py"
    source.write_text(RELAY)
    m = compiled_package([source], "sanrelay", tmp_path)
    for blocks in (2, 5):
        values = np.full(blocks, np.nan)
        m.relay[blocks, 32](values, np.zeros(blocks, np.uint32), np.zeros(1, np.uint32), True)
        np.testing.assert_array_equal(values, np.cumsum(np.arange(blocks, dtype=np.float64)))
    with pytest.raises(RacecheckError, match=r"a race on global memory in kernel relay.*relay\.py:\d+"):
        m.relay[2, 32](np.full(2, np.nan), np.zeros(2, np.uint32), np.zeros(1, np.uint32), False)


def test_gpu_tests_pass_under_every_sanitizer() -> None:
    if gpu_available():
        pytest.skip("this machine runs the gpu tests on its GPU; the sweep is for the CPU device")
    _cpu_device_or_skip()
    env = dict(os.environ, OXIDE_SANITIZE=ALL, OXIDE_DEVICE="cpu")
    run = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", *SWEEP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and " failed" not in run.stdout and " error" not in run.stdout, tail
    passed = int(run.stdout.rsplit(" passed", 1)[0].split()[-1])
    assert passed >= 60, tail


LOCAL = '''\
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel(bounds_check=False)
def window(x: Slice[f32], out: DisjointSlice[f32], width: i32) -> None:
    i = thread.index_1d()
    acc = ox.local.array(8, f32)
    for k in range(width):
        acc[k] = x[(i + k) % len(x)]
    s: f32 = 0.0
    for k in range(8):
        s += acc[k]
    if i < len(out):
        out[i] = s
'''


def test_memcheck_of_a_local_array_at_a_run_time_index(tmp_path: Path) -> None:
    _cpu_device_or_skip()
    from oxide_build.cpu_engine import compile_module_for_cpu

    path = tmp_path / "localk.py"
    path.write_text(LOCAL)
    m = compile_module_for_cpu(path, "localk", tmp_path)
    spec = m.kernels[0]
    x = np.random.default_rng(8).standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    every = [x.ctypes.data, 64, out.ctypes.data, 64]
    m.function(spec.symbol).launch((1, 1, 1), (64, 1, 1), 0, [*every, 8], frozenset({"memcheck"}))
    expected = np.array([sum(x[(i + k) % 64] for k in range(8)) for i in range(64)], np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    with pytest.raises(MemcheckError) as e:
        m.function(spec.symbol).launch((1, 1, 1), (64, 1, 1), 0, [*every, 9], frozenset({"memcheck"}))
    msg = str(e.value)
    assert "memcheck: in kernel window, block (0, 0, 0), thread (0, 0, 0)" in msg
    assert "byte 32 of a local array of 32 bytes" in msg and "localk.py:10:" in msg
