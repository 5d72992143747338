"""Every build frontend a user reaches for, on a bare machine: each test makes a venv from the
base interpreter with nothing preinstalled, builds a project with ``build-backend =
"oxide_build"`` under the frontend's default build isolation (oxide-cuda from a wheel built
from this checkout once per session, everything else from the package index), installs it,
and checks that the installed package finds its GPU code (manifest and fatbin, the code the
loader picks for sm_90) without a GPU.

No CUDA toolkit is visible to any of these builds: no ``CUDA_HOME``/``CUDA_PATH``, no
directory with ``nvcc``/``ptxas`` or ``cuda`` in its name on ``PATH``; the build log's
toolchain report must name only the build environment's site-packages (never
``/usr/local/cuda``, never this test environment, which has a toolchain of its own), and the
fixture's ``.cu`` includes CUB, which then can only come from the nvidia-cuda-cccl wheel.

Marked ``frontends`` (deselect with ``-m "not frontends"``); ``OXIDE_TEST_ISOLATION=0``
skips it where there is no package index. pip and uv use their usual caches, shared by all
tests; a first run on an empty cache downloads the toolchain wheels once.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECTS = {
    "sample": (REPO / "sample_project", "oxide-sample", ["sample.kernels"]),
    "fixture": (Path(__file__).resolve().parent / "packages" / "frontend_kernels", "frontend-kernels",
                ["fkern.kernels"]),
}
# what a copy of a project or of the checkout leaves out
IGNORE = shutil.ignore_patterns(".git", ".venv*", "venv", "build", "dist", "*.egg-info", "_oxide", "__pycache__",
                                ".mypy_cache", ".pytest_cache", "out", "bench_out", ".whl", "_launcher.*.so")
TOOLCHAIN_LINE = re.compile(
    r"^(?:\W|DEBUG )*(nvJitLink|NVVM|NVRTC|nvFatbin|libdevice|libcudadevrt|CCCL headers|CUDA runtime headers): (\S+)",
    re.M)  # pip -v indents the backend's output, uv -v prefixes it with DEBUG

pytestmark = [
    pytest.mark.frontends,
    pytest.mark.skipif(os.environ.get("OXIDE_TEST_ISOLATION") == "0",
                       reason="OXIDE_TEST_ISOLATION=0: no package index to fetch build requirements from"),
]

TIMINGS: dict[str, float] = {}


def base_python() -> str:
    """The interpreter this test environment's venv was made from (the "base interpreter")."""
    return getattr(sys, "_base_executable", None) or sys.executable


def uv() -> list[str]:
    return [sys.executable, "-m", "uv"]


def without_cuda_toolkit_path(path: str) -> str:
    def is_toolkit(d: str) -> bool:
        return "cuda" in d.lower() or any((Path(d) / tool).exists() for tool in ("nvcc", "ptxas"))

    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not is_toolkit(d))


def bare_env(bin_dir: Path | None, find_links: Path) -> dict[str, str]:
    """The environment of every command here: no CUDA toolkit, nothing of this checkout or of
    this test environment, the local oxide-cuda wheel findable by pip."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_HOME", "CUDA_PATH", "PYTHONPATH", "VIRTUAL_ENV", "OXIDE_ARCH", "PYTHONHOME")}
    path = without_cuda_toolkit_path(env.get("PATH", "/usr/bin:/bin"))
    env["PATH"] = os.pathsep.join(filter(None, [str(bin_dir) if bin_dir else "", path]))
    if "LD_LIBRARY_PATH" in env:
        env["LD_LIBRARY_PATH"] = without_cuda_toolkit_path(env["LD_LIBRARY_PATH"])
    # pip here may have find-links of its own (config file or environment): keep them
    env["PIP_FIND_LINKS"] = " ".join(filter(None, [str(find_links), os.environ.get("PIP_FIND_LINKS", "")]))
    env["OXIDE_VERBOSE"] = "1"  # the toolchain block, which assert_toolchain_of_the_build_env reads
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path, what: str, timeout: int = 1200) -> str:
    started = time.perf_counter()
    result = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    TIMINGS[what] = TIMINGS.get(what, 0.0) + time.perf_counter() - started
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"{what} failed ({' '.join(map(str, cmd))}):\n{log[-6000:]}"
    return log


@pytest.fixture(scope="session")
def frontend_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frontends")


@pytest.fixture(scope="session")
def oxide_wheel_dir(frontend_dir: Path) -> Path:
    """An oxide-cuda wheel built from a copy of this checkout, once (pip, build isolation)."""
    source = frontend_dir / "oxide-cuda-src"
    shutil.copytree(REPO, source, ignore=IGNORE)
    dist = frontend_dir / "oxide-dist"
    env = bare_env(None, dist)
    run([base_python(), "-m", "pip", "wheel", "--no-deps", "-w", dist, source], env, frontend_dir, "oxide-cuda wheel")
    (wheel,) = dist.glob("oxide_cuda-*.whl")
    return dist


@pytest.fixture(scope="session", autouse=True)
def report_timings(frontend_dir: Path) -> Iterator[None]:
    yield
    if TIMINGS:
        lines = [f"{what}: {seconds:.2f} s" for what, seconds in sorted(TIMINGS.items())]
        (frontend_dir / "timings.txt").write_text("\n".join(lines) + "\n")
        print("\nfrontend matrix times:\n  " + "\n  ".join(lines) + f"\n  total: {sum(TIMINGS.values()):.1f} s")


@pytest.fixture
def compile_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh compile cache, so each build really compiles."""
    path = tmp_path / "oxide-cache"
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(path))
    return path


