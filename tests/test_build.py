"""The PEP 517 / 660 backend (``build-backend = "oxide_build"``), its configuration, and the
sample project, on the fixture projects under ``tests/packages/``. CPU only: every build
compiles real cubins, nothing is launched (except by the gpu-marked test)."""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oxide.runtime.manifest import ModuleManifest
from oxide_build.config import ConfigError, OxideConfig, load_config, parse_config

REPO = Path(__file__).resolve().parents[1]
PACKAGES = Path(__file__).resolve().parent / "packages"
SAMPLE = REPO / "sample_project"
EPOCH = "1700000000"  # 2023-11-14 22:13:20 UTC
KEYS = (
    "arch, backend, bounds-check, build-dir, cache-dir, cmake-kernels, defines, editable-mode, editable-rebuild, editable-verbose, fast-math, fatbin, fma, include-dirs, jobs, "
    "lineinfo, link, logging-level, max-registers, minimum-version, nvrtc-options, opt-level, packages, ptx, verbose"
)


def copy_project(src: Path, tmp_path: Path) -> Path:
    """A fresh copy, so builds leave nothing (build/, *.egg-info, _oxide/) in the repository."""
    dest = tmp_path / src.name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "_oxide", "__pycache__"))
    return dest


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment with the checkout's oxide and oxide_build first on the path, and builds
    verbose (OXIDE_VERBOSE=1: the toolchain block and a line per unit, which tests look at)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("OXIDE_ARCH", None)
    env.pop("SOURCE_DATE_EPOCH", None)
    env["OXIDE_VERBOSE"] = "1"
    env.update(extra)
    return env


def wheel_entries(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def metadata_of(entries: dict[str, bytes]) -> str:
    (name,) = [n for n in entries if n.endswith(".dist-info/METADATA")]
    return entries[name].decode()


def requires_dist(metadata: str) -> list[str]:
    headers = metadata.split("\n\n", 1)[0]
    return [line.split(":", 1)[1].strip() for line in headers.splitlines() if line.startswith("Requires-Dist:")]


RUNTIME = ("oxide-cuda", "<0.2,>=0.1")  # what the fixtures declare: oxide-cuda>=0.1,<0.2


def runtime_requirements(metadata: str) -> list[tuple[str, str]]:
    """(name, specifier) of each Requires-Dist on oxide-cuda, specifiers in a canonical order."""
    from packaging.requirements import Requirement

    found = [Requirement(r) for r in requires_dist(metadata)]
    return [(r.name, ",".join(sorted(str(s) for s in r.specifier))) for r in found if r.name == "oxide-cuda"]


def assert_record_matches(entries: dict[str, bytes]) -> None:
    (record_name,) = [n for n in entries if n.endswith(".dist-info/RECORD")]
    rows = list(csv.reader(io.StringIO(entries[record_name].decode())))
    listed = {row[0]: row for row in rows}
    assert set(listed) == set(entries), "RECORD must list exactly the files of the wheel"
    for name, data in entries.items():
        _, digest, size = listed[name]
        if name == record_name:
            assert (digest, size) == ("", "")
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}", name
        assert size == str(len(data)), name


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


@dataclass(frozen=True)
class HookResult:
    value: Any
    stderr: str


