"""oxide's CMake package (cmake/, ``python -m oxide --cmake-dir``): a project built by
scikit-build-core through ``build-backend = "oxide_build"`` whose CMakeLists.txt builds a CUDA
C++ device library (``oxide_add_device_library``), the Python kernels that link it
(``oxide_add_kernels``) and the header of their exports (``oxide_export_header``). CPU only:
no GPU is needed to build."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import oxide

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "packages" / "cmake_kernels"


def _cmake_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("scikit_build_core") is None:
        return "scikit-build-core is not installed (pip install 'oxide-cuda[cmake]')"
    if shutil.which("cmake") is None and importlib.util.find_spec("cmake") is None:
        return "cmake is not installed"
    return None


needs_cmake = pytest.mark.skipif(_cmake_missing() is not None, reason=str(_cmake_missing()))


def _without_toolkit(path: str) -> str:
    """PATH without any directory holding nvcc or named after CUDA."""
    kept = [d for d in path.split(os.pathsep)
            if d and "cuda" not in d.lower() and not (Path(d) / "nvcc").exists()]
    return os.pathsep.join(kept)


def _env(hide_toolkit: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for name in ("OXIDE_ARCH", "SOURCE_DATE_EPOCH", "CUDACXX"):
        env.pop(name, None)
    if hide_toolkit:
        env.pop("CUDA_HOME", None)
        env.pop("CUDA_PATH", None)
        env["PATH"] = _without_toolkit(env.get("PATH", "/usr/bin:/bin"))
    return env


def _build(tmp_path: Path, hide_toolkit: bool, *settings: str,
           edit: dict[str, tuple[str, str]] | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Builds a copy of the fixture; ``edit``: file -> (old text, new text) replaced first."""
    project = tmp_path / "cmake_kernels"
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("build", "_oxide", "__pycache__"))
    for name, (old, new) in (edit or {}).items():
        text = (project / name).read_text()
        assert old in text, (name, old)
        (project / name).write_text(text.replace(old, new))
    out = tmp_path / "wheels"
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", str(out),
           str(project)]
    for setting in settings:
        cmd += ["-C", setting]
    result = subprocess.run(cmd, capture_output=True, text=True, env=_env(hide_toolkit), timeout=600, cwd=tmp_path)
    return result, out


def _entries(out: Path) -> dict[str, bytes]:
    (wheel,) = out.glob("cmake_kernels-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_python_m_oxide_prints_the_cmake_and_include_dirs() -> None:
    def run(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "oxide", *args], capture_output=True, text=True,
                                env=_env(False), timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    cmake_dir = Path(run("--cmake-dir"))
    assert (cmake_dir / "oxideConfig.cmake").is_file() and (cmake_dir / "oxideFunctions.cmake").is_file()
    include_dir = Path(run("--include-dir"))
    assert include_dir == Path(oxide.__file__).resolve().parent / "include"
    assert run("--version") == oxide.__version__
    assert subprocess.run([sys.executable, "-m", "oxide"], capture_output=True, env=_env(False)).returncode == 1


def test_cmake_package_version_is_oxides() -> None:
    text = (REPO / "cmake" / "oxideConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{oxide.__version__}")' in text


@needs_cmake
def test_device_library_and_kernels_built_by_cmake_without_a_toolkit(tmp_path: Path) -> None:
    """No nvcc, no CUDA_HOME: the device library is compiled by NVRTC from the wheels, the
    kernels link it, and the wheel holds the manifest, a cubin per arch and the header."""
    result, out = _build(tmp_path, hide_toolkit=True)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert "oxide: NVRTC, cmk_fastmath (sm_80,sm_90) -> LTO-IR" in log
    assert "Building CUDA object" not in log
    entries = _entries(out)
    assert sorted(n for n in entries if "/_oxide/" in n) == [
        "cmkern/_oxide/cmkern.ops.json",
        "cmkern/_oxide/cmkern.ops.sm_80.cubin",
        "cmkern/_oxide/cmkern.ops.sm_90.cubin",
    ]
    for arch in ("sm_80", "sm_90"):
        cubin = entries[f"cmkern/_oxide/cmkern.ops.{arch}.cubin"]
        assert cubin[:4] == b"\x7fELF"
        assert b"gelu_scaled" in cubin
    manifest = json.loads(entries["cmkern/_oxide/cmkern.ops.json"])
    assert "gelu_scaled" in json.dumps(manifest)
    assert manifest["sources"] == {}  # no path into CMake's (temporary) build tree
    header = entries["cmkern/include/oxide_exports.h"].decode()
    assert 'extern "C" __device__ float cmk_py_gelu(float x);' in header
    # the pybind11 module reads the manifest through oxide/launch.hpp, and checks arguments
    # against it before it needs a GPU
    (wheel,) = out.glob("cmake_kernels-0.1.0-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    script = (
        "import cmkern._native as n\n"
        "print(n.kernel_params('gelu_scaled'))\n"
        "try:\n    n.gelu_scaled_f64(0, 0, 0)\nexcept RuntimeError as e:\n    print('refused:', e)\n"
        "try:\n    n.kernel_params('nope')\nexcept RuntimeError as e:\n    print('missing:', e)\n"
        "try:\n    n.gelu_scaled_2d_blocks(0, 0, 0)\nexcept RuntimeError as e:\n    print('shape:', e)\n"
    )
    check = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=site,
                           env=_env(False), timeout=60)
    assert check.returncode == 0, check.stderr
    lines = check.stdout.splitlines()
    assert lines[0] == "[('x', 'slice', 'f32'), ('out', 'disjoint_slice', 'f32')]"
    assert lines[1] == "refused: ops.py:20: kernel 'gelu_scaled' parameter 'x' is slice[f32], got slice[f64]"
    assert lines[2].startswith("missing: oxide: ") and "no kernel 'nope'" in lines[2]
    # the launch precondition of a DisjointSlice written at index_1d(), evaluated by launch.hpp
    assert lines[3].startswith("shape: cmkern/ops.py:") and "launch precondition failed: block.dim.y == 1" in lines[3]
    assert lines[3].endswith("(kernel 'gelu_scaled', grid 1x1x1, block 16x16x1)")


