"""benchmarks/compile_cpu_time.py, the CPU-time compile figure of issue 28 item 6, on a small
module: it compiles, counts the kernels and reports a positive time."""
from __future__ import annotations

from pathlib import Path

from benchmarks.compile_cpu_time import compile_cpu_ms
from benchmarks.import_time import kernel_package_source


def test_compile_cpu_ms_of_a_small_module(tmp_path: Path) -> None:
    src = tmp_path / "oxsmall.py"
    src.write_text(kernel_package_source(3))
    ms, kernels = compile_cpu_ms(src, "oxsmall", tmp_path, runs=1)
    assert kernels == 3
    assert 0.0 < ms < 60_000.0


def test_scaling_reports_each_size_and_the_per_kernel_ratio() -> None:
    from benchmarks.compile_cpu_time import scaling

    out = scaling([2, 4])
    assert [s["kernels"] for s in out["sizes"].values()] == [2, 4]
    assert out["per_kernel_ratio"] > 0.0
