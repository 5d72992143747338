"""The ``oxide`` command line: ``oxide compile`` and ``oxide scan``, in-process through
``main(argv)`` and as ``python -m oxide_build`` where the exit path matters."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oxide_build.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE_KERNELS = REPO / "sample_project" / "sample" / "kernels.py"
BROKEN_KERNELS = Path(__file__).resolve().parent / "packages" / "compile_error" / "broken" / "kernels.py"


def run_oxide(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "oxide_build", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def find_ptxas() -> Path | None:
    from oxide_build.toolchain import find_tool

    return find_tool("ptxas")


def test_help_describes_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "compile" in out and "scan" in out
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    out = capsys.readouterr().out
    for option in ("--arch ARCH", "--emit {ir,llvm,ptx,cubin,ltoir,fatbin}", "-o DIR", "--module NAME", "sm_120"):
        assert option in out


def test_compile_emit_llvm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(SAMPLE_KERNELS), "--emit", "llvm", "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernels.ll"]  # module name = file stem
    text = (tmp_path / "kernels.ll").read_text()
    assert "define" in text and "saxpy" in text
    assert 'target triple = "nvptx64-nvidia-cuda"' in text
    assert f"wrote {tmp_path / 'kernels.ll'}" in capsys.readouterr().out


GENERIC_SAXPY = """
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, kernel, thread

T = ox.TypeVar("T", f32, f64)

@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]
"""


def test_compile_emit_ptx_assembles_with_ptxas(tmp_path: Path) -> None:
    """A module without C++ (the sample's kernels call C++, whose PTX alone has undefined
    externs): its PTX is complete and ptxas assembles it."""
    source = tmp_path / "kernels.py"
    source.write_text(GENERIC_SAXPY)
    out = tmp_path / "out"
    code = main(["compile", str(source), "--module", "sample.kernels", "--emit", "ptx", "--arch", "sm_80,sm_90", "-o", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["sample.kernels.sm_80.ptx", "sample.kernels.sm_90.ptx"]
    ptxas = find_ptxas()
    for arch in ("sm_80", "sm_90"):
        ptx = out / f"sample.kernels.{arch}.ptx"
        text = ptx.read_text()
        assert re.search(rf"^\.target {arch}\b", text, re.M), text[:400]
        # saxpy for f32 and for f64, each with its fast instance (passes/launch_instances.py)
        assert len(re.findall(r"\.entry ", text)) == 4
        if ptxas is None:
            continue
        cubin = tmp_path / f"{arch}.cubin"
        result = subprocess.run([str(ptxas), f"-arch={arch}", str(ptx), "-o", str(cubin)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert cubin.read_bytes()[:4] == b"\x7fELF"
    if ptxas is None:
        pytest.skip("ptxas not found (pip install nvidia-cuda-nvcc); PTX was written but not assembled")


def test_compile_emit_cubin(tmp_path: Path) -> None:
    assert main(["compile", str(SAMPLE_KERNELS), "--arch", "sm_90", "-o", str(tmp_path)]) == 0  # cubin is the default
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernels.sm_90.cubin"]
    assert (tmp_path / "kernels.sm_90.cubin").read_bytes()[:4] == b"\x7fELF"


def test_compile_error_prints_diagnostic_and_exits_1(tmp_path: Path) -> None:
    result = run_oxide("compile", str(BROKEN_KERNELS), "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert re.search(r"kernels\.py:8:\d+: error: .*not_defined_anywhere", result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_usage_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(tmp_path / "missing.py"), "-o", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == f"oxide: error: {tmp_path / 'missing.py'}: no such file"
    assert main(["compile", str(SAMPLE_KERNELS), "--arch", "sm_70", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "oxide: error: unsupported arch 'sm_70'; supported archs: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120"
    assert not list(tmp_path.iterdir())


def test_scan_lists_kernels() -> None:
    result = run_oxide("scan", str(REPO / "sample_project"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "sample.kernels (sample/kernels.py): gelu_cpp, saxpy, gelu_forward, softmax_rows, histogram256, "
        "dropout_forward, box_blur3",
        "7 kernels in 1 module",
    ]


def test_scan_src_layout_and_package_filter(capsys: pytest.CaptureFixture[str]) -> None:
    packages = Path(__file__).resolve().parent / "packages"
    assert main(["scan", str(packages / "src_layout")]) == 0
    assert capsys.readouterr().out.splitlines() == ["srckernel.fill (srckernel/fill.py): fill", "1 kernel in 1 module"]
    assert main(["scan", str(packages / "pure_kernel"), "--package", "nothing_here"]) == 1
    assert "'nothing_here' is neither a package directory nor a module under" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--no-bounds-check", "--unchecked-indexing"])
def test_compile_without_bounds_checks(flag: str, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("import oxide as ox\nfrom oxide import Slice, MutSlice, f32, thread\n\n"
                   "@ox.kernel\ndef k(x: Slice[f32], out: MutSlice[f32]) -> None:\n"
                   "    i = thread.index_1d()\n    with ox.unsafe():\n        out[i] = x[i + 1]\n")
    assert main(["compile", str(src), "--emit", "llvm", "-o", str(tmp_path / "checked")]) == 0
    assert main(["compile", str(src), "--emit", "llvm", flag, "-o", str(tmp_path / "unchecked")]) == 0
    checked = next((tmp_path / "checked").glob("*.ll")).read_text()
    unchecked = next((tmp_path / "unchecked").glob("*.ll")).read_text()
    assert 'call void @"__oxide_fail"(i64 1,' in checked and "__oxide_fail" not in unchecked