@needs_cmake
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH for CMake's CUDA language")
def test_device_library_built_by_nvcc_when_cuda_is_on(tmp_path: Path) -> None:
    """... and -C oxide.arch reaches CMake: one arch for the library and the kernels."""
    result, out = _build(tmp_path, False, "cmake.define.CMKERN_USE_NVCC=ON", "oxide.arch=sm_90")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert "Building CUDA object CMakeFiles/cmk_fastmath.dir/csrc/fastmath.cu.o" in log
    assert "Linking CUDA static library libcmk_fastmath.a" in log
    entries = _entries(out)
    assert sorted(n for n in entries if "/_oxide/" in n) == ["cmkern/_oxide/cmkern.ops.json",
                                                            "cmkern/_oxide/cmkern.ops.sm_90.cubin"]
    assert entries["cmkern/_oxide/cmkern.ops.sm_90.cubin"][:4] == b"\x7fELF"


@needs_cmake
def test_cuda_language_without_a_compiler_names_what_to_install(tmp_path: Path) -> None:
    result, _ = _build(tmp_path, True, "cmake.define.CMKERN_USE_NVCC=ON",
                       "cmake.define.CMAKE_CUDA_COMPILER=")
    log = " ".join((result.stdout + result.stderr).split())  # CMake wraps its messages
    assert result.returncode != 0
    assert "oxide: this project compiles CUDA C++ with CMake's CUDA language, and no CUDA compiler (nvcc) was found" in log
    assert "nvidia-cuda-nvcc" in log or "-DCMAKE_CUDA_COMPILER=" in log
    assert "NVRTC" in log  # the way out without a toolkit


@needs_cmake
def test_device_library_signature_is_checked_against_the_stubs(tmp_path: Path) -> None:
    """A device library CMake builds with NVRTC is compiled once more against the prototypes
    of each kernel module: a C++ signature that disagrees with its @extern fails the build."""
    result, _ = _build(tmp_path, True, edit={"csrc/fastmath.cu": (
        'extern "C" __device__ float cmk_scale(float x) { return CMK_SCALE * x; }',
        'extern "C" __device__ double cmk_scale(double x) { return CMK_SCALE * x; }')})
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "csrc/fastmath.cu:7: the C++ declaration of 'cmk_scale' does not match the @extern stub 'cmk_scale'" in log
    assert 'expects: extern "C" __device__ float cmk_scale(float x);' in log
    assert "Traceback" not in log


def test_device_lib_command_makes_a_multi_arch_ltoir_fatbin(tmp_path: Path) -> None:
    """``oxide device-lib``: one fatbin of LTO-IR that nvJitLink links for either arch."""
    from oxide_build.cli import main
    from oxide_build.compile import CompileOptions, compile_module

    (tmp_path / "lib.cu").write_text('extern "C" __device__ float dl_twice(float x) { return 2.0f * x; }\n')
    assert main(["device-lib", str(tmp_path / "lib.cu"), "-o", str(tmp_path / "lib.fatbin"),
                 "--arch", "sm_80,sm_90"]) == 0
    src = tmp_path / "k.py"
    src.write_text(
        "import oxide as ox\nfrom oxide import DisjointSlice, Slice, f32, kernel, thread\n\n"
        "@ox.extern('dl_twice')\ndef twice(x: f32) -> f32: ...\n\n"
        "@kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n"
        "    i = thread.index_1d()\n    if i < len(out):\n        out[i] = twice(x[i])\n")
    for arch in ("sm_80", "sm_90"):
        compiled = compile_module(src, "k", CompileOptions(archs=(arch,), cache=False,
                                                           link_inputs=(str(tmp_path / "lib.fatbin"),)))
        assert compiled.cubins[arch][:4] == b"\x7fELF"


def test_device_lib_depfile_names_the_included_headers(tmp_path: Path) -> None:
    from oxide_build.cli import main

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "helper.cuh").write_text("#pragma once\n__device__ inline float h(float x) { return x; }\n")
    (tmp_path / "lib.cu").write_text('#include "helper.cuh"\nextern "C" __device__ float dl_h(float x) { return h(x); }\n')
    out = tmp_path / "lib.fatbin"
    assert main(["device-lib", str(tmp_path / "lib.cu"), "-o", str(out), "--arch", "sm_90",
                 "-I", str(tmp_path / "inc"), "--depfile", str(tmp_path / "lib.d")]) == 0
    rule = (tmp_path / "lib.d").read_text()
    assert rule.startswith(f"{out}: ")
    assert str(tmp_path / "lib.cu") in rule and str(tmp_path / "inc" / "helper.cuh") in rule
    sidecar = json.loads((tmp_path / "lib.fatbin.json").read_text())
    assert sidecar == {"sources": [str(tmp_path / "lib.cu")], "include_dirs": [str(tmp_path / "inc")], "defines": []}