class HookFailed(Exception):
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        super().__init__(f"hook exited with {returncode}\n{stdout}\n{stderr}")
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def call_hook(project: Path, hook: str, *args: Any, **env: str) -> HookResult:
    """Calls ``oxide_build.<hook>(*args)`` the way a build frontend does: in a fresh Python
    process whose working directory is the project (setuptools cannot build twice in one
    process)."""
    code = (
        "import json, sys, oxide_build\n"
        f"value = oxide_build.{hook}(*json.loads(sys.argv[1]))\n"
        "print('HOOK-RESULT ' + json.dumps(value))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        cwd=project,
        capture_output=True,
        text=True,
        env=subprocess_env(**env),
        timeout=600,
    )
    if result.returncode != 0:
        raise HookFailed(result.returncode, result.stdout, result.stderr)
    (line,) = [l for l in result.stdout.splitlines() if l.startswith("HOOK-RESULT ")]
    return HookResult(json.loads(line[len("HOOK-RESULT "):]), result.stderr)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test starts with an empty compile cache of its own (builds in subprocesses
    inherit it), so progress lines say what a first build says."""
    path = tmp_path_factory.mktemp("oxide-cache")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(path))
    monkeypatch.delenv("OXIDE_NO_CACHE", raising=False)
    return path


@pytest.fixture
def pure_kernel(tmp_path: Path) -> Path:
    """A fresh copy of the pure-Python fixture project."""
    return copy_project(PACKAGES / "pure_kernel", tmp_path)


# --- the hooks --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["wheel", "sdist", "editable"])
def test_get_requires_delegates_to_setuptools(pure_kernel: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from setuptools import build_meta

    ours = call_hook(pure_kernel, f"get_requires_for_build_{kind}", {"oxide.arch": "sm_90"}).value
    monkeypatch.chdir(pure_kernel)
    theirs = getattr(build_meta, f"get_requires_for_build_{kind}")(None)
    assert isinstance(ours, list)
    assert ours == list(theirs)


@pytest.mark.parametrize("kind", ["wheel", "editable"])
def test_prepare_metadata_keeps_the_declared_runtime_requirement(pure_kernel: Path, tmp_path: Path, kind: str) -> None:
    out = tmp_path / "meta"
    out.mkdir()
    dist_info = call_hook(pure_kernel, f"prepare_metadata_for_build_{kind}", str(out)).value
    assert dist_info == "pure_kernel-1.2.3.dist-info"
    metadata = (out / dist_info / "METADATA").read_text()
    assert "Name: pure-kernel" in metadata
    assert runtime_requirements(metadata) == [RUNTIME]


def test_build_sdist(pure_kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    out.mkdir()
    name = call_hook(pure_kernel, "build_sdist", str(out)).value
    assert name == "pure_kernel-1.2.3.tar.gz"
    with tarfile.open(out / name) as tf:
        names = tf.getnames()
    assert "pure_kernel-1.2.3/purekernel/ops.py" in names
    assert "pure_kernel-1.2.3/pyproject.toml" in names
    assert not [n for n in names if "_oxide" in n]


def test_build_wheel_adds_artifacts(pure_kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheels"
    out.mkdir()
    result = call_hook(pure_kernel, "build_wheel", str(out))
    name = result.value
    assert name == "pure_kernel-1.2.3-py3-none-any.whl"
    entries = wheel_entries(out / name)

    manifest = ModuleManifest.from_json(entries["purekernel/_oxide/purekernel.ops.json"].decode())
    assert manifest.module == "purekernel.ops"
    assert manifest.source == "ops.py"
    assert manifest.source_sha256 == hashlib.sha256((pure_kernel / "purekernel/ops.py").read_bytes()).hexdigest()
    assert {k.name for k in manifest.kernels} == {"scale"}
    assert sorted(manifest.cubins) == ["sm_80", "sm_90"]
    for arch, file in manifest.cubins.items():
        assert file == f"purekernel.ops.{arch}.cubin"
        assert is_elf(entries[f"purekernel/_oxide/{file}"])
    # only modules with kernels get artifacts; the Python files are all there
    assert sorted(n for n in entries if "/_oxide/" in n) == [
        "purekernel/_oxide/purekernel.ops.json",
        "purekernel/_oxide/purekernel.ops.sm_80.cubin",
        "purekernel/_oxide/purekernel.ops.sm_90.cubin",
    ]
    assert {"purekernel/__init__.py", "purekernel/ops.py", "purekernel/plain.py"} <= set(entries)

    assert runtime_requirements(metadata_of(entries)) == [RUNTIME]
    assert_record_matches(entries)
    names = list(entries)
    assert names[-1] == "pure_kernel-1.2.3.dist-info/RECORD"
    assert not list(pure_kernel.rglob("_oxide")), "a wheel build must not write into the source tree"

    units = re.findall(r"^\[(\d)/2\] purekernel\.ops (sm_\d+) … \d+ ms$", result.stderr, re.M)
    assert sorted(units) == [("1", "sm_80"), ("2", "sm_90")] or sorted(units) == [("1", "sm_90"), ("2", "sm_80")], result.stderr
    assert re.search(
        r"^oxide: compiled 1 kernel in 1 module for sm_80,sm_90 in [\d.]+ s \(2 units, 0 from cache, [12] jobs?\)$",
        result.stderr, re.M,
    ), result.stderr


def cubins_in(wheel: Path) -> list[str]:
    return sorted(n.rsplit("/", 1)[1] for n in wheel_entries(wheel) if n.endswith(".cubin"))


def test_build_wheel_arch_overrides(pure_kernel: Path, tmp_path: Path) -> None:
    # OXIDE_ARCH overrides pyproject.toml; a config setting overrides both
    env_only = tmp_path / "env"
    env_only.mkdir()
    name = call_hook(pure_kernel, "build_wheel", str(env_only), None, OXIDE_ARCH="sm_86").value
    assert cubins_in(env_only / name) == ["purekernel.ops.sm_86.cubin"]

    setting = tmp_path / "setting"
    setting.mkdir()
    name = call_hook(pure_kernel, "build_wheel", str(setting), {"oxide.arch": "sm_90,sm_120"}, OXIDE_ARCH="sm_86").value
    assert cubins_in(setting / name) == ["purekernel.ops.sm_120.cubin", "purekernel.ops.sm_90.cubin"]
    manifest = json.loads(wheel_entries(setting / name)["purekernel/_oxide/purekernel.ops.json"])
    assert sorted(manifest["cubins"]) == ["sm_120", "sm_90"]


def test_build_wheel_is_reproducible(pure_kernel: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    name = call_hook(pure_kernel, "build_wheel", str(first), SOURCE_DATE_EPOCH=EPOCH).value
    shutil.rmtree(pure_kernel / "build", ignore_errors=True)  # the second build starts clean
    assert call_hook(pure_kernel, "build_wheel", str(second), SOURCE_DATE_EPOCH=EPOCH).value == name
    assert (first / name).read_bytes() == (second / name).read_bytes()
    with zipfile.ZipFile(first / name) as zf:
        infos = zf.infolist()
    assert {i.date_time for i in infos} == {(2023, 11, 14, 22, 13, 20)}
    body = [i.filename for i in infos if ".dist-info/" not in i.filename]
    assert body == sorted(body)


def test_build_editable_compiles_next_to_sources(pure_kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheels"
    out.mkdir()
    name = call_hook(pure_kernel, "build_editable", str(out)).value
    assert name.startswith("pure_kernel-1.2.3-")
    artifacts = pure_kernel / "purekernel" / "_oxide"
    assert sorted(p.name for p in artifacts.iterdir()) == [
        "purekernel.ops.json",
        "purekernel.ops.sm_80.cubin",
        "purekernel.ops.sm_90.cubin",
    ]
    assert is_elf((artifacts / "purekernel.ops.sm_90.cubin").read_bytes())
    entries = wheel_entries(out / name)
    assert runtime_requirements(metadata_of(entries)) == [RUNTIME]
    assert_record_matches(entries)


def test_src_layout_keeps_existing_requirement(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "src_layout", tmp_path)
    out = tmp_path / "wheels"
    out.mkdir()
    entries = wheel_entries(out / call_hook(project, "build_wheel", str(out)).value)
    assert sorted(n for n in entries if "/_oxide/" in n) == [
        "srckernel/_oxide/srckernel.fill.json",
        "srckernel/_oxide/srckernel.fill.sm_90.cubin",
    ]
    assert runtime_requirements(metadata_of(entries)) == [RUNTIME]


def test_config_error_fails_build_without_traceback(pure_kernel: Path, tmp_path: Path) -> None:
    pyproject = pure_kernel / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('arch = ["sm_80", "sm_90"]', 'archs = ["sm_90"]'))
    with pytest.raises(HookFailed) as exc:
        call_hook(pure_kernel, "build_wheel", str(tmp_path))
    assert exc.value.returncode == 1
    line = pyproject.read_text().splitlines().index('archs = ["sm_90"]') + 1  # the error names it
    assert exc.value.stderr.strip().splitlines() == [
        f"pyproject.toml:{line}: [tool.oxide]: unknown key 'archs'; allowed keys: {KEYS}",
        "",
        "oxide: build failed",
    ]
    assert not list(tmp_path.glob("*.whl"))


def test_compile_error_fails_pip_wheel_with_diagnostic(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "compile_error", tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "w"), str(project)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert re.search(r"kernels\.py:8:\d+: error: ", output), output
    assert "not_defined_anywhere" in output
    assert "oxide: build failed" in output
    assert "Traceback" not in output
    assert not (tmp_path / "w").exists() or not list((tmp_path / "w").glob("*.whl"))


# --- the sample project -----------------------------------------------------------------------


def test_sample_project_pip_wheel(tmp_path: Path) -> None:
    project = copy_project(SAMPLE, tmp_path)
    out = tmp_path / "wheels"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", str(out), str(project)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\[[12]/2\] sample\.kernels sm_80 … \d+ ms", result.stdout + result.stderr)
    assert re.search(r"\[[12]/2\] sample\.kernels sm_90 … \d+ ms", result.stdout + result.stderr)
    (wheel,) = out.glob("oxide_sample-0.1.0-*.whl")
    entries = wheel_entries(wheel)
    manifest = ModuleManifest.from_json(entries["sample/_oxide/sample.kernels.json"].decode())
    # one fatbin per module holds both archs' cubins (the default; fatbin = false ships a file per arch)
    assert manifest.cubins == {"sm_80": "sample.kernels.fatbin", "sm_90": "sample.kernels.fatbin"}
    fatbin = entries["sample/_oxide/sample.kernels.fatbin"]
    assert fatbin[:4] == b"\x50\xed\x55\xba"  # the fatbin magic
    assert fatbin.count(b"\x7fELF") == 2  # one cubin per arch inside
    assert not any(n.endswith(".cubin") for n in entries)
    # the generic kernel is compiled once per TypeVar constraint
    assert sorted(k.specialization.get("T", "") for k in manifest.kernels_named("saxpy")) == ["f32", "f64"]
    assert {"sample/__init__.py", "sample/__main__.py", "sample/kernels.py", "sample/ops.py"} <= set(entries)
    # the pybind11 module CMake built, which launches a Python kernel from C++
    assert [n for n in entries if n.startswith("sample/_native.") and n.endswith((".so", ".pyd"))]
    assert {k.name for k in manifest.kernels} == {"saxpy", "gelu_forward", "gelu_cpp", "softmax_rows",
                                                  "histogram256", "dropout_forward", "box_blur3"}
    assert runtime_requirements(metadata_of(entries)) == [RUNTIME]
    assert_record_matches(entries)


def gpu_unavailable_reason() -> str | None:
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return str(err)
        err, count = driver.cuDeviceGetCount()
        return None if err == driver.CUresult.CUDA_SUCCESS and count > 0 else "no device"
    except Exception as exc:  # no libcuda: no driver
        return str(exc) or type(exc).__name__


def run_sample(project: Path) -> subprocess.CompletedProcess[str]:
    env = subprocess_env()
    env["PYTHONPATH"] = os.pathsep.join([str(project), env["PYTHONPATH"]])
    return subprocess.run(
        [sys.executable, "-m", "sample"], capture_output=True, text=True, env=env, cwd=project, timeout=600
    )


def test_sample_reports_missing_gpu(tmp_path: Path) -> None:
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present; test_sample_runs_on_gpu covers this machine")
    result = run_sample(copy_project(SAMPLE, tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("no CUDA GPU available: "), result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.gpu
def test_sample_runs_on_gpu(tmp_path: Path) -> None:
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no CUDA GPU: {reason}")
    from oxide_build.build import compile_project

    project = copy_project(SAMPLE, tmp_path)
    compile_project(project, load_config(project), staging_dir=None)
    result = run_sample(project)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["op", "array", "size", "time", "max", "error", "ok"]
    table = [line.split() for line in lines[1:-1]]
    assert {row[0] for row in table} >= {"gelu", "softmax", "histogram", "dropout", "blur", "saxpy"}
    assert lines[-1] == "OK"


# --- configuration ----------------------------------------------------------------------------


def test_config_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert config == OxideConfig()
    options = config.compile_options()
    assert options.archs == ("sm_80", "sm_90")
    assert (options.opt_level, options.bounds_check, options.embed_ptx) == (3, True, False)


def test_config_from_pyproject_env_and_settings(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.oxide]\n"
        'arch = ["sm_90", "sm_80", "sm_90"]\n'
        'packages = ["mypkg"]\n'
        "ptx = true\n"
        "opt-level = 1\n"
        "bounds-check = false\n"
    )
    config = load_config(tmp_path, environ={})
    assert config == OxideConfig(arch=("sm_90", "sm_80"), packages=("mypkg",), ptx=True, opt_level=1, bounds_check=False)
    options = config.compile_options()
    assert (options.archs, options.opt_level, options.bounds_check, options.embed_ptx) == (("sm_90", "sm_80"), 1, False, True)

    assert load_config(tmp_path, environ={"OXIDE_ARCH": "sm_100, sm_120"}).arch == ("sm_100", "sm_120")
    overridden = load_config(
        tmp_path,
        {"oxide.arch": ["sm_86", "sm_89"], "oxide.opt-level": "0", "oxide.ptx": "false", "--build-option": "x"},
        environ={"OXIDE_ARCH": "sm_100"},
    )
    assert overridden.arch == ("sm_86", "sm_89")
    assert (overridden.opt_level, overridden.ptx, overridden.bounds_check) == (0, False, False)


ARCHS = "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"archs": ["sm_90"]},
            f"pyproject.toml [tool.oxide]: unknown key 'archs'; allowed keys: {KEYS}",
        ),
        ({"arch": ["sm_75"]}, f"pyproject.toml [tool.oxide]: arch 'sm_75' is not supported; supported archs: {ARCHS}"),
        ({"arch": "sm_90"}, f"pyproject.toml [tool.oxide]: arch = 'sm_90' is not allowed; expected a list of archs from {ARCHS}"),
        ({"arch": []}, f"pyproject.toml [tool.oxide]: arch = [] is not allowed; expected a list of archs from {ARCHS}"),
        ({"opt-level": 4}, "pyproject.toml [tool.oxide]: opt-level = 4 is not allowed; expected an integer from 0 to 3"),
        ({"opt-level": True}, "pyproject.toml [tool.oxide]: opt-level = True is not allowed; expected an integer from 0 to 3"),
        ({"ptx": "yes"}, "pyproject.toml [tool.oxide]: ptx = 'yes' is not allowed; expected true or false"),
        ({"bounds-check": 1}, "pyproject.toml [tool.oxide]: bounds-check = 1 is not allowed; expected true or false"),
        (
            {"packages": ["my-pkg"]},
            "pyproject.toml [tool.oxide]: packages = ['my-pkg'] is not allowed; expected a list of top-level package names",
        ),
    ],
)
def test_config_errors(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(table)
    assert str(exc.value) == message


def test_config_errors_name_their_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path, environ={"OXIDE_ARCH": "sm_90,compute_90"})
    assert str(exc.value) == f"environment variable OXIDE_ARCH: arch 'compute_90' is not supported; supported archs: {ARCHS}"
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path, {"oxide.opt-level": "fast"}, environ={})
    assert str(exc.value) == "config setting oxide.opt-level: opt-level = 'fast' is not allowed; expected an integer from 0 to 3"
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path, {"oxide.archs": "sm_90"}, environ={})
    assert str(exc.value) == (
        f"config setting oxide.archs: unknown key 'archs'; allowed keys: {KEYS}"
    )


# --- more configuration -----------------------------------------------------------------------


def test_config_new_keys_reach_compile_options(tmp_path: Path) -> None:
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "b.cu").write_text("")
    (tmp_path / "csrc" / "a.cu").write_text("")
    (tmp_path / "include").mkdir()  # a missing include dir is an error (tests/test_front_door.py)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.oxide]\n"
        'link = ["csrc/*.cu"]\n'
        'include-dirs = ["include"]\n'
        'defines = ["A", "B=2"]\n'
        'nvrtc-options = ["-std=c++20"]\n'
        'backend = "nvvm"\n'
        "fast-math = true\n"
        "lineinfo = true\n"
        "max-registers = 64\n"
        "jobs = 3\n"
    )
    config = load_config(tmp_path, environ={})
    assert config.job_count == 3
    options = config.compile_options(tmp_path)
    assert options.link_inputs == (str(tmp_path / "csrc/a.cu"), str(tmp_path / "csrc/b.cu"))
    assert options.include_dirs == (str(tmp_path / "include"),)
    assert (options.defines, options.nvrtc_options, options.backend) == (("A", "B=2"), ("-std=c++20",), "nvvm")
    assert (options.fast_math, options.lineinfo, options.max_registers) == (True, True, 64)

    overridden = load_config(
        tmp_path,
        {"oxide.backend": "nvptx", "oxide.jobs": "1", "oxide.max-registers": "128", "oxide.defines": "X,Y=1",
         "oxide.fast-math": "off"},
        environ={},
    )
    assert (overridden.backend, overridden.jobs, overridden.max_registers) == ("nvptx", 1, 128)
    assert (overridden.defines, overridden.fast_math) == (("X", "Y=1"), False)
    assert OxideConfig().job_count >= 1


def test_config_link_glob_matching_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.oxide]\nlink = ["csrc/*.cu"]\n')
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path, environ={}).compile_options(tmp_path)
    assert "link = ['csrc/*.cu']: 'csrc/*.cu' matches no file" in str(exc.value)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"backend": "ptx"}, "backend = 'ptx' is not allowed; expected 'nvptx' or 'nvvm'"),
        ({"link": "csrc/a.cu"}, "link = 'csrc/a.cu' is not allowed; expected a list of globs relative to the project root"),
        ({"include-dirs": ["/usr/include"]}, "include-dirs = ['/usr/include'] is not allowed; expected a list of paths relative to the project root"),
        ({"include-dirs": ["../x"]}, "include-dirs = ['../x'] is not allowed; expected a list of paths relative to the project root"),
        ({"defines": ["1X"]}, "defines = ['1X'] is not allowed; expected a list of \"NAME\" or \"NAME=VALUE\""),
        ({"nvrtc-options": [3]}, "nvrtc-options = [3] is not allowed; expected a list of strings"),
        ({"fast-math": "true"}, "fast-math = 'true' is not allowed; expected true or false"),
        ({"lineinfo": 0}, "lineinfo = 0 is not allowed; expected true or false"),
        ({"max-registers": 8}, "max-registers = 8 is not allowed; expected an integer from 16 to 255"),
        ({"jobs": 0}, "jobs = 0 is not allowed; expected a positive integer"),
        ({"jobs": "4"}, "jobs = '4' is not allowed; expected a positive integer"),
    ],
)
def test_config_errors_new_keys(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(table)
    assert str(exc.value) == f"pyproject.toml [tool.oxide]: {message}"


def test_configuration_reference_is_current() -> None:
    from oxide_build.config import settings_docs, settings_reference

    text = (REPO / "docs" / "configuration.md").read_text()
    begin, end = "<!-- settings-reference: begin -->\n", "<!-- settings-reference: end -->"
    body = text[text.index(begin) + len(begin): text.index(end)]
    assert body == settings_reference(), (
        "docs/configuration.md is stale: regenerate the reference with oxide_build.config.settings_reference()"
    )
    docs = settings_docs()
    assert [d.key for d in docs] == [f.replace("_", "-") for f in OxideConfig.__dataclass_fields__]
    assert all(d.doc for d in docs), "every [tool.oxide] key needs a field docstring"


# --- parallel units and the cache -------------------------------------------------------------


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_parallel_build_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io as _io

    from oxide_build.build import compile_project

    project = tmp_path / "proj"
    # not cub_reduce (C++ interop), the wgmma GEMMs and attention (sm_90a only: a build for sm_80/sm_90 refuses
    # them) nor mma_gemm_fp8.py (sm_89+: tests/test_sass.py builds it for sm_89 and sm_90)
    shutil.copytree(REPO / "examples", project / "ex",
                    ignore=shutil.ignore_patterns("__pycache__", "_oxide", "cub_reduce", "wgmma_*.py", "mma_gemm_fp8.py"))
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    outputs = []
    for jobs in (1, 2):
        staging = tmp_path / f"jobs{jobs}"
        log = _io.StringIO()
        build = compile_project(project, OxideConfig(arch=("sm_80", "sm_90"), fatbin=False, verbose=True), staging, log=log, jobs=jobs)
        # a unit per module (or part of a module's kernels: package/module_parts.py) and arch
        assert build.units > 2 * len(build.modules) and build.units % 2 == 0 and build.jobs == jobs
        lines = [line for line in log.getvalue().splitlines() if line.startswith("[")]
        assert len(lines) == build.units
        assert all(re.fullmatch(r"\[\d+/\d+\] ex\.[\w.]+(\[\w+\.\.\w+\])? sm_[89]0 … \d+ ms", line) for line in lines), lines
        outputs.append(tree_bytes(staging))
    assert outputs[0] == outputs[1]
    assert len([n for n in outputs[0] if n.endswith(".cubin")]) == build.units


def unit_lines(stderr: str) -> list[str]:
    return sorted(re.sub(r"^\[\d+/\d+\] ", "", line) for line in stderr.splitlines() if re.match(r"^\[\d+/\d+\] ", line))


def test_rebuild_comes_from_cache_until_an_import_changes(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "scanproj", tmp_path)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "scanproj"\nversion = "1"\ndependencies = ["oxide-cuda>=0.1,<0.2"]\n[tool.setuptools]\npackages = ["mylib", "mylib.sub"]\n'
        '[tool.oxide]\narch = ["sm_90"]\n'
    )
    out = tmp_path / "w"
    out.mkdir()
    first = call_hook(project, "build_wheel", str(out), SOURCE_DATE_EPOCH=EPOCH)
    wheel_one = (out / first.value).read_bytes()
    assert unit_lines(first.stderr) and all(line.endswith(" ms") for line in unit_lines(first.stderr))
    second = call_hook(project, "build_wheel", str(out), SOURCE_DATE_EPOCH=EPOCH)
    assert all(line.endswith("… cached") for line in unit_lines(second.stderr)), second.stderr
    assert (out / second.value).read_bytes() == wheel_one
    # a device function the kernels import from another module changes: they are recompiled
    helpers = project / "mylib" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# changed\n")
    third = call_hook(project, "build_wheel", str(out), SOURCE_DATE_EPOCH=EPOCH)
    assert any(line.endswith(" ms") for line in unit_lines(third.stderr)), third.stderr


# --- C++ linked through [tool.oxide] ----------------------------------------------------------


def test_cu_linked_wheel_and_header_change(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "cu_linked", tmp_path)
    out = tmp_path / "w"
    out.mkdir()
    result = call_hook(project, "build_wheel", str(out))
    entries = wheel_entries(out / result.value)
    assert result.value == "cu_linked-0.2.0-py3-none-any.whl"
    assert is_elf(entries["culinked/_oxide/culinked.ops.sm_90.cubin"])
    assert unit_lines(result.stderr) == [f"culinked.ops sm_90 … {unit_lines(result.stderr)[0].rsplit('… ', 1)[1]}"]
    # a header reached through include-dirs changes: the unit is not taken from the cache
    header = project / "include" / "scale_impl.cuh"
    header.write_text(header.read_text().replace("CL_FACTOR * x", "CL_FACTOR * x + 1.0f"))
    again = call_hook(project, "build_wheel", str(out))
    assert unit_lines(again.stderr)[0].endswith(" ms"), again.stderr
    assert wheel_entries(out / again.value)["culinked/_oxide/culinked.ops.sm_90.cubin"] != entries[
        "culinked/_oxide/culinked.ops.sm_90.cubin"
    ]


def test_link_error_fails_build_with_diagnostic(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "cu_linked", tmp_path)
    source = project / "csrc" / "scale.cu"
    source.write_text(source.read_text().replace("return culinked::scale(x);", "return culinked::scale(x) +;"))
    with pytest.raises(HookFailed) as exc:
        call_hook(project, "build_wheel", str(tmp_path))
    stderr = exc.value.stderr
    assert exc.value.returncode == 1
    assert re.search(r"scale\.cu\(?:?\d+", stderr), stderr
    assert "oxide: build failed" in stderr
    assert "Traceback" not in stderr


def test_missing_toolchain_names_the_package(pure_kernel: Path, tmp_path: Path) -> None:
    # a stand-in llvmlite that cannot be imported, first on the path
    fake = tmp_path / "fake"
    (fake / "llvmlite").mkdir(parents=True)
    (fake / "llvmlite" / "__init__.py").write_text("raise ImportError('no llvmlite here')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])}
    with pytest.raises(HookFailed) as exc:
        call_hook(pure_kernel, "build_wheel", str(tmp_path), **env)
    stderr = exc.value.stderr
    assert "llvmlite is not installed: pip install 'oxide-cuda[build]'" in stderr, stderr
    assert "Traceback" not in stderr


# --- CMake projects ---------------------------------------------------------------------------


def cmake_toolchain_missing() -> str | None:
    import importlib.util

    for module in ("scikit_build_core", "pybind11"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'oxide-cuda[cmake]')"
    if shutil.which("cmake") is None and importlib.util.find_spec("cmake") is None:
        return "cmake is not installed"
    return None


def test_cmake_project_without_scikit_build_core_names_the_extra(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "cmake_pybind", tmp_path)
    fake = tmp_path / "fake"
    (fake / "scikit_build_core").mkdir(parents=True)
    (fake / "scikit_build_core" / "__init__.py").write_text("raise ImportError('not here')\n")
    with pytest.raises(HookFailed) as exc:
        call_hook(project, "get_requires_for_build_wheel", None, PYTHONPATH=os.pathsep.join([str(fake), str(REPO)]))
    assert "pip install 'oxide-cuda[cmake]'" in exc.value.stderr
    assert "Traceback" not in exc.value.stderr


def test_cmake_pybind_pip_wheel(tmp_path: Path) -> None:
    reason = cmake_toolchain_missing()
    if reason is not None:
        pytest.skip(reason)
    project = copy_project(PACKAGES / "cmake_pybind", tmp_path)
    out = tmp_path / "wheels"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", str(out), str(project),
         "-C", "oxide.arch=sm_80,sm_90", "-C", "cmake.define.CMAKE_CXX_FLAGS=-DOXIDE_FIXTURE=1"],
        capture_output=True, text=True, env=subprocess_env(), timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "cmakepb.kernels sm_90 …" in output
    (wheel,) = out.glob("cmake_pybind-0.3.0-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), "a host extension gets the platform tag"
    entries = wheel_entries(wheel)
    assert [n for n in entries if n.startswith("cmakepb/_host.") and n.endswith((".so", ".pyd"))]
    assert sorted(n for n in entries if "/_oxide/" in n) == [
        "cmakepb/_oxide/cmakepb.kernels.json",
        "cmakepb/_oxide/cmakepb.kernels.sm_80.cubin",
        "cmakepb/_oxide/cmakepb.kernels.sm_90.cubin",
    ]
    assert runtime_requirements(metadata_of(entries)) == [RUNTIME]
    assert_record_matches(entries)
    # the host extension works
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    check = subprocess.run([sys.executable, "-c", "import cmakepb._host as h; print(h.blocks_for(1000, 256))"],
                           capture_output=True, text=True, cwd=site, timeout=60)
    assert check.stdout.strip() == "4", check.stderr


def test_cmake_pybind_sdist(tmp_path: Path) -> None:
    if cmake_toolchain_missing() is not None:
        pytest.skip(str(cmake_toolchain_missing()))
    project = copy_project(PACKAGES / "cmake_pybind", tmp_path)
    (project / "cmakepb" / "_oxide").mkdir()
    (project / "cmakepb" / "_oxide" / "stale.json").write_text("{}")
    out = tmp_path / "dist"
    out.mkdir()
    name = call_hook(project, "build_sdist", str(out)).value
    with tarfile.open(out / name) as tf:
        names = set(tf.getnames())
    prefix = name[: -len(".tar.gz")]
    assert {f"{prefix}/CMakeLists.txt", f"{prefix}/src/host.cpp", f"{prefix}/cmakepb/kernels.py"} <= names
    assert not [n for n in names if "_oxide" in n]


# --- sdist round trip -------------------------------------------------------------------------


def test_sdist_round_trip_gives_the_same_wheel(tmp_path: Path) -> None:
    project = copy_project(PACKAGES / "cu_linked", tmp_path)
    # leftovers of an editable install must not travel
    (project / "culinked" / "_oxide").mkdir()
    (project / "culinked" / "_oxide" / "culinked.ops.sm_80.cubin").write_bytes(b"stale")
    dist = tmp_path / "dist"
    dist.mkdir()
    sdist = call_hook(project, "build_sdist", str(dist), SOURCE_DATE_EPOCH=EPOCH).value
    again = tmp_path / "dist2"
    again.mkdir()
    assert call_hook(project, "build_sdist", str(again), SOURCE_DATE_EPOCH=EPOCH).value == sdist
    assert (dist / sdist).read_bytes() == (again / sdist).read_bytes(), "the sdist is reproducible"
    prefix = sdist[: -len(".tar.gz")]
    with tarfile.open(dist / sdist) as tf:
        names = set(tf.getnames())
        assert {m.mtime for m in tf.getmembers()} == {int(EPOCH)}
        unpacked = tmp_path / "unpacked"
        tf.extractall(unpacked)
    assert {f"{prefix}/csrc/scale.cu", f"{prefix}/include/scale_impl.cuh", f"{prefix}/culinked/ops.py",
            f"{prefix}/pyproject.toml"} <= names
    assert not [n for n in names if "_oxide" in n or "__pycache__" in n]

    from_tree, from_sdist = tmp_path / "w1", tmp_path / "w2"
    from_tree.mkdir()
    from_sdist.mkdir()
    shutil.rmtree(project / "culinked" / "_oxide")
    shutil.rmtree(project / "build", ignore_errors=True)
    wheel = call_hook(project, "build_wheel", str(from_tree), SOURCE_DATE_EPOCH=EPOCH).value
    assert call_hook(unpacked / prefix, "build_wheel", str(from_sdist), SOURCE_DATE_EPOCH=EPOCH).value == wheel
    assert wheel_entries(from_tree / wheel) == wheel_entries(from_sdist / wheel)
    assert (from_tree / wheel).read_bytes() == (from_sdist / wheel).read_bytes()


def test_wheel_drops_stale_artifacts_from_the_tree(pure_kernel: Path, tmp_path: Path) -> None:
    manifest_in = pure_kernel / "MANIFEST.in"
    manifest_in.write_text("graft purekernel\n")
    (pure_kernel / "purekernel" / "_oxide").mkdir()
    (pure_kernel / "purekernel" / "_oxide" / "purekernel.ops.sm_86.cubin").write_bytes(b"stale")
    out = tmp_path / "w"
    out.mkdir()
    entries = wheel_entries(out / call_hook(pure_kernel, "build_wheel", str(out), {"oxide.arch": "sm_90"}).value)
    assert sorted(n for n in entries if "/_oxide/" in n) == [
        "purekernel/_oxide/purekernel.ops.json",
        "purekernel/_oxide/purekernel.ops.sm_90.cubin",
    ]


# --- editable installs ------------------------------------------------------------------------


def venv_seeing_this_environment(venv: Path) -> Path:
    """A venv (its python returned) that sees the packages of the environment running the
    tests (setuptools, wheel, the toolchain: what ``pip install -e ".[build,cmake,test]"``
    installed), through a ``.pth`` file; never the base interpreter's site-packages, which on a
    fresh machine lack them."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(purelib) / "outer-environment.pth").write_text("".join(f"{p}\n" for p in ours))
    return python


