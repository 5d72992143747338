"""The benchmark harness on the CPU: its command line, the report rendering, the compile-time
figure, and that the GPU modules import (and then say clearly what is missing) without a GPU."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import report, runner  # noqa: E402
from benchmarks.timing import summarize  # noqa: E402


# ---- command line ----------------------------------------------------------------------------------

def test_defaults_select_everything() -> None:
    opts = runner.parse_args([])
    assert opts.selected == runner.ALL_BENCHMARKS
    assert opts.out == Path("bench_out") and not opts.quick and opts.runs == 50 and opts.restrict


def test_only_splits_commas_and_repeats_and_expands_groups() -> None:
    opts = runner.parse_args(["--only", "saxpy,sgemm", "--only", "compile", "--quick", "--out", "x"])
    assert opts.selected == ("saxpy", "sgemm", "compile")
    assert opts.quick and opts.runs == 20 and opts.out == Path("x")
    assert runner.parse_args(["--only", "kernels"]).selected == runner.KERNELS


def test_unknown_name_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        runner.parse_args(["--only", "saxpi"])
    assert "unknown benchmark 'saxpi'" in capsys.readouterr().err


def test_cpu_only_keeps_the_cpu_benchmarks(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.parse_args(["--cpu-only"]).selected == runner.CPU_BENCHMARKS
    assert runner.parse_args(["--cpu-only", "--only", "compile,saxpy"]).selected == ("compile",)
    with pytest.raises(SystemExit):
        runner.parse_args(["--cpu-only", "--only", "saxpy"])


# ---- statistics -------------------------------------------------------------------------------------

def test_summarize_median_and_spread() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median_ms, s.min_ms, s.max_ms, s.runs) == (3.0, 1.0, 5.0, 5)
    assert s.p10_ms == pytest.approx(1.4) and s.p90_ms == pytest.approx(4.6)
    assert s.spread_pct == pytest.approx(100 * (4.6 - 1.4) / 2 / 3.0)
    assert s.render().startswith("3.000 ms ±")


# ---- report -----------------------------------------------------------------------------------------

def _fake_results() -> dict:
    from benchmarks.gpu_suite import finalize_record

    ceilings = {"copy_gbps": 4000.0, "cublas_tflops": 50.0}

    def impl(ms: float, tp: float) -> dict:
        return {"status": "ok", "median_ms": ms, "min_ms": ms * 0.99, "p10_ms": ms * 0.995, "p90_ms": ms * 1.01,
                "spread_pct": 0.75, "runs": 50, "throughput": tp}

    saxpy = {"name": "saxpy", "size": "2^28 f32", "metric": "GB/s", "ceiling_key": "copy_gbps", "notes": [],
             "impls": {"oxide": impl(1.0, 3200.0), "oxide_unchecked": impl(0.99, 3232.0),
                       "cuda": impl(0.97, 3300.0), "numba": {"status": "skipped", "reason": "numba-cuda is not importable"}},
             "status": "ok"}
    sgemm = {"name": "sgemm", "size": "4096³ f32", "metric": "TFLOP/s", "ceiling_key": "cublas_tflops", "notes": [],
             "impls": {"oxide": impl(20.0, 6.9), "cuda": impl(20.0, 6.8), "numba": impl(25.0, 5.5)}, "status": "ok"}
    return {
        "meta": {"date": "2026-11-29 12:00 UTC", "gpu": "NVIDIA H200", "arch": "sm_90", "driver": "580.1 (CUDA 13.0)",
                 "commit": "abc1234", "quick": False, "runs": 50},
        "ceilings": {"copy": {"status": "ok", "gbps": 4000.0}, "cublas": {"status": "ok", "tflops": 50.0}},
        "kernels": [finalize_record(saxpy, ceilings), finalize_record(sgemm, ceilings)],
        "cold_start": [{"name": "oxide (precompiled cubin)", "status": "ok", "import_ms": 10.0, "init_ms": 150.0,
                        "first_launch_ms": 5.0, "import_plus_launch_ms": 15.0, "process_wall_ms": 300.0,
                        "target_ms": 50.0, "met": True}],
        "launch_overhead": [{"name": "oxide torch 4 params", "median_us": 3.9, "ratio_to_floor": 1.25, "met": True}],
        "compile": [{"name": "compile sgemm", "example": "sgemm", "status": "ok", "median_ms": 80.0, "spread_pct": 2.0,
                     "entry_points": 1, "per_kernel_ms": 80.0, "target_ms": 50.0, "met": False}],
        "build": [{"name": "sample wheel build (full)", "status": "ok", "median_ms": 2000.0, "runs_ms": [2000.0, 2100.0]}],
    }


def test_finalize_compares_the_lookback_scan_with_torch_cumsum() -> None:
    """The scan record's single-pass contender against torch.cumsum: a ratio and a ≥ 1 target;
    no ratio (and an unknown verdict) when either failed."""
    from benchmarks.gpu_suite import finalize_record

    ok = {"status": "ok", "median_ms": 0.3, "throughput": 2400.0}
    scan = {"name": "scan", "metric": "GB/s", "ceiling_key": "copy_gbps", "notes": [],
            "impls": {"oxide": dict(ok, throughput=900.0), "oxide_lookback": ok,
                      "torch_cumsum": dict(ok, throughput=2480.0)}}
    rec = finalize_record(scan, {"copy_gbps": 4000.0})
    assert rec["ratio_lookback_torch"] == pytest.approx(2400 / 2480)
    assert rec["targets"]["ratio_lookback_torch"]["met"] is False
    scan["impls"]["torch_cumsum"] = {"status": "error", "error": "boom"}
    rec = finalize_record(scan, {"copy_gbps": 4000.0})
    assert rec["ratio_lookback_torch"] is None and rec["targets"]["ratio_lookback_torch"]["met"] is None
    saxpy = finalize_record(_fake_results()["kernels"][0], {})
    assert "ratio_lookback_torch" not in saxpy and "ratio_lookback_torch" not in saxpy["targets"]


def test_finalize_computes_ratios_and_verdicts() -> None:
    res = _fake_results()
    saxpy, sgemm = res["kernels"]
    assert saxpy["ratio_cuda"] == pytest.approx(3200 / 3300)
    assert saxpy["ratio_numba"] is None
    assert saxpy["fraction_of_ceiling"] == pytest.approx(0.8)
    assert saxpy["targets"]["ratio_cuda"]["met"] is False
    assert saxpy["targets"]["ratio_checked_unchecked"]["met"] is True
    assert sgemm["targets"]["ratio_cuda"]["met"] is True and sgemm["ratio_numba"] == pytest.approx(6.9 / 5.5)


def test_markdown_has_meta_tables_and_why_placeholders() -> None:
    md = report.render_markdown(_fake_results())
    assert md.startswith(report.BEGIN_MARKER) and md.rstrip().endswith(report.END_MARKER)
    assert "NVIDIA H200" in md and "580.1 (CUDA 13.0)" in md and "abc1234" in md
    saxpy_row = next(line for line in md.splitlines() if line.startswith("| saxpy |"))
    assert "0.970×" in saxpy_row and "80.0%" in saxpy_row and report.WHY_PLACEHOLDER in saxpy_row
    sgemm_row = next(line for line in md.splitlines() if line.startswith("| sgemm |"))
    assert report.WHY_PLACEHOLDER not in sgemm_row  # met its target
    assert "| saxpy: checked / unchecked |" in md
    compile_row = next(line for line in md.splitlines() if line.startswith("| sgemm | 1 |"))
    assert report.WHY_PLACEHOLDER in compile_row
    assert "numba: skipped (numba-cuda is not importable)" in md


def test_update_markdown_keeps_filled_whys(tmp_path: Path) -> None:
    res = _fake_results()
    doc = "# Benchmarks\n\nintro\n\n" + report.BEGIN_MARKER + "\nold\n" + report.END_MARKER + "\n\ntail\n"
    once = report.update_markdown(doc, res)
    assert once.startswith("# Benchmarks\n\nintro") and once.rstrip().endswith("tail") and "\nold\n" not in once
    filled = once.replace(
        next(line for line in once.splitlines() if line.startswith("| saxpy |")),
        next(line for line in once.splitlines() if line.startswith("| saxpy |")).replace(
            report.WHY_PLACEHOLDER, "NVRTC unrolls the loop 4×"),
    )
    twice = report.update_markdown(filled, res)
    assert "NVRTC unrolls the loop 4×" in twice and twice.count(report.BEGIN_MARKER) == 1
    path = tmp_path / "results.json"
    path.write_text(json.dumps(res))
    md = tmp_path / "B.md"
    md.write_text(doc)
    assert report.main([str(path), "--write", str(md)]) == 0
    assert "| saxpy |" in md.read_text()
    text = report.render_text(res)
    assert "saxpy" in text and "Why" not in text


def test_library_contender_ratio_target_and_table() -> None:
    """A record with a ``library`` contender (issue 28 item 4): the ratio of ``oxide_fast`` (or
    ``oxide`` where there is no fast kernel) to it, the target for saxpy and softmax only, and
    the report's table of them."""
    from benchmarks.gpu_suite import LIBRARY_TARGETS, finalize_record

    def impl(ms: float, tp: float, note: str = "") -> dict:
        e = {"status": "ok", "median_ms": ms, "min_ms": ms, "p10_ms": ms, "p90_ms": ms, "spread_pct": 0.5,
             "runs": 50, "throughput": tp}
        return {**e, "note": note} if note else e

    ceilings = {"copy_gbps": 4200.0}
    saxpy = finalize_record({"name": "saxpy", "size": "2^28 f32", "metric": "GB/s", "ceiling_key": "copy_gbps",
                             "notes": [], "status": "ok",
                             "impls": {"oxide": impl(1.0, 3400.0), "oxide_fast": impl(0.8, 4300.0),
                                       "library": impl(0.78, 4387.0, "torch.add(y, x, alpha=a, out=out)")}},
                            ceilings)
    softmax = finalize_record({"name": "softmax", "size": "16384×4096 f32", "metric": "GB/s",
                               "ceiling_key": "copy_gbps", "notes": [], "status": "ok",
                               "impls": {"oxide": impl(1.0, 2200.0), "oxide_fast": impl(0.8, 2600.0),
                                         "library": impl(0.85, 2510.0, "torch.softmax(x, dim=1) (allocates)")}},
                              ceilings)
    scan = finalize_record({"name": "scan", "size": "2^26 f32", "metric": "GB/s", "ceiling_key": "copy_gbps",
                            "notes": [], "status": "ok",
                            "impls": {"oxide": impl(1.0, 1000.0), "library": impl(0.5, 2000.0, "torch.cumsum")}},
                           ceilings)
    assert LIBRARY_TARGETS["saxpy"][0] == 1.0 and LIBRARY_TARGETS["softmax"][0] == 1.0
    assert saxpy["ratio_library"] == pytest.approx(4300 / 4387) and saxpy["targets"]["ratio_library"]["met"] is False
    assert saxpy["ratio_simple_library"] == pytest.approx(3400 / 4387)
    assert softmax["targets"]["ratio_library"]["met"] is True and "torch.softmax" in \
        softmax["targets"]["ratio_library"]["what"]
    assert scan["ratio_library"] == pytest.approx(0.5) and "ratio_library" not in scan["targets"]
    no_fast = finalize_record({**saxpy, "impls": {**saxpy["impls"], "oxide_fast": {"status": "error", "error": "x"}}},
                              ceilings)
    assert no_fast["ratio_library"] is None and no_fast["targets"]["ratio_library"]["met"] is None
    lookback = finalize_record({"name": "scan", "size": "2^26 f32", "metric": "GB/s", "ceiling_key": "copy_gbps",
                                "notes": [], "status": "ok",
                                "impls": {"oxide": impl(1.0, 1000.0), "oxide_lookback": impl(0.4, 2600.0),
                                          "torch_cumsum": impl(0.42, 2480.0, "torch.cumsum(x, 0, out=out): CUB")}},
                               ceilings)
    title, header, rows = report.library_table({"kernels": [lookback]})
    (row,) = [dict(zip(header, r)) for r in rows]
    assert row["fast / library"] == "1.048×" and row["Met"] == "yes" and row["library"].endswith("torch.cumsum(x, 0, out=out)")
    assert row["simple / library"] == "0.403×"
    results = {"kernels": [saxpy, softmax, scan]}
    title, header, rows = report.library_table(results)
    by_name = {r[0]: dict(zip(header, r)) for r in rows}
    assert by_name["saxpy: fast / library"]["fast / library"] == "0.980×"
    assert by_name["saxpy: fast / library"]["Met"] == "**no**" and "torch.add" in by_name["saxpy: fast / library"]["library"]
    assert by_name["softmax: fast / library"]["Met"] == "yes" and by_name["softmax: fast / library"]["Target"] == "≥ 1.0×"
    assert by_name["scan: fast / library"]["Target"] == "" and by_name["scan: fast / library"]["fast / library"] == "0.500×"
    md = report.render_markdown(results)
    assert "| saxpy: fast / library |" in md and report.WHY_PLACEHOLDER in \
        next(line for line in md.splitlines() if line.startswith("| saxpy: fast / library |"))
    assert "Against the library" in report.render_text(results)