def make_venv(path: Path, env: dict[str, str], pip: bool = True) -> Path:
    """A venv from the base interpreter, with nothing in it but pip (nothing at all for uv,
    which installs into it from outside); its python."""
    run([base_python(), "-m", "venv", *([] if pip else ["--without-pip"]), path], env, path.parent, "venvs")
    return path / "bin" / "python"


def copy_project(name: str, tmp_path: Path) -> Path:
    source, _, _ = PROJECTS[name]
    dest = tmp_path / source.name
    shutil.copytree(source, dest, ignore=IGNORE)
    return dest


CHECK = """
import importlib, json, sys
from pathlib import Path
from oxide.runtime.artifacts import locate_manifest
from oxide.runtime.loader import select_code
result = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    found = locate_manifest(Path(module.__file__), name, lambda: "sm_90")
    choice = select_code(found.manifest.cubins, found.manifest.ptx, (9, 0), module=name)
    code = (found.directory / choice.file).read_bytes()
    result[name] = {"jit": found.jit, "source": module.__file__, "directory": str(found.directory),
                    "kind": choice.kind, "file": choice.file, "fatbin": code[:4] == bytes.fromhex("50ed55ba"),
                    "cubins": code.count(bytes.fromhex("7f454c46")),
                    "kernels": sorted({k.name for k in found.manifest.kernels})}
print("CHECK " + json.dumps(result))
"""


def check_installed(python: Path, project: str, env: dict[str, str], cwd: Path, editable_source: Path | None = None) -> None:
    """The installed package imports (so does the oxide runtime, installed as its dependency)
    and its modules find their code for sm_90 without compiling anything."""
    _, _, modules = PROJECTS[project]
    log = run([python, "-c", CHECK, *modules], env, cwd, "checks")
    (line,) = [l for l in log.splitlines() if l.startswith("CHECK ")]
    found = json.loads(line[len("CHECK "):])
    for module in modules:
        info = found[module]
        assert info["jit"] is False, info
        assert info["kind"] == "cubin" and info["fatbin"] and info["cubins"] >= 1, info
        assert info["file"] == f"{module}.fatbin", info
        if editable_source is None:
            assert "site-packages" in info["source"], info
        else:
            assert Path(info["source"]).is_relative_to(editable_source), info
            assert Path(info["directory"]).is_relative_to(editable_source), info
    if project == "fixture":
        assert found["fkern.kernels"]["kernels"] == ["saxpy", "total"]


