"""oxide_build with the old setuptools a PyTorch environment may have (the [build] extra allows 64).

The sdist and the wheel are named with the normalized project name whatever setuptools made
them. The sdist: setuptools before 69.3 (Python 3.10/3.11 venvs come with 65.5, and PyTorch
caps setuptools below 82) names the archive and its top directory with the project name as
declared: ``Pure.Kernel-1.2.3.tar.gz``. ``rewrite_sdist`` renames both; these tests hand it such an
archive directly, so they do not depend on the setuptools installed here. The wheel: with
the wheel package's bdist_wheel (setuptools before 70.1) ``name = "My.Pkg"`` gives
``My.Pkg-1.0-py3-none-any.whl``.
"""
from __future__ import annotations

import io
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

import oxide_build
from oxide_build.package.sdist import normalized_sdist_prefix, rewrite_sdist
from oxide_build.package.wheel import rewrite_wheel

PKG_INFO = b"Metadata-Version: 2.1\nName: Pure.Kernel\nVersion: 1.2.3\nSummary: x\n"


def old_style_sdist(directory: Path, prefix: str, pkg_info: bytes | None = PKG_INFO) -> Path:
    files = {f"{prefix}/pyproject.toml": b"[project]\n", f"{prefix}/purekernel/__init__.py": b"X = 1\n"}
    if pkg_info is not None:
        files[f"{prefix}/PKG-INFO"] = pkg_info
    path = directory / f"{prefix}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for dirname in (prefix, f"{prefix}/purekernel"):
            d = tarfile.TarInfo(dirname)
            d.type = tarfile.DIRTYPE
            tf.addfile(d)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("prefix", "pkg_info", "expected"), [
    ("Pure.Kernel-1.2.3", PKG_INFO, "pure_kernel-1.2.3"),
    ("pure-kernel-1.2.3", b"Name: pure-kernel\nVersion: 1.2.3\n", "pure_kernel-1.2.3"),
    ("pure_kernel-1.2.3", b"Name: pure-kernel\nVersion: 1.2.3\n", "pure_kernel-1.2.3"),
    ("My__Pkg--x-2.0rc1", None, "my_pkg_x-2.0rc1"),  # no PKG-INFO: the name before the version
    ("plain", None, "plain"),
])
def test_normalized_prefix(prefix: str, pkg_info: bytes | None, expected: str) -> None:
    assert normalized_sdist_prefix(prefix, pkg_info) == expected


def test_rewrite_renames_the_archive_and_its_top_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "purekernel").mkdir(parents=True)
    (project / "purekernel" / "helper.cu").write_text("__device__ float twice(float x) { return 2 * x; }\n")
    dist = tmp_path / "dist"
    dist.mkdir()
    old = old_style_sdist(dist, "Pure.Kernel-1.2.3")

    new = rewrite_sdist(old, project)

    assert new == dist / "pure_kernel-1.2.3.tar.gz"
    assert sorted(p.name for p in dist.iterdir()) == ["pure_kernel-1.2.3.tar.gz"], "the old file is gone"
    with tarfile.open(new) as tf:
        names = tf.getnames()
        assert tf.extractfile("pure_kernel-1.2.3/PKG-INFO").read() == PKG_INFO  # type: ignore[union-attr]
    assert names == sorted([
        "pure_kernel-1.2.3",
        "pure_kernel-1.2.3/PKG-INFO",
        "pure_kernel-1.2.3/purekernel",
        "pure_kernel-1.2.3/purekernel/__init__.py",
        "pure_kernel-1.2.3/purekernel/helper.cu",  # added from the tree, under the new name
        "pure_kernel-1.2.3/pyproject.toml",
    ])