def test_benchmarks_md_has_the_markers() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    assert report.BEGIN_MARKER in text and report.END_MARKER in text


# ---- the CPU benchmarks -------------------------------------------------------------------------------

def test_cpu_only_compile_benchmark_for_one_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bo"
    assert runner.main(["--cpu-only", "--quick", "--only", "compile", "--compile-examples", "saxpy",
                        "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    (rec,) = results["compile"]
    assert rec["status"] == "ok", rec
    assert rec["example"] == "saxpy" and rec["entry_points"] == 6 and rec["runs"] == 5
    assert 0 < rec["median_ms"] < 10_000 and rec["per_kernel_ms"] == pytest.approx(rec["median_ms"] / 6)
    assert results["kernels"] == [] and results["build"] == []
    assert "Compile time" in capsys.readouterr().out


def test_temp_package_unchecked_source() -> None:
    from benchmarks.temp_packages import unchecked_source

    text = unchecked_source((ROOT / "examples" / "sgemm.py").read_text())
    assert "@ox.kernel(bounds_check=False)\ndef sgemm(" in text
    with pytest.raises(ValueError):
        unchecked_source("def f(): pass\n")


# ---- without a GPU --------------------------------------------------------------------------------------

def test_gpu_modules_import_and_report_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks.gpu_suite  # noqa: F401  (imports without torch, cupy or numba)
    from benchmarks import env
    from benchmarks.kernels_cuda import compile_cuda_kernels
    from benchmarks.kernels_numba import build_numba_kernels

    for name in ("torch", "cupy", "numba"):
        monkeypatch.setitem(sys.modules, name, None)  # import of it fails
    for f in (env.require_torch, env.require_cupy, env.require_numba_cuda):
        f.cache_clear()
    try:
        with pytest.raises(env.Unavailable, match="PyTorch is not importable"):
            env.require_torch()
        with pytest.raises(env.Unavailable, match="CuPy is not importable"):
            compile_cuda_kernels()
        with pytest.raises(env.Unavailable, match="numba-cuda is not importable"):
            build_numba_kernels()
    finally:
        for f in (env.require_torch, env.require_cupy, env.require_numba_cuda):
            f.cache_clear()


def test_gpu_run_without_gpu_records_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import env

    monkeypatch.setitem(sys.modules, "torch", None)
    env.require_torch.cache_clear()
    try:
        out = tmp_path / "bo"
        assert runner.main(["--only", "saxpy,cold_start", "--quick", "--out", str(out)]) == 0
    finally:
        env.require_torch.cache_clear()
    results = json.loads((out / "results.json").read_text())
    (saxpy,) = results["kernels"]
    assert saxpy["status"] == "skipped" and "PyTorch" in saxpy["reason"]
    assert results["cold_start"][0]["status"] == "skipped"


def test_launch_overhead_payload_becomes_rows_with_the_issue_5_target() -> None:
    payload = {"results": {"p4": {"floor": {"median_us": 3.0, "min_us": 2.9, "max_us": 3.5},
                                  "oxide-torch": {"median_us": 3.6}, "numba": {"skipped": "ImportError: numba"}}},
               "ratios": {"p4": {"oxide-torch/floor": 1.2, "oxide-torch/cupy": 0.5}}, "reps": 20}
    rows = {r["name"]: r for r in runner.launch_overhead_rows(payload)}
    assert rows["p4 floor"]["median_us"] == 3.0 and rows["p4 numba"]["status"] == "skipped"
    assert rows["p4 oxide-torch/floor"]["met"] is True and "met" not in rows["p4 oxide-torch/cupy"]
    table = report.launch_table({"launch_overhead": list(rows.values())})
    assert any(r[0] == "p4 oxide-torch/floor" and r[2] == "yes" for r in table[2])


def test_launch_overhead_runs_against_a_stub_driver(tmp_path: Path) -> None:
    """``launch_overhead.py --fake``: the whole host path of every kernel, without a GPU, timed
    round-robin; the C floor needs a C compiler (the stub has no launch cost to show)."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler for the stub driver")
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "launch_overhead.py"
    run = subprocess.run(
        [sys.executable, str(script), "--fake", "--out", str(tmp_path), "--reps", "3", "--launches", "50",
         "--only", "floor,oxide-devicearray,oxide-cai"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    payload = json.loads((tmp_path / "launch_overhead.json").read_text())
    assert payload["fake_driver"] is True
    for kname in ("p1", "p4", "p16", "t4", "c4", "a4"):
        row = payload["results"][kname]
        assert {"oxide-devicearray", "oxide-cai"} <= set(row) <= {"floor", "oxide-devicearray", "oxide-cai"}, kname
        for name in ("oxide-devicearray", "oxide-cai"):
            assert 0 < row[name]["min_us"] <= row[name]["median_us"] <= row[name]["max_us"], (kname, name)
