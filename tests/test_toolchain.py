"""Toolchain discovery (``oxide_build.toolchain``): only ``sys.path`` entries and an explicit
``CUDA_HOME``/``CUDA_PATH`` are searched, and a producer of LTO-IR newer than nvJitLink is one
message naming what to install. The environments are fakes: files and ``.dist-info``
directories laid out as the nvidia-* wheels lay them out."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oxide.errors import ToolchainError
from oxide_build.toolchain import check_link_compatibility, cuda_include_dirs, toolchain_report
from oxide_build.toolchain.discovery import locate, require
from oxide_build.toolchain.versions import component_version

REPO = Path(__file__).resolve().parents[1]
PURE_KERNEL = Path(__file__).resolve().parent / "packages" / "pure_kernel"

# distribution -> the files it installs (relative to site-packages), as the 13.x wheels do
WHEEL_FILES = {
    "nvidia-nvjitlink": ["nvidia/cu13/lib/libnvJitLink.so.13"],
    "nvidia-nvvm": ["nvidia/cu13/lib/libnvvm.so.4", "nvidia/cu13/nvvm/libdevice/libdevice.10.bc"],
    "nvidia-cuda-nvrtc": ["nvidia/cu13/lib/libnvrtc.so.13"],
    "nvidia-cuda-cccl": ["nvidia/cu13/include/cccl/cub/cub.cuh"],
}


def fake_site(root: Path, versions: dict[str, str]) -> Path:
    """A site-packages with the files of each distribution in ``versions`` and its metadata."""
    for dist, version in versions.items():
        for rel in WHEEL_FILES[dist]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"")
        info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA toolkit named in the environment."""
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)


def test_found_on_sys_path_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None) -> None:
    overlay = fake_site(tmp_path / "overlay", {"nvidia-nvjitlink": "13.0.88"})
    normal = fake_site(tmp_path / "normal", {"nvidia-nvjitlink": "13.5.37", "nvidia-cuda-cccl": "13.3.5"})
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(overlay), str(normal)])
    found = locate("nvJitLink")
    assert found is not None and found.path == overlay / "nvidia/cu13/lib/libnvJitLink.so.13"
    assert found.origin == "environment"
    version = component_version("nvJitLink")
    assert version is not None and (version.version, version.release) == ("13.0.88", (13, 0))
    assert cuda_include_dirs() == [str(normal / "nvidia/cu13/include/cccl")]


def test_nothing_outside_sys_path_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None) -> None:
    """The site-packages of the frontend (in site.getsitepackages(), off sys.path under pip's
    isolation) and /usr/local/cuda are never looked at."""
    import site

    outside = fake_site(tmp_path / "outside", {"nvidia-nvjitlink": "13.5.37"})
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(outside)])
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    for name in ("nvJitLink", "NVVM", "NVRTC", "nvFatbin", "libdevice", "libcudadevrt", "CCCL headers"):
        assert locate(name) is None, name
    assert cuda_include_dirs() == []
    with pytest.raises(ToolchainError, match=r"nvJitLink was not found in this Python environment .*: pip install nvidia-nvjitlink"):
        require("nvJitLink")
    with pytest.raises(ToolchainError, match="CCCL headers was not found .*pip install nvidia-cuda-cccl"):
        require("CCCL headers")
    assert all("/usr/local/cuda" not in line for line in toolchain_report())


def test_a_toolkit_only_when_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None) -> None:
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "lib64").mkdir(parents=True)
    (toolkit / "lib64" / "libnvJitLink.so.13").write_bytes(b"")
    (toolkit / "version.json").write_text(json.dumps({"cuda": {"version": "13.0.2"},
                                                      "libnvjitlink": {"version": "13.0.88"}}))
    env = fake_site(tmp_path / "site", {"nvidia-nvvm": "13.5.37"})
    monkeypatch.setattr(sys, "path", [str(env)])
    assert locate("nvJitLink") is None
    monkeypatch.setenv("CUDA_HOME", str(toolkit))
    found = locate("nvJitLink")
    assert found is not None and (found.origin, found.root) == ("CUDA_HOME", toolkit)
    version = component_version("nvJitLink")
    assert version is not None and version.version == "13.0.88"
    # the environment's own pieces still come first
    nvvm = locate("NVVM")
    assert nvvm is not None and nvvm.origin == "environment"
    assert any("(from CUDA_HOME)" in line for line in toolchain_report())


def test_newer_producers_than_the_linker_are_one_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         bare: None) -> None:
    """The PyTorch case: nvidia-nvjitlink pinned to 13.0, nvidia-nvvm and -nvrtc at 13.5."""
    env = fake_site(tmp_path / "site", {"nvidia-nvjitlink": "13.0.88", "nvidia-nvvm": "13.5.37",
                                        "nvidia-cuda-nvrtc": "13.5.37"})
    monkeypatch.setattr(sys, "path", [str(env)])
    with pytest.raises(ToolchainError) as exc:
        check_link_compatibility()
    message = str(exc.value)
    assert 'pip install "nvidia-nvvm==13.0.*" "nvidia-cuda-nvrtc==13.0.*"' in message
    assert "nvidia-nvvm 13.5.37" in message and "nvidia-nvjitlink 13.0.88" in message
    assert "upgrade nvidia-nvjitlink to 13.5" in message


@pytest.mark.parametrize("versions", [
    {"nvidia-nvjitlink": "13.5.37", "nvidia-nvvm": "13.0.88", "nvidia-cuda-nvrtc": "13.0.88"},  # newer linker
    {"nvidia-nvjitlink": "13.0.39", "nvidia-nvvm": "13.0.88", "nvidia-cuda-nvrtc": "13.0.48"},  # same release
    {"nvidia-nvjitlink": "13.0.39"},  # no producer installed: nothing to mismatch
])
def test_consistent_sets_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None,
                              versions: dict[str, str]) -> None:
    monkeypatch.setattr(sys, "path", [str(fake_site(tmp_path / "site", versions))])
    check_link_compatibility()


