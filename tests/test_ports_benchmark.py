"""The ports benchmark (benchmarks/ports.py) without a GPU: its corpus is complete (an nvcc original
and an oxide port per case), the originals' symbols resolve, the flags follow each original's build,
and the committed run renders as the BENCHMARKS.md table."""
from __future__ import annotations

import concurrent.futures
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks import ports
from benchmarks.ports_cases import FIRST_CORPUS, NEW_CORPUS, SPECS, UNTIMED_PORTS
from benchmarks.runner import ALL_BENCHMARKS, parse_args

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "2026-12-01-h200-ports.json"


def test_the_corpus_has_an_original_and_a_port_per_case() -> None:
    names = [s.name for s in SPECS]
    assert len(names) == len(set(names))
    assert len(SPECS) >= 60 and len(NEW_CORPUS) >= 20
    in_dir = {p.stem[len("port_"):] for p in ports.PORTS_DIR.glob("port_*.py")}
    assert UNTIMED_PORTS <= in_dir and not UNTIMED_PORTS & set(names), "an untimed port is a port and not a case"
    first = in_dir - {s.name for s in NEW_CORPUS} - UNTIMED_PORTS
    assert {s.name for s in FIRST_CORPUS} == first, "every port of tests/packages/ports is in the corpus or untimed"
    for spec in SPECS:
        assert spec.cu.is_file(), spec.cu
        assert spec.port.is_file(), spec.port
        assert spec.origin == ("new" if spec in NEW_CORPUS else "tests/packages/ports")
    cu_files = {p.stem for p in ports.CUDA_DIR.glob("*.cu")}
    assert cu_files == set(names), "an original without a case, or a case without an original"


def test_ports_is_listed_and_selectable(capsys: pytest.CaptureFixture[str]) -> None:
    assert "ports" in ALL_BENCHMARKS
    with pytest.raises(SystemExit):
        parse_args(["--list"])
    assert "ports" in capsys.readouterr().out.split()
    opts = parse_args(["--only", "ports", "--ports", "atax,llmc_adamw"])
    assert opts.selected == ("ports",) and opts.ports == ("atax", "llmc_adamw")
    with pytest.raises(SystemExit):
        parse_args(["--only", "ports", "--ports", "no_such_kernel"])
    assert "unknown ports case" in capsys.readouterr().err


def test_the_flags_follow_each_originals_build() -> None:
    by_name = {s.name: s for s in SPECS}
    llmc = [s for s in SPECS if s.name.startswith("llmc_")]
    assert llmc and all("--use_fast_math" in s.nvcc_flags and s.fast_math for s in llmc)
    assert by_name["black_scholes"].fast_math and "--use_fast_math" not in by_name["black_scholes"].nvcc_flags
    assert not by_name["atax"].fast_math
    cmd = ports.nvcc_command("nvcc", by_name["llmc_gelu_forward"], "sm_90", Path("o.cubin"))
    assert cmd[:1] == ["nvcc"] and "-arch=sm_90" in cmd and "-O3" in cmd and "--use_fast_math" in cmd
    assert cmd[-1] == str(by_name["llmc_gelu_forward"].cu)


def test_symbols_resolve_by_name_or_mangled_prefix() -> None:
    cubin = b"\x00.text._Z7reduce4ILj256EEvPfS0_j\x00.text.sequential_rows\x00.text._Z6KernelPiS_\x00"
    symbols = ports.kernel_symbols(cubin)
    assert symbols == ["_Z6KernelPiS_", "_Z7reduce4ILj256EEvPfS0_j", "sequential_rows"]
    assert ports.resolve_symbol("sequential_rows", symbols) == "sequential_rows"
    assert ports.resolve_symbol("Kernel", symbols) == "_Z6KernelPiS_"
    assert ports.resolve_symbol("reduce4", symbols) == "_Z7reduce4ILj256EEvPfS0_j"
    with pytest.raises(KeyError, match="no matching"):
        ports.resolve_symbol("Kernel2", symbols)
    with pytest.raises(KeyError, match="several"):
        ports.resolve_symbol("k", ["_Z1kIfEvv", "_Z1kIdEvv"])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_mangled_instances_the_cases_name_exist(tmp_path: Path) -> None:
    """Templated originals are launched by mangled name: each one a case names is in its cubin."""
    wanted: dict[str, set[str]] = {}
    for module in ("ports_cases.py", "ports_cases_new.py"):
        text = (REPO / "benchmarks" / module).read_text()
        for make in re.split(r"\ndef make_", text)[1:]:
            name = make.split("(", 1)[0]
            for symbol in re.findall(r'symbol="(_Z\w+)"', make):
                wanted.setdefault(name, set()).add(symbol)
    assert len(wanted) >= 8
    specs = [s for s in SPECS if s.name in wanted]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        built = dict(zip([s.name for s in specs], pool.map(
            lambda s: ports._nvcc_one(ports.nvcc_command(shutil.which("nvcc") or "nvcc", s, "sm_90",
                                                         tmp_path / f"{s.name}.cubin")), specs)))
    for name, symbols in wanted.items():
        _, stderr, rc = built[name]
        assert rc == 0, stderr
        present = set(ports.kernel_symbols((tmp_path / f"{name}.cubin").read_bytes()))
        assert symbols <= present, (name, symbols - present)


def test_the_committed_run_renders_as_the_table() -> None:
    results = json.loads(RESULTS.read_text())
    title, header, rows = ports.ports_table(results)
    assert len(rows) == len(SPECS) and header[5] == "oxide/nvcc"
    assert "geomean 0.899× with bounds checks, 1.081× without" in title
    md = ports.render_ports_markdown(results)
    assert "NVIDIA H200" in md and "580.159.04" in md and "release 13.0" in md
    assert md.count("\n| ") == len(SPECS) + 1
    summary = results["ports"]["summary"]
    assert summary["timed"] == summary["cases"] == 63 and summary["runs"] >= 20
    assert ports.geomean([2.0, 0.5]) == pytest.approx(1.0) and ports.geomean([]) is None
