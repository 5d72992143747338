"""The runtime requirement a project with kernels must declare (``oxide-cuda>=X,<Y`` in
``[project] dependencies``): the check itself, and the build hooks that run it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oxide import __version__
from oxide.runtime.manifest import MANIFEST_FORMAT
from oxide_build.package.requirement import (
    RUNTIME_RANGES,
    RuntimeRequirementError,
    check_requirements,
    dependencies_are_dynamic,
    runtime_requirement,
)

REPO = Path(__file__).resolve().parents[1]
PURE_KERNEL = Path(__file__).resolve().parent / "packages" / "pure_kernel"


def test_the_range_of_this_format_admits_this_release() -> None:
    from packaging.specifiers import SpecifierSet

    assert MANIFEST_FORMAT in RUNTIME_RANGES
    assert SpecifierSet(RUNTIME_RANGES[MANIFEST_FORMAT]).contains(__version__, prereleases=True)
    assert runtime_requirement() == "oxide-cuda>=0.1,<0.2"


@pytest.mark.parametrize("requirements", [
    ["numpy", "oxide-cuda>=0.1,<0.2"],
    ["Oxide_Cuda[build] >=0.1.0, <0.2"],
    ["oxide-cuda~=0.1.0"],
    ["oxide-cuda==0.1.*"],
])
def test_requirements_that_fit(requirements: list[str]) -> None:
    check_requirements(requirements, ["pkg.kernels"], "pyproject.toml")


@pytest.mark.parametrize(("requirements", "message"), [
    ([], r"(?s)this project has kernels \(pkg\.kernels\).*dependencies = \[\"oxide-cuda>=0\.1,<0\.2\"\]"),
    (["oxide"], "add it to the dependencies"),  # another project's name
    (["oxide-cuda; python_version < '3'"], "add it to the dependencies"),  # never applies
    (["oxide-cuda"], r"(?s)admits oxide-cuda 0\.2 and later.*require \"oxide-cuda>=0\.1,<0\.2\""),
    (["oxide-cuda>=0.1"], r"admits oxide-cuda 0\.2 and later"),
    (["oxide-cuda>=0.2,<0.3"], r"excludes oxide-cuda 0\.1\.0, which builds this wheel"),
])
def test_requirements_that_do_not_fit(requirements: list[str], message: str) -> None:
    with pytest.raises(RuntimeRequirementError, match=message) as exc:
        check_requirements(requirements, ["pkg.kernels"], "pyproject.toml")
    assert str(exc.value).startswith("pyproject.toml: ")


def test_a_project_without_kernels_needs_nothing() -> None:
    check_requirements([], [], "pyproject.toml")
    check_requirements(["oxide-cuda"], [], "pyproject.toml")


def test_dynamic_dependencies() -> None:
    assert dependencies_are_dynamic({}) is True
    assert dependencies_are_dynamic({"project": {"dynamic": ["dependencies"]}}) is True
    assert dependencies_are_dynamic({"project": {"dependencies": []}}) is False


def hook(project: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys, oxide_build; print('RESULT', oxide_build.{name}(*sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=project, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "OXIDE_ARCH": "sm_90",
                               "HOME": str(project)}, timeout=600)


def without_requirement(tmp_path: Path) -> Path:
    project = tmp_path / "pure_kernel"
    shutil.copytree(PURE_KERNEL, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "_oxide"))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('dependencies = ["oxide-cuda>=0.1,<0.2"]\n', ""))
    assert "oxide-cuda>" not in pyproject.read_text()
    return project


@pytest.mark.parametrize("name", ["build_wheel", "build_sdist", "build_editable", "prepare_metadata_for_build_wheel"])
def test_every_hook_asks_for_the_requirement(tmp_path: Path, name: str) -> None:
    project = without_requirement(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    result = hook(project, name, str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'dependencies = ["oxide-cuda>=0.1,<0.2"]' in result.stderr
    assert f"{project / 'pyproject.toml'}: [project] dependencies" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(out.iterdir()) == [] or name == "prepare_metadata_for_build_wheel"
    assert not (project / "purekernel" / "_oxide").exists(), "nothing compiled before the check"


def test_a_project_without_kernels_builds_without_the_requirement(tmp_path: Path) -> None:
    project = without_requirement(tmp_path)
    (project / "purekernel" / "ops.py").write_text("def scale(a: float) -> float:\n    return 2 * a\n")
    out = tmp_path / "out"
    out.mkdir()
    result = hook(project, "build_wheel", str(out))
    assert result.returncode == 0, result.stderr
    import zipfile

    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read("pure_kernel-1.2.3.dist-info/METADATA").decode()
        assert not [n for n in zf.namelist() if "/_oxide/" in n]
    assert "Requires-Dist" not in metadata
    assert "oxide: toolchain" not in result.stderr, "a project without kernels needs no toolchain"


def test_dynamic_dependencies_are_checked_on_the_built_metadata(tmp_path: Path) -> None:
    project = without_requirement(tmp_path)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text().replace('requires-python = ">=3.10"\n',
                                         'requires-python = ">=3.10"\ndynamic = ["dependencies"]\n', 1)
    pyproject.write_text(text + '\n[tool.setuptools.dynamic]\ndependencies = {file = ["requirements.txt"]}\n')
    (project / "requirements.txt").write_text("oxide-cuda\n")
    out = tmp_path / "out"
    out.mkdir()
    result = hook(project, "prepare_metadata_for_build_wheel", str(out))
    assert result.returncode == 1 and "admits oxide-cuda 0.2 and later" in result.stderr, result.stderr
    assert "METADATA" in result.stderr
    (project / "requirements.txt").write_text("oxide-cuda>=0.1,<0.2\n")
    result = hook(project, "prepare_metadata_for_build_wheel", str(out))
    assert result.returncode == 0, result.stderr