def test_one_newer_producer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None) -> None:
    env = fake_site(tmp_path / "site", {"nvidia-nvjitlink": "13.2.51", "nvidia-nvvm": "13.2.78",
                                        "nvidia-cuda-nvrtc": "13.4.92"})
    monkeypatch.setattr(sys, "path", [str(env)])
    with pytest.raises(ToolchainError) as exc:
        check_link_compatibility()
    assert 'install a matching set: pip install "nvidia-cuda-nvrtc==13.2.*"\n' in str(exc.value)
    assert "nvidia-nvvm" not in str(exc.value)


def test_a_skewed_build_fails_at_once_with_the_pins(tmp_path: Path) -> None:
    """A real build hook, in an environment whose first sys.path entry holds a 13.0 nvJitLink
    and 13.5 producers: one message, nothing compiled, no traceback."""
    env = fake_site(tmp_path / "site", {"nvidia-nvjitlink": "13.0.88", "nvidia-nvvm": "13.5.37",
                                        "nvidia-cuda-nvrtc": "13.5.37"})
    project = tmp_path / "pure_kernel"
    shutil.copytree(PURE_KERNEL, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "_oxide"))
    out = tmp_path / "out"
    out.mkdir()
    code = "import sys, oxide_build; oxide_build.build_wheel(sys.argv[1])"
    environ = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    environ.update(PYTHONPATH=os.pathsep.join([str(env), str(REPO)]), OXIDE_ARCH="sm_90", OXIDE_NO_CACHE="1")
    result = subprocess.run([sys.executable, "-c", code, str(out)], cwd=project, capture_output=True, text=True,
                            env=environ, timeout=600)
    assert result.returncode == 1, result.stderr
    assert 'pip install "nvidia-nvvm==13.0.*" "nvidia-cuda-nvrtc==13.0.*"' in result.stderr
    assert result.stderr.count("inconsistent CUDA toolchain") == 1
    assert "Traceback" not in result.stderr
    assert not list(out.iterdir())
    assert f"nvJitLink: {env}/nvidia/cu13/lib/libnvJitLink.so.13 [nvidia-nvjitlink 13.0.88]" in result.stderr


# the CUDA 12 wheels: a directory per wheel, NVVM inside nvidia-cuda-nvcc-cu12 as a plain libnvvm.so
CU12_WHEEL_FILES = {
    "nvidia-nvjitlink-cu12": ["nvidia/nvjitlink/lib/libnvJitLink.so.12"],
    "nvidia-cuda-nvcc-cu12": ["nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"],
    "nvidia-cuda-nvrtc-cu12": ["nvidia/cuda_nvrtc/lib/libnvrtc.so.12"],
}


def fake_cu12_site(root: Path, versions: dict[str, str]) -> Path:
    for dist, version in versions.items():
        for rel in CU12_WHEEL_FILES[dist]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"")
        info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


def test_the_cuda_12_wheels_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: None) -> None:
    from oxide_build.toolchain.discovery import environment_cuda_major, install_hint

    site = fake_cu12_site(tmp_path / "site", {"nvidia-nvjitlink-cu12": "12.9.86", "nvidia-cuda-nvcc-cu12": "12.9.86"})
    monkeypatch.setattr(sys, "path", [str(site)])
    nvvm = locate("NVVM")
    assert nvvm is not None and nvvm.path == site / "nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"
    linker = component_version("nvJitLink")
    assert linker is not None and (linker.distribution, linker.release) == ("nvidia-nvjitlink-cu12", (12, 9))
    version = component_version("NVVM")
    assert version is not None and version.distribution == "nvidia-cuda-nvcc-cu12"
    assert environment_cuda_major() == 12
    # the hints name the CUDA 12 packages, not nvidia-nvvm (13.x) or nvidia-cuda-nvrtc (13.x)
    assert install_hint("NVRTC") == "nvidia-cuda-nvrtc-cu12" and install_hint("NVVM") == "nvidia-cuda-nvcc-cu12"
    with pytest.raises(ToolchainError, match=r"NVRTC was not found .*: pip install nvidia-cuda-nvrtc-cu12 \(this "
                                             r"environment's toolchain is CUDA 12's: docs/toolchain.md"):
        require("NVRTC")
    assert "NVRTC: not found (pip install nvidia-cuda-nvrtc-cu12)" in toolchain_report()


def test_a_cuda_12_producer_newer_than_its_linker_names_cu12_pins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 bare: None) -> None:
    site = fake_cu12_site(tmp_path / "site", {"nvidia-nvjitlink-cu12": "12.4.127", "nvidia-cuda-nvrtc-cu12": "12.9.86"})
    monkeypatch.setattr(sys, "path", [str(site)])
    with pytest.raises(ToolchainError, match=r'pip install "nvidia-cuda-nvrtc-cu12==12\.4\.\*"'):
        check_link_compatibility()


def test_nvjitlink_errors_are_decoded() -> None:
    from oxide_build.link.nvjitlink import describe_result

    class Bare(Exception):  # what an older cuda-bindings prints for a CUDA 12 nvJitLink
        pass

    assert describe_result(Bare("ERROR 4")).startswith("ERROR_PTX_COMPILE (4): its PTX compiler rejected the PTX")
    from cuda.bindings import nvjitlink

    assert describe_result(nvjitlink.nvJitLinkError(16)).startswith("ERROR_UNRECOGNIZED_ARCH (16): an arch this")
    assert describe_result(Bare("something else")) == "something else"