def test_editable_install_recompiles_an_edited_kernel(tmp_path: Path) -> None:
    """pip install -e into a venv; the kernel is edited afterwards; the runtime's manifest lookup
    sees the stale manifest and JIT-compiles the new source (no GPU needed: only the arch
    lookup touches CUDA, and it is given here)."""
    project = copy_project(PACKAGES / "pure_kernel", tmp_path)
    python = venv_seeing_this_environment(tmp_path / "venv")
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", str(project)],
        capture_output=True, text=True, env=subprocess_env(), timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    artifacts = project / "purekernel" / "_oxide"
    assert (artifacts / "purekernel.ops.json").is_file()

    ops = project / "purekernel" / "ops.py"
    ops.write_text(ops.read_text().replace("out[i] = a * x[i]", "out[i] = a * x[i] + 1.0"))
    code = (
        "import json, purekernel.ops as ops\n"
        "from pathlib import Path\n"
        "from oxide.runtime.artifacts import file_sha256, locate_manifest\n"
        "source = Path(ops.__file__)\n"
        "found = locate_manifest(source, 'purekernel.ops', lambda: 'sm_90')\n"
        "print(json.dumps({'jit': found.jit, 'sha': found.manifest.source_sha256, 'now': file_sha256(source),\n"
        "                  'dir': str(found.directory), 'cubins': sorted(found.manifest.cubins)}))\n"
    )
    env = subprocess_env()
    env.pop("PYTHONPATH")  # the venv's editable finder, not the checkout, must find purekernel
    env["PYTHONPATH"] = str(REPO)  # oxide itself from the checkout
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["jit"] is True
    assert found["sha"] == found["now"] == hashlib.sha256(ops.read_bytes()).hexdigest()
    assert found["cubins"] == ["sm_90"]
    assert not found["dir"].startswith(str(artifacts))