def test_rewrite_keeps_a_normalized_name(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    old = old_style_sdist(tmp_path, "pure_kernel-1.2.3")
    before = tarfile.open(old).getnames()
    assert rewrite_sdist(old, project) == old
    assert tarfile.open(old).getnames() == sorted(before)


@pytest.mark.parametrize("hook", ["get_requires_for_build_editable", "prepare_metadata_for_build_editable",
                                  "build_editable"])
def test_editable_hooks_need_setuptools_64(hook: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # setuptools 61-63 (a build without isolation does not check the [build] extra's floor):
    # build_meta without the PEP 660 hooks
    setuptools = ModuleType("setuptools")
    setuptools.__version__ = "63.2.0"  # type: ignore[attr-defined]
    build_meta = ModuleType("setuptools.build_meta")
    monkeypatch.setitem(sys.modules, "setuptools", setuptools)
    monkeypatch.setattr(oxide_build, "_host_backend", lambda: build_meta)
    project = tmp_path / "pure_kernel"
    shutil.copytree(Path(__file__).parent / "packages" / "pure_kernel", project)
    monkeypatch.chdir(project)
    (tmp_path / "out").mkdir()
    args = [] if hook == "get_requires_for_build_editable" else [str(tmp_path / "out")]

    with pytest.raises(SystemExit) as exit_info:
        getattr(oxide_build, hook)(*args)

    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "an editable install needs setuptools 64 or newer (PEP 660); this build environment has setuptools 63.2.0" in err
    assert "Traceback" not in err
    assert not list(project.rglob("_oxide")), "nothing compiled before the refusal"


def old_style_wheel(directory: Path) -> Path:
    """What setuptools 65.5 with the wheel package's bdist_wheel makes of ``name = "My.Pkg"``."""
    path = directory / "My.Pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mypkg/__init__.py", "X = 1\n")
        zf.writestr("My.Pkg-1.0.data/scripts/tool", "#!python\n")
        zf.writestr("My.Pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: My.Pkg\nVersion: 1.0\n")
        zf.writestr("My.Pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr("My.Pkg-1.0.dist-info/RECORD", "stale,,\n")
    return path


def test_rewrite_wheel_normalizes_the_name(tmp_path: Path) -> None:
    new = rewrite_wheel(old_style_wheel(tmp_path), {"mypkg/_oxide/mypkg.k.json": b"{}"})

    assert new == tmp_path / "my_pkg-1.0-py3-none-any.whl"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_pkg-1.0-py3-none-any.whl"], "the old file is gone"
    with zipfile.ZipFile(new) as zf:
        names = zf.namelist()
        record = zf.read("my_pkg-1.0.dist-info/RECORD").decode()
        metadata = zf.read("my_pkg-1.0.dist-info/METADATA").decode()
    assert names == [
        "my_pkg-1.0.data/scripts/tool", "mypkg/__init__.py", "mypkg/_oxide/mypkg.k.json",
        "my_pkg-1.0.dist-info/METADATA", "my_pkg-1.0.dist-info/WHEEL", "my_pkg-1.0.dist-info/RECORD",
    ]
    assert [line.split(",")[0] for line in record.splitlines()] == names
    assert "Name: My.Pkg\n" in metadata, "the metadata keeps the name as declared"


def test_prepared_metadata_directory_is_normalized_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pip checks the wheel against the metadata it prepared: both must be named alike
    def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: object = None) -> str:
        (Path(metadata_directory) / "My.Pkg-1.0.dist-info").mkdir()
        (Path(metadata_directory) / "My.Pkg-1.0.dist-info" / "METADATA").write_text("Name: My.Pkg\nVersion: 1.0\n")
        return "My.Pkg-1.0.dist-info"

    backend = ModuleType("setuptools.build_meta")
    backend.prepare_metadata_for_build_wheel = prepare_metadata_for_build_wheel  # type: ignore[attr-defined]
    monkeypatch.setattr(oxide_build, "_host_backend", lambda: backend)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "My.Pkg"\nversion = "1.0"\n')
    monkeypatch.chdir(project)
    out = tmp_path / "meta"
    out.mkdir()

    assert oxide_build.prepare_metadata_for_build_wheel(str(out)) == "my_pkg-1.0.dist-info"
    assert [p.name for p in out.iterdir()] == ["my_pkg-1.0.dist-info"]


def test_prepared_metadata_without_a_version_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # setuptools 61.0 prepares "pure_kernel.dist-info"; there is no <name>-<version> to normalize
    def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: object = None) -> str:
        (Path(metadata_directory) / "pure_kernel.dist-info").mkdir()
        return "pure_kernel.dist-info"

    backend = ModuleType("setuptools.build_meta")
    backend.prepare_metadata_for_build_wheel = prepare_metadata_for_build_wheel  # type: ignore[attr-defined]
    monkeypatch.setattr(oxide_build, "_host_backend", lambda: backend)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "pure-kernel"\nversion = "1.2.3"\n')
    monkeypatch.chdir(project)
    out = tmp_path / "meta"
    out.mkdir()

    assert oxide_build.prepare_metadata_for_build_wheel(str(out)) == "pure_kernel.dist-info"
    assert [p.name for p in out.iterdir()] == ["pure_kernel.dist-info"]