def assert_toolchain_of_the_build_env(log: str) -> None:
    """Every piece the build used lies in the build's own (isolated) environment (these
    projects have C++: NVRTC and CCCL came through get_requires_for_build_*)."""
    pieces = dict(TOOLCHAIN_LINE.findall(log))
    assert {"nvJitLink", "NVVM", "NVRTC", "nvFatbin", "CCCL headers"} <= set(pieces), log[-4000:]
    ours = Path(sys.prefix).resolve()
    for name, path in pieces.items():
        assert "/site-packages/" in path, f"{name}: {path}"
        assert not path.startswith("/usr/local/cuda"), f"{name}: {path}"
        assert not Path(path).is_relative_to(ours), f"{name} came from the test environment: {path}"


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_pip_install_with_build_isolation(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env)
    log = run([python, "-m", "pip", "install", "-v", copy_project(project, tmp_path)], env, tmp_path, "pip install")
    assert_toolchain_of_the_build_env(log)
    check_installed(python, project, env, tmp_path)


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_pip_install_editable(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env)
    source = copy_project(project, tmp_path)
    log = run([python, "-m", "pip", "install", "-v", "-e", source], env, tmp_path, "pip install -e")
    assert_toolchain_of_the_build_env(log)
    check_installed(python, project, env, tmp_path, editable_source=source)


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_python_m_build_sdist_then_wheel(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    """``python -m build``: the sdist, then the wheel from the unpacked sdist; the sdist's
    PKG-INFO declares the runtime, and carries the C++ sources."""
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env)
    run([python, "-m", "pip", "install", "build"], env, tmp_path, "python -m build")
    out = tmp_path / "dist"
    log = run([python, "-m", "build", "-o", out, copy_project(project, tmp_path)], env, tmp_path, "python -m build")
    assert_toolchain_of_the_build_env(log)
    (sdist,) = out.glob("*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
        (pkg_info,) = [n for n in names if n.count("/") == 1 and n.endswith("/PKG-INFO")]
        metadata = tf.extractfile(pkg_info).read().decode()  # type: ignore[union-attr]
    assert re.search(r"^Requires-Dist: oxide-cuda(<0\.2,>=0\.1|>=0\.1,<0\.2)$", metadata, re.M), metadata
    if project == "fixture":
        assert any(n.endswith("fkern/csrc/block_sum.cu") for n in names), names
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert any(n.endswith(".fatbin") for n in zf.namelist())
    run([python, "-m", "pip", "install", wheel], env, tmp_path, "python -m build")
    check_installed(python, project, env, tmp_path)


def test_python_m_build_with_the_setuptools_of_a_python_311_venv(tmp_path: Path, oxide_wheel_dir: Path,
                                                                 compile_cache: Path) -> None:
    """The build environment gets setuptools 65.5 (what ``python3.11 -m venv`` brings, and what
    the ``[build]`` extra keeps next to PyTorch): the sdist is still named as PEP 625 says,
    and the wheel built from it installs and finds its code."""
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("setuptools==65.5.0\n")
    env["PIP_CONSTRAINT"] = str(constraints)  # pip applies it to the isolated build environments too
    python = make_venv(tmp_path / "venv", env)
    run([python, "-m", "pip", "install", "build"], env, tmp_path, "python -m build (setuptools 65.5)")
    out = tmp_path / "dist"
    log = run([python, "-m", "build", "-o", out, copy_project("fixture", tmp_path)], env, tmp_path,
              "python -m build (setuptools 65.5)")
    assert_toolchain_of_the_build_env(log)
    assert sorted(p.name for p in out.iterdir()) == [
        "frontend_kernels-0.1.0-py3-none-any.whl", "frontend_kernels-0.1.0.tar.gz"]
    with tarfile.open(out / "frontend_kernels-0.1.0.tar.gz") as tf:
        names = tf.getnames()
        metadata = tf.extractfile("frontend_kernels-0.1.0/PKG-INFO").read().decode()  # type: ignore[union-attr]
    assert {n.split("/", 1)[0] for n in names} == {"frontend_kernels-0.1.0"}, names
    assert metadata.startswith("Metadata-Version: 2.1\n"), "setuptools 65.5 made it (newer ones write 2.2 and up)"
    run([python, "-m", "pip", "install", out / "frontend_kernels-0.1.0-py3-none-any.whl"], env, tmp_path,
        "python -m build (setuptools 65.5)")
    check_installed(python, "fixture", env, tmp_path)


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_uv_build(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env, pip=False)
    out = tmp_path / "dist"
    log = run([*uv(), "build", "-v", "--python", python, "--find-links", oxide_wheel_dir, "-o", out,
               copy_project(project, tmp_path)], env, tmp_path, "uv build")
    assert_toolchain_of_the_build_env(log)
    (wheel,) = out.glob("*.whl")
    run([*uv(), "pip", "install", "--python", python, "--find-links", oxide_wheel_dir, wheel], env, tmp_path, "uv build")
    check_installed(python, project, env, tmp_path)


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_uv_pip_install(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    """uv reads the static [project] dependencies: the runtime must be declared there."""
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env, pip=False)
    log = run([*uv(), "pip", "install", "-v", "--python", python, "--find-links", oxide_wheel_dir,
               copy_project(project, tmp_path)], env, tmp_path, "uv pip install")
    assert_toolchain_of_the_build_env(log)
    check_installed(python, project, env, tmp_path)


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_uv_pip_install_editable(project: str, tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path) -> None:
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env, pip=False)
    source = copy_project(project, tmp_path)
    log = run([*uv(), "pip", "install", "-v", "--python", python, "--find-links", oxide_wheel_dir, "-e", source],
              env, tmp_path, "uv pip install -e")
    assert_toolchain_of_the_build_env(log)
    check_installed(python, project, env, tmp_path, editable_source=source)


def test_build_extra_resolves_to_one_cuda_release_next_to_a_pinned_nvjitlink(
        tmp_path: Path, oxide_wheel_dir: Path) -> None:
    """PyTorch pins nvidia-nvjitlink (torch 2.11: 13.0.x); ``oxide-cuda[build]`` next to that pin
    must resolve to LTO-IR producers of the same release, not the newest nvidia-nvvm."""
    env = bare_env(None, oxide_wheel_dir)
    report = tmp_path / "report.json"
    run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", report,
         "oxide-cuda[build,cpp]", "nvidia-nvjitlink==13.0.88"], env, tmp_path, "resolve [build] with a pin")
    chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert chosen["nvidia-nvjitlink"] == "13.0.88"
    for producer in ("nvidia-nvvm", "nvidia-cuda-nvrtc"):
        assert chosen[producer].startswith("13.0."), chosen
    assert "nvidia-cuda-cccl" in chosen, chosen


def test_an_isolated_build_of_a_project_without_cpp_installs_no_cpp_toolchain(
    tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path
) -> None:
    """pure_kernel has Python kernels only: its isolated build gets the [build] extra and no
    NVRTC, CCCL or cuRAND (get_requires_for_build_wheel adds them only for C++); a project with
    C++ (the others here) gets them from the same hook."""
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env)
    project = tmp_path / "pure_kernel"
    shutil.copytree(Path(__file__).resolve().parent / "packages" / "pure_kernel", project, ignore=IGNORE)
    out = tmp_path / "wheels"
    log = run([python, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out, project], env, tmp_path,
              "pip wheel (no C++)")
    assert re.search(r"NVRTC: not found \(pip install nvidia-cuda-nvrtc\)", log), log[-4000:]
    assert re.search(r"CCCL headers: not found", log), log[-4000:]
    assert "nvidia-curand" not in log and "nvidia_curand" not in log, log[-4000:]
    pieces = dict(TOOLCHAIN_LINE.findall(log))
    assert pieces["nvJitLink"].endswith("libnvJitLink.so.13"), log[-4000:]
    (wheel,) = out.glob("pure_kernel-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert "purekernel/_oxide/purekernel.ops.json" in zf.namelist()


# A CUDA 12 build environment, from PyPI (docs/toolchain.md, "Building for CUDA 12 drivers"):
# cuda-bindings 12 drives the -cu12 wheels' libraries; oxide-cuda itself comes without its
# dependencies, which name the CUDA 13 runtime bindings.
CUDA12_BUILD_ENVIRONMENT = [
    "cuda-bindings>=12.8,<13", "cuda-pathfinder>=1.3", "llvmlite>=0.45", "packaging>=22",
    "setuptools>=64", "wheel",
    "nvidia-nvjitlink-cu12>=12.8,<13", "nvidia-cuda-nvrtc-cu12>=12.8,<13", "nvidia-cuda-nvcc-cu12>=12.8,<13",
    "nvidia-nvfatbin-cu12>=12.8,<13", "nvidia-cuda-cccl-cu12>=12.8,<13", "nvidia-cuda-runtime-cu12>=12.8,<13",
]


def test_the_cuda_12_toolchain_from_pypi_builds_for_cuda_12_drivers(
    tmp_path: Path, oxide_wheel_dir: Path, compile_cache: Path
) -> None:
    env = bare_env(tmp_path / "venv" / "bin", oxide_wheel_dir)
    python = make_venv(tmp_path / "venv", env)
    run([python, "-m", "pip", "install", *CUDA12_BUILD_ENVIRONMENT], env, tmp_path, "cuda 12 environment")
    (wheel,) = oxide_wheel_dir.glob("oxide_cuda-*.whl")
    run([python, "-m", "pip", "install", "--no-deps", wheel], env, tmp_path, "cuda 12 environment")
    project = tmp_path / "cu_linked"
    shutil.copytree(Path(__file__).resolve().parent / "packages" / "cu_linked", project, ignore=IGNORE)
    out = tmp_path / "wheels"
    log = run([python, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", out, project],
              env, tmp_path, "cuda 12 build")
    pieces = dict(TOOLCHAIN_LINE.findall(log))
    assert pieces["nvJitLink"].endswith("nvidia/nvjitlink/lib/libnvJitLink.so.12"), log[-4000:]
    assert pieces["NVVM"].endswith("nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"), log[-4000:]
    assert pieces["NVRTC"].endswith("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"), log[-4000:]
    assert re.search(r"nvJitLink: \S+ \[nvidia-nvjitlink-cu12 12\.\d+", log), log[-4000:]
    (built,) = out.glob("cu_linked-*.whl")
    with zipfile.ZipFile(built) as zf:
        manifest = json.loads(zf.read("culinked/_oxide/culinked.ops.json"))
        cubin = zf.read("culinked/_oxide/culinked.ops.sm_90.cubin")
    assert manifest["cuda_driver"] == 12000  # loads on every CUDA 12 driver (R525 and newer)
    assert cubin[:4] == b"\x7fELF"
