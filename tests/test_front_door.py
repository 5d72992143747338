"""What a new library author meets first (issue 31): a project laid out as the docs say builds,
and every mistake of the first hour is a message that names the file or key and what to do, with
no traceback and no half-written output. CPU only; builds run the real hooks in subprocesses."""
from __future__ import annotations

import errno
import io
import os
import re
import sys
import tarfile
import textwrap
import warnings
import zipfile
from pathlib import Path

import pytest
from test_build import HookFailed, call_hook

PYPROJECT = """\
[build-system]
requires = ["oxide-cuda[build]"]
build-backend = "oxide_build"

[project]
name = "flatproj"
version = "0.1.0"
dependencies = ["oxide-cuda>=0.1,<0.2"]

[tool.oxide]
arch = ["sm_90"]
fatbin = false
{extra}
"""

SCALE = """\
import oxide as ox
from oxide import DisjointSlice, Slice, f32, thread


@ox.kernel
def scale(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i]
"""

TWICE = """\
import oxide as ox
from oxide import DisjointSlice, Slice, f32, thread


@ox.extern("ox_twice", sources=[{source!r}])
def twice(x: f32) -> f32: ...


@ox.kernel
def doubled(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = twice(x[i])
"""

TWICE_CU = 'extern "C" __device__ float ox_twice(float x) { return %s * x; }\n'


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("oxide-cache")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(path))
    monkeypatch.delenv("OXIDE_NO_CACHE", raising=False)
    monkeypatch.delenv("OXIDE_ARCH", raising=False)
    return path


def make_project(tmp_path: Path, modules: dict[str, str], extra: str = "", files: dict[str, str] | None = None) -> Path:
    """A flat-layout project ``flatproj`` (no [tool.setuptools] table: setuptools discovers)."""
    project = tmp_path / "proj"
    (project / "flatproj").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    (project / "flatproj" / "__init__.py").write_text("")
    for name, text in modules.items():
        (project / "flatproj" / name).write_text(text)
    for name, text in (files or {}).items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def build_fails(project: Path, hook: str, *args: object) -> str:
    with pytest.raises(HookFailed) as info:
        call_hook(project, hook, *args)
    assert info.value.returncode == 1
    assert "Traceback" not in info.value.stderr, info.value.stderr
    assert "oxide: build failed" in info.value.stderr
    return info.value.stderr


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return sorted(zf.namelist())


# --- the documented csrc/ layout ------------------------------------------------------------


def test_the_csrc_layout_builds_under_setuptools_flat_discovery(tmp_path: Path) -> None:
    # csrc/ and include/ beside the package used to stop setuptools: "Multiple top-level packages
    # discovered in a flat-layout"; sources= "csrc/twice.cu" is found from the project root
    project = make_project(
        tmp_path, {"ops.py": TWICE.format(source="csrc/twice.cu")}, extra='include-dirs = ["include"]',
        files={"csrc/twice.cu": '#include "twice.cuh"\n' + TWICE_CU % "TWO", "include/twice.cuh": "#define TWO 2.0f\n"},
    )
    out = tmp_path / "dist"
    out.mkdir()
    name = call_hook(project, "build_wheel", str(out)).value
    names = wheel_names(out / name)
    assert "flatproj/_oxide/flatproj.ops.json" in names
    assert "flatproj/_oxide/flatproj.ops.sm_90.cubin" in names
    assert not [n for n in names if n.startswith(("csrc", "include"))]
    sdist = call_hook(project, "build_sdist", str(out)).value
    with tarfile.open(out / sdist) as tf:
        members = tf.getnames()
    assert "flatproj-0.1.0/csrc/twice.cu" in members and "flatproj-0.1.0/include/twice.cuh" in members


def test_sources_are_relative_to_the_module_first(tmp_path: Path) -> None:
    from oxide_build.frontend.program import extern_source_path

    project = make_project(tmp_path, {}, files={"csrc/a.cu": "", "flatproj/a.cu": "", "csrc/b.cu": ""})
    module = project / "flatproj" / "ops.py"
    assert extern_source_path(module, "a.cu") == project / "flatproj" / "a.cu"
    assert extern_source_path(module, "../csrc/a.cu") == project / "csrc" / "a.cu"
    assert extern_source_path(module, "csrc/b.cu") == project / "csrc" / "b.cu"  # from the project root
    assert extern_source_path(module, "csrc/none.cu") == project / "flatproj" / "csrc" / "none.cu"


def test_python_free_dirs() -> None:
    from oxide_build.package.flat_layout import python_free_dirs

    assert python_free_dirs(Path(__file__).resolve().parents[1] / "tests" / "packages" / "cu_linked") == ["csrc", "include"]


# --- messages instead of tracebacks and silence -------------------------------------------------


def test_packages_naming_no_package_fails(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE}, extra='packages = ["nope"]')
    err = build_fails(project, "build_wheel", str(tmp_path))
    assert ("[tool.oxide] packages = ['nope']: 'nope' is neither a package directory nor a module under "
            f"{project}; packages there: flatproj.") in err


@pytest.mark.parametrize("where", ["class", "function"])
def test_a_kernel_inside_a_class_or_function_fails_the_build(tmp_path: Path, where: str) -> None:
    body = textwrap.indent(SCALE.split("\n\n\n", 1)[1], "    ")
    outer = "class Ops:\n" if where == "class" else "def make() -> None:\n"
    source = SCALE.split("\n\n\n", 1)[0] + "\n\n\n" + outer + body
    project = make_project(tmp_path, {"ops.py": source})
    err = build_fails(project, "build_wheel", str(tmp_path))
    name = "class 'Ops'" if where == "class" else "function 'make'"
    assert f"ops.py:6:6: error: @kernel 'scale' is defined inside {name}: oxide compiles the functions" in err
    assert "hint: move 'scale' to the top level of ops.py" in err


def test_a_kernel_module_symlinked_from_outside_builds(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "shared_ops.py").write_text(SCALE)
    project = make_project(tmp_path, {})
    (project / "flatproj" / "ops.py").symlink_to(outside / "shared_ops.py")
    out = tmp_path / "dist"
    out.mkdir()
    name = call_hook(project, "build_wheel", str(out)).value
    assert "flatproj/_oxide/flatproj.ops.json" in wheel_names(out / name)


def test_a_read_only_tree_fails_an_editable_build_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.build import OutputNotWritable, compile_project
    from oxide_build.config import load_config

    project = make_project(tmp_path, {"ops.py": SCALE})
    package = project / "flatproj"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == package else real_access(p, mode))
    with pytest.raises(OutputNotWritable) as info:
        compile_project(project, load_config(project), staging_dir=None)
    assert str(info.value) == (
        f"cannot write the compiled kernels of {package / 'ops.py'}: {package} is not writable. An editable install "
        "(pip install -e) compiles them into the source tree, next to each kernel module; make the tree writable, "
        "or install without -e (pip install .)"
    )
    assert not (package / "_oxide").exists()


def test_a_failed_write_is_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import oxide_build.package.artifacts as artifacts
    from oxide_build.build import OutputNotWritable, compile_project
    from oxide_build.config import load_config

    project = make_project(tmp_path, {"ops.py": SCALE})

    def fail(*args: object) -> Path:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(artifacts, "write_artifacts", fail)
    with pytest.raises(OutputNotWritable, match="Read-only file system; make the source tree writable"):
        compile_project(project, load_config(project), staging_dir=None)


def test_a_missing_include_dir_fails(tmp_path: Path) -> None:
    from oxide_build.config import ConfigError, load_config

    project = make_project(tmp_path, {"ops.py": SCALE}, extra='include-dirs = ["include", "third_party/inc"]',
                           files={"include/a.cuh": ""})
    with pytest.raises(ConfigError) as info:
        load_config(project).compile_options(project)
    assert str(info.value) == (
        "pyproject.toml [tool.oxide]: include-dirs = ['include', 'third_party/inc']: 'third_party/inc' does not "
        f"exist ({project / 'third_party' / 'inc'}); entries are directories relative to the project root {project}"
    )


@pytest.mark.parametrize("key", ["oxid.arch", "oxide-arch", "Oxide.arch", "oxide_arch"])
def test_a_misspelt_oxide_setting_fails(tmp_path: Path, key: str) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE})
    err = build_fails(project, "get_requires_for_build_wheel", {key: "sm_80"})
    assert f"config setting {key}: oxide's settings are spelt oxide.<key>; did you mean -C oxide.arch=...?" in err


def test_an_unread_setting_warns(tmp_path: Path) -> None:
    from oxide_build.config import SETUPTOOLS_SETTINGS, check_foreign_settings

    assert check_foreign_settings({"editable_mode": "compat", "oxide.arch": "sm_90", "--build-option": ""},
                                  SETUPTOOLS_SETTINGS) == []
    assert check_foreign_settings({"cmake.verbose": "1"}, None) == []  # scikit-build-core checks its own
    project = make_project(tmp_path, {"ops.py": SCALE})
    out = tmp_path / "dist"
    out.mkdir()
    err = call_hook(project, "build_wheel", str(out), {"build-dir": "x"}).stderr
    assert ("oxide: warning: config setting 'build-dir' is read by neither oxide (its keys are oxide.<key>) nor "
            "setuptools; it has no effect") in err


def test_a_full_cache_dir_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import oxide_build.link.cache as cache_module
    from oxide_build.link.cache import CacheWarning, CompileCache

    cache_module._warned.clear()
    cache = CompileCache()
    calls: list[Path] = []

    def full(path: Path, data: bytes) -> None:
        calls.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module, "write_file_atomic", full)
    with pytest.warns(CacheWarning) as record:
        cache.put("ab" * 32, b"x")
        cache.put("cd" * 32, b"y")
    assert len(record) == 1 and len(calls) == 1
    assert "cannot store a compiled module there (No space left on device)" in str(record[0].message)
    assert "OXIDE_CACHE_DIR" in str(record[0].message)


def test_an_unusable_cache_is_one_warning_line_in_the_build(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE})
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "dist"
    out.mkdir()
    err = call_hook(project, "build_wheel", str(out), OXIDE_CACHE_DIR=str(tmp_path / "a-file" / "cache")).stderr
    assert (f"oxide: warning: not using the cache directory {tmp_path / 'a-file' / 'cache'}: {tmp_path / 'a-file'} "
            "is a file, not a directory") in err, err
    assert "CacheWarning" not in err and "cache.py" not in err, err  # not the file and line inside oxide


def test_requires_without_the_build_extra_is_one_message(tmp_path: Path) -> None:
    import subprocess

    from test_build import subprocess_env

    project = make_project(tmp_path, {"ops.py": SCALE})
    # a build environment with oxide-cuda but not its [build] extra: no packaging, no llvmlite
    code = ("import sys; sys.modules['packaging'] = None; sys.modules['llvmlite'] = None\n"
            "import oxide_build; oxide_build.prepare_metadata_for_build_wheel(sys.argv[1])\n")
    (tmp_path / "meta").mkdir()
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "meta")], cwd=project, capture_output=True,
                            text=True, env=subprocess_env(), timeout=300)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert ("oxide: the build environment has no 'packaging', which comes with the [build] extra of oxide-cuda: "
            "pip install 'oxide-cuda[build]' for a build without isolation") in result.stderr


def test_an_edit_to_a_cu_outside_the_project_is_compiled(tmp_path: Path) -> None:
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    outside = tmp_path / "shared-cpp"
    outside.mkdir()
    (outside / "twice.cu").write_text(TWICE_CU % "2.0f")
    project = make_project(tmp_path, {"ops.py": TWICE.format(source="../../shared-cpp/twice.cu")})
    config = load_config(project)

    def build() -> tuple[int, bytes]:
        staging = tmp_path / f"staging{len(list(tmp_path.glob('staging*')))}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = compile_project(project, config, staging, log=open(os.devnull, "w"))
        return result.cached, (staging / "flatproj" / "_oxide" / "flatproj.ops.sm_90.cubin").read_bytes()

    first = build()
    assert build() == (1, first[1])  # unchanged: from the cache
    (outside / "twice.cu").write_text(TWICE_CU % "3.0f")
    cached, cubin = build()
    assert cached == 0 and cubin != first[1]


def test_an_sdist_of_a_project_naming_a_cu_outside_it_fails(tmp_path: Path) -> None:
    outside = tmp_path / "shared-cpp"
    outside.mkdir()
    (outside / "twice.cu").write_text(TWICE_CU % "2.0f")
    project = make_project(tmp_path, {"ops.py": TWICE.format(source="../../shared-cpp/twice.cu")})
    err = build_fails(project, "build_sdist", str(tmp_path))
    assert (f"{project / 'flatproj' / 'ops.py'}:5: sources= names '../../shared-cpp/twice.cu' "
            f"({outside / 'twice.cu'}), which lies outside the project {project}: an sdist carries only") in err
    assert not list(tmp_path.glob("*.tar.gz"))


# --- the command line -------------------------------------------------------------------------


def test_oxide_compile_uses_the_projects_tool_oxide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from oxide_build.cli import main
    from oxide_build.targets import DEFAULT_ARCHS

    project = make_project(tmp_path, {"ops.py": SCALE})
    source = project / "flatproj" / "ops.py"
    assert main(["compile", str(source), "--emit", "ptx", "-o", str(tmp_path / "a")]) == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["ops.sm_90.ptx"]  # [tool.oxide] arch
    assert main(["compile", str(source), "--emit", "ptx", "--arch", "sm_80", "-o", str(tmp_path / "b")]) == 0
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["ops.sm_80.ptx"]
    assert main(["compile", str(source), "--emit", "ptx", "--no-project", "-o", str(tmp_path / "c")]) == 0
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == sorted(f"ops.{a}.ptx" for a in DEFAULT_ARCHS)


def test_oxide_archs_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    from oxide_build.cli import main

    with pytest.raises(SystemExit):
        main(["archs", "--help"])
    out = capsys.readouterr().out
    assert "Print the archs a build of PROJECT compiles for" in out and "PROJECT" in out


# --- scikit-build-core's conventions: env vars, overrides, minimum-version, line numbers, schema --


def write_pyproject(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(body))
    return tmp_path


def test_every_key_has_an_environment_variable(tmp_path: Path) -> None:
    from oxide_build.config import ALLOWED_KEYS, env_name, load_config

    assert env_name("opt-level") == "OXIDE_OPT_LEVEL" and env_name("arch") == "OXIDE_ARCH"
    project = write_pyproject(tmp_path, "[tool.oxide]\nopt-level = 1\nfast-math = false\n")
    config = load_config(project, environ={"OXIDE_OPT_LEVEL": "2", "OXIDE_FAST_MATH": "1", "OXIDE_DEFINES": "A,B=2",
                                           "OXIDE_VERBOSE": "true"})
    assert (config.opt_level, config.fast_math, config.defines, config.verbose) == (2, True, ("A", "B=2"), True)
    # a config setting wins over the environment
    config = load_config(project, {"oxide.opt-level": "0"}, environ={"OXIDE_OPT_LEVEL": "2"})
    assert config.opt_level == 0
    from oxide_build.config import ConfigError

    with pytest.raises(ConfigError, match="^environment variable OXIDE_OPT_LEVEL: opt-level = '9' is not allowed"):
        load_config(project, environ={"OXIDE_OPT_LEVEL": "9"})
    assert len({env_name(k) for k in ALLOWED_KEYS}) == len(ALLOWED_KEYS)


def test_overrides_apply_in_order_when_their_conditions_hold(tmp_path: Path) -> None:
    from oxide_build.config import load_config

    project = write_pyproject(tmp_path, f"""\
        [tool.oxide]
        opt-level = 3
        ptx = false

        [[tool.oxide.overrides]]
        if.platform-system = "{sys.platform}"
        ptx = true

        [[tool.oxide.overrides]]
        if.platform-system = "nowhere"
        fatbin = false

        [[tool.oxide.overrides]]
        if.env.CI = true
        if.python-version = ">=3.10"
        opt-level = 1

        [[tool.oxide.overrides]]
        if.env.OXIDE_FLAVOUR = "deb.*"
        lineinfo = true
        """)
    config = load_config(project, environ={})
    assert (config.ptx, config.fatbin, config.opt_level, config.lineinfo) == (True, True, 3, False)
    config = load_config(project, environ={"CI": "1", "OXIDE_FLAVOUR": "debug"})
    assert (config.opt_level, config.lineinfo) == (1, True)
    assert load_config(project, environ={"CI": "0"}).opt_level == 3
    assert load_config(project, {"oxide.opt-level": "2"}, environ={"CI": "1"}).opt_level == 2


def test_override_errors_name_their_line(tmp_path: Path) -> None:
    from oxide_build.config import ConfigError, load_config

    project = write_pyproject(tmp_path, """\
        [tool.oxide]
        arch = ["sm_90"]

        [[tool.oxide.overrides]]
        if.platform-system = ".*"
        opt-level = 9
        """)
    with pytest.raises(ConfigError) as info:
        load_config(project, environ={})
    assert str(info.value) == ("pyproject.toml:6: [tool.oxide.overrides]: opt-level = 9 is not allowed; expected an "
                               "integer from 0 to 3")
    write_pyproject(tmp_path, """\
        [tool.oxide]

        [[tool.oxide.overrides]]
        if.os = "linux"
        ptx = true
        """)
    with pytest.raises(ConfigError, match=r"^pyproject.toml:4: \[tool.oxide.overrides\]: unknown condition if.os; "
                                          "known conditions: platform-system, platform-machine, python-version, env$"):
        load_config(project, environ={})
    write_pyproject(tmp_path, "[tool.oxide]\n[[tool.oxide.overrides]]\nptx = true\n")
    with pytest.raises(ConfigError, match="an override needs an `if` table"):
        load_config(project, environ={})


def test_config_errors_name_their_line(tmp_path: Path) -> None:
    from oxide_build.config import ConfigError, load_config

    project = write_pyproject(tmp_path, """\
        [project]
        name = "x"

        [tool.oxide]
        arch = ["sm_90"]
        # a comment
        "opt-level" = 5
        """)
    with pytest.raises(ConfigError) as info:
        load_config(project, environ={})
    assert str(info.value) == "pyproject.toml:7: [tool.oxide]: opt-level = 5 is not allowed; expected an integer from 0 to 3"


def test_minimum_version(tmp_path: Path) -> None:
    import oxide
    from oxide_build.config import ConfigError, load_config

    project = write_pyproject(tmp_path, '[tool.oxide]\nminimum-version = "0.1"\n')
    assert load_config(project, environ={}).minimum_version == "0.1"
    write_pyproject(tmp_path, '[tool.oxide]\nminimum-version = "99.0"\n')
    with pytest.raises(ConfigError) as info:
        load_config(project, environ={})
    assert str(info.value) == (
        f"pyproject.toml:2: [tool.oxide]: minimum-version = '99.0', but this build runs oxide-cuda {oxide.__version__}: "
        'require it in [build-system]: requires = ["oxide-cuda[build]>=99.0"]'
    )
    write_pyproject(tmp_path, '[tool.oxide]\nminimum-version = "latest"\n')
    with pytest.raises(ConfigError, match='minimum-version = \'latest\' is not allowed; expected a version number such as "0.1"'):
        load_config(project, environ={})


def test_the_json_schema_validates_tool_oxide() -> None:
    from oxide_build.config import ALLOWED_KEYS, json_schema

    schema = json_schema()
    assert set(schema["properties"]) == {*ALLOWED_KEYS, "overrides", "editable", "logging"}
    assert schema["additionalProperties"] is False
    api = pytest.importorskip("validate_pyproject.api")
    plugins = pytest.importorskip("validate_pyproject.plugins")
    validator = api.Validator(plugins=[], extra_plugins=[plugins.PluginWrapper("oxide", json_schema)])
    project = {"name": "x", "version": "1"}
    good = {"arch": ["sm_90", "sm_90a"], "opt-level": 2, "link": ["csrc/*.cu"], "verbose": True,
            "overrides": [{"if": {"platform-system": "linux", "env": {"CI": True}}, "ptx": True}]}
    assert validator({"project": project, "tool": {"oxide": good}})
    from validate_pyproject.error_reporting import ValidationError

    for bad in ({"archs": ["sm_90"]}, {"opt-level": 7}, {"arch": ["sm_75"]}, {"overrides": [{"ptx": True}]},
                {"backend": "clang"}, {"overrides": [{"if": {"os": "linux"}}]}):
        with pytest.raises(ValidationError):
            validator({"project": project, "tool": {"oxide": bad}})


def test_the_schema_entry_point_is_declared() -> None:
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '[project.entry-points."validate_pyproject.tool_schema"]\noxide = "oxide_build.config:json_schema"' in text


# --- output: quiet in logs, progress on a terminal, verbose on demand ---------------------------


def test_a_build_in_a_log_prints_the_summary_only(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE})
    out = tmp_path / "dist"
    out.mkdir()
    err = call_hook(project, "build_wheel", str(out), OXIDE_VERBOSE="").stderr
    assert "oxide: toolchain" not in err and "[1/1]" not in err, err
    assert re.search(r"^oxide: compiled 1 kernel in 1 module for sm_90 in [\d.]+ s \(1 unit, 0 from cache, 1 job\)$",
                     err, re.M), err
    verbose = call_hook(project, "build_wheel", str(out), {"oxide.verbose": "true"}, OXIDE_VERBOSE="").stderr
    assert "oxide: toolchain\n  nvJitLink: " in verbose and "[1/1] flatproj.ops sm_90 … cached" in verbose


@pytest.mark.parametrize("level", ["ERROR", "warning"])
def test_a_quiet_logging_level_prints_nothing_but_failures(tmp_path: Path, level: str) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE}, extra=f'logging-level = "{level}"\n')
    out = tmp_path / "dist"
    out.mkdir()
    err = call_hook(project, "build_wheel", str(out), {"unread-key": "1"}, OXIDE_VERBOSE="").stderr
    assert "oxide: compiled" not in err and "oxide: toolchain" not in err, err
    assert ("'unread-key'" in err) == (level == "warning"), err  # a warning, shown at WARNING only
    (project / "flatproj" / "ops.py").write_text(SCALE.replace("a * x[i]", "a * y[i]"))
    failed = build_fails(project, "build_wheel", str(out))
    assert "error" in failed and "oxide: build failed" in failed, failed


def test_logging_level_debug_is_verbose(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE})
    out = tmp_path / "dist"
    out.mkdir()
    err = call_hook(project, "build_wheel", str(out), OXIDE_VERBOSE="", OXIDE_LOGGING_LEVEL="debug").stderr
    assert "oxide: toolchain\n  nvJitLink: " in err and "[1/1] flatproj.ops sm_90 … " in err, err
    assert "oxide: compiled 1 kernel" in err


def test_scikit_build_cores_dotted_spellings(tmp_path: Path) -> None:
    from oxide_build.config import ConfigError, load_config

    project = write_pyproject(tmp_path, """\
        [tool.oxide]
        editable.rebuild = false
        logging.level = "debug"
        editable.verbose = false
    """)
    config = load_config(project, environ={})
    assert (config.editable_rebuild, config.editable_verbose, config.logging_level) == (False, False, "DEBUG")
    assert config.shows_debug and not load_config(project, {"oxide.logging.level": "error"}, environ={}).shows_warnings
    assert load_config(project, {"oxide.editable.rebuild": "true"}, environ={}).editable_rebuild
    assert load_config(project, environ={"OXIDE_EDITABLE_VERBOSE": "1"}).editable_verbose
    write_pyproject(tmp_path, "[tool.oxide]\nptx = true\n[tool.oxide.editable]\nverbose = false\n")
    assert not load_config(project, environ={}).editable_verbose
    write_pyproject(tmp_path, "[tool.oxide]\neditable.rebuilt = false\n")
    with pytest.raises(ConfigError, match=r"^pyproject.toml:2: \[tool.oxide\]: unknown key 'editable.rebuilt'"):
        load_config(project, environ={})
    write_pyproject(tmp_path, '[tool.oxide]\nlogging-level = "loud"\n')
    with pytest.raises(ConfigError, match="logging-level = 'loud' is not allowed; expected 'ERROR' or 'WARNING'"):
        load_config(project, environ={})


def test_editable_mode_is_inplace_and_redirect_is_refused(tmp_path: Path) -> None:
    from oxide_build.config import ConfigError, load_config

    project = write_pyproject(tmp_path, '[tool.oxide]\neditable.mode = "inplace"\n')
    assert load_config(project, environ={}).editable_mode == "inplace"
    write_pyproject(tmp_path, '[tool.oxide]\neditable-mode = "redirect"\n')
    with pytest.raises(ConfigError, match=r"^pyproject.toml:2: \[tool.oxide\]: editable-mode = 'redirect' is not "
                                          r"allowed; expected 'inplace'"):
        load_config(project, environ={})
    with pytest.raises(ConfigError, match="expected 'inplace'"):
        load_config(project, {"oxide.editable.mode": "redirect"}, environ={"OXIDE_EDITABLE_MODE": "inplace"})


def test_the_json_schema_takes_the_dotted_spellings() -> None:
    from oxide_build.config import json_schema
    from validate_pyproject.error_reporting import ValidationError

    api = pytest.importorskip("validate_pyproject.api")
    plugins = pytest.importorskip("validate_pyproject.plugins")
    validator = api.Validator(plugins=[], extra_plugins=[plugins.PluginWrapper("oxide", json_schema)])
    good = {"project": {"name": "p", "version": "1"},
            "tool": {"oxide": {"editable": {"rebuild": False, "verbose": True}, "logging": {"level": "DEBUG"},
                               "logging-level": "info", "editable-verbose": False}}}
    validator(good)
    for bad in ({"editable": {"rebuilt": False}}, {"logging": {"level": "LOUD"}}):
        with pytest.raises(ValidationError):
            validator({"project": {"name": "p", "version": "1"}, "tool": {"oxide": bad}})


def test_progress_on_a_terminal_is_one_line_rewritten() -> None:
    import io

    from oxide_build.build import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    progress = _Progress(term, verbose=False)
    progress.unit("[1/2] a.k sm_90", "12 ms")
    progress.unit("[2/2] b.k sm_90", "cached")
    progress.done()
    assert term.getvalue() == "\r\033[K[1/2] a.k sm_90\r\033[K[2/2] b.k sm_90\r\033[K"
    log = io.StringIO()
    quiet = _Progress(log, verbose=False)
    quiet.unit("[1/1] a.k sm_90", "12 ms")
    quiet.failed("[1/1] a.k sm_90 … failed")
    assert log.getvalue() == "[1/1] a.k sm_90 … failed\n"


def _unit_taking_its_seconds(unit: object) -> tuple[object, float, str | None]:
    """A stand-in for a worker's compile of one unit: ``unit`` is how long it takes."""
    import time

    time.sleep(float(unit))  # type: ignore[arg-type]
    return f"result of {unit}", float(unit), None  # type: ignore[arg-type]


def test_progress_reports_each_unit_as_its_worker_finishes() -> None:
    """The progress follows the workers: a quick unit is reported while a slow one still runs
    (waiting with FIRST_EXCEPTION, every unit was reported at once at the end)."""
    import time

    from oxide_build import build

    if not build._can_fork():
        pytest.skip("the units run one after another where there is no fork")
    started = time.perf_counter()
    reported: list[tuple[int, float]] = []
    build._compile_in_processes([0.05, 2.0], [0, 1], 2,  # type: ignore[list-item]
                                lambda index, result, seconds: reported.append((index, time.perf_counter() - started)),
                                lambda index: None, compile_timed=_unit_taking_its_seconds)  # type: ignore[arg-type]
    assert [index for index, _ in reported] == [0, 1]
    assert reported[0][1] < 1.5 < reported[1][1], reported


def test_a_build_on_a_terminal_shows_each_unit_then_the_summary(tmp_path: Path) -> None:
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    project = make_project(tmp_path, {"ops.py": SCALE, "more.py": SCALE.replace("a * x[i]", "a + x[i]")})
    term = Terminal()
    compile_project(project, load_config(project, environ={}), tmp_path / "staging", log=term, jobs=2)
    shown = term.getvalue()
    units = re.findall(r"\r\033\[K(\[\d/2\] flatproj\.\w+ sm_90)", shown)
    assert sorted(units) == ["[1/2] flatproj.more sm_90", "[2/2] flatproj.ops sm_90"] or \
        sorted(units) == ["[1/2] flatproj.ops sm_90", "[2/2] flatproj.more sm_90"], shown
    summary = shown.rpartition("\r\033[K")[2]  # the progress line erased, the summary stays
    assert re.fullmatch(r"oxide: compiled 2 kernels in 2 modules for sm_90 in [\d.]+ s "
                        r"\(2 units, 0 from cache, 2 jobs\)\n", summary), shown


def test_cache_dir_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    project = make_project(tmp_path, {"ops.py": SCALE}, extra='cache-dir = ".oxide-cache"')
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert load_config(project).cache_dir == str(tmp_path / "elsewhere")  # OXIDE_CACHE_DIR is its variable
    monkeypatch.delenv("OXIDE_CACHE_DIR")
    config = load_config(project)
    assert config.cache_dir == ".oxide-cache"
    compile_project(project, config, tmp_path / "staging", log=io.StringIO())
    assert list((project / ".oxide-cache").rglob("*")), "the build's cache went to cache-dir"


def test_a_build_records_the_driver_its_cubins_need(tmp_path: Path) -> None:
    import json as json_module

    from oxide_build.build import compile_project
    from oxide_build.config import load_config
    from oxide_build.link.nvjitlink import nvjitlink_version

    project = make_project(tmp_path, {"ops.py": SCALE})
    compile_project(project, load_config(project), tmp_path / "staging", log=io.StringIO())
    manifest = json_module.loads((tmp_path / "staging" / "flatproj" / "_oxide" / "flatproj.ops.json").read_text())
    assert manifest["cuda_driver"] == 1000 * int(nvjitlink_version().split(".")[0])  # 13000 with [build]


# --- only the toolchain a project needs ---------------------------------------------------------


def test_the_cpp_extra_is_the_cpp_toolchain() -> None:
    import tomllib as toml_module

    from oxide_build.package.build_requirements import CPP_EXTRA, CPP_TOOLCHAIN

    pyproject = toml_module.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert tuple(extras[CPP_EXTRA]) == CPP_TOOLCHAIN
    build = " ".join(extras["build"])
    assert "nvrtc" not in build and "cccl" not in build and "curand" not in build


def test_get_requires_adds_the_cpp_toolchain_only_for_cpp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.config import load_config
    from oxide_build.package import build_requirements
    from oxide_build.toolchain import discovery

    pure = make_project(tmp_path / "a", {"ops.py": SCALE})
    with_cu = make_project(tmp_path / "b", {"ops.py": SCALE}, files={"csrc/x.cu": ""})
    with_extern = make_project(tmp_path / "c", {"ops.py": TWICE.format(source="/opt/shared/twice.cu")})
    real_locate = discovery.locate
    monkeypatch.setattr(discovery, "locate", lambda name: None if name in ("NVRTC", "CCCL headers") else real_locate(name))
    assert build_requirements.missing_cpp_toolchain(pure, load_config(pure), pure) == []
    for project in (with_cu, with_extern):
        wanted = build_requirements.missing_cpp_toolchain(project, load_config(project), project)
        assert [w.split("[")[0].split("=")[0].split(">")[0] for w in wanted] == [
            "cuda-toolkit", "nvidia-cuda-nvrtc", "nvidia-cuda-cccl", "nvidia-cuda-runtime", "nvidia-curand"]
    from importlib.metadata import version

    major, minor = version("nvidia-nvjitlink").split(".")[:2]
    assert f"nvidia-cuda-nvrtc=={major}.{minor}.*" in build_requirements.cpp_toolchain_requirements()
    # with NVRTC and CCCL in the environment already, nothing more
    monkeypatch.setattr(discovery, "locate", real_locate)
    assert build_requirements.missing_cpp_toolchain(with_cu, load_config(with_cu), with_cu) == []


def test_get_requires_hook_of_a_pure_project_is_the_hosts(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE})
    wanted = call_hook(project, "get_requires_for_build_wheel").value
    assert not [w for w in wanted if "nvidia" in w or "cuda" in w], wanted  # setuptools' own only


def test_build_dir_keeps_the_staged_kernels(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"ops.py": SCALE}, extra='build-dir = "build/oxide"')
    (project / "build" / "oxide" / "old.txt").parent.mkdir(parents=True)
    (project / "build" / "oxide" / "old.txt").write_text("from an earlier build")
    out = tmp_path / "dist"
    out.mkdir()
    name = call_hook(project, "build_wheel", str(out)).value
    staged = sorted(p.relative_to(project / "build" / "oxide").as_posix()
                    for p in (project / "build" / "oxide").rglob("*") if p.is_file())
    assert staged == ["flatproj/_oxide/flatproj.ops.json", "flatproj/_oxide/flatproj.ops.sm_90.cubin"]
    assert "flatproj/_oxide/flatproj.ops.json" in wheel_names(out / name)
    bad = make_project(tmp_path / "bad", {"ops.py": SCALE}, extra='build-dir = "flatproj"')
    err = build_fails(bad, "build_wheel", str(out))
    assert "[tool.oxide] build-dir = 'flatproj': " in err and "holds Python files" in err


# --- requires = ["oxide-cuda"]: the toolchain only when something must be compiled -------------

WITHOUT_COMPILER = """
import json, sys
sys.modules["llvmlite"] = None  # an isolated build environment with oxide-cuda alone
import oxide_build.package.module_cache as module_cache
module_cache.compiler_installed = lambda: False
import oxide_build
print("HOOK-RESULT " + json.dumps(getattr(oxide_build, sys.argv[1])(*json.loads(sys.argv[2]))))
"""


def without_compiler(project: Path, hook: str, *args: object) -> object:
    import json
    import subprocess

    from test_build import subprocess_env

    result = subprocess.run([sys.executable, "-c", WITHOUT_COMPILER, hook, json.dumps(args)], cwd=project,
                            capture_output=True, text=True, env=subprocess_env(SOURCE_DATE_EPOCH="1700000000"),
                            timeout=600)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("HOOK-RESULT ")]
    return json.loads(line[len("HOOK-RESULT "):])


def test_an_environment_without_the_compiler_asks_for_it_only_to_compile(tmp_path: Path) -> None:
    from oxide_build.package.build_requirements import extra_requirements

    project = make_project(tmp_path, {"ops.py": SCALE, "more.py": SCALE.replace("a * x[i]", "a + x[i]")})
    toolchain = [r for r in extra_requirements("build") if r.split(">")[0].split("[")[0] not in
                 ("setuptools", "wheel", "packaging")]
    assert "llvmlite>=0.45" in toolchain and any(r.startswith("nvidia-nvjitlink") for r in toolchain)
    cold = without_compiler(project, "get_requires_for_build_wheel")
    assert isinstance(cold, list) and set(toolchain) <= set(cold), cold  # nothing cached: the compiler
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    name = call_hook(project, "build_wheel", str(first), SOURCE_DATE_EPOCH="1700000000").value
    warm = without_compiler(project, "get_requires_for_build_wheel")
    assert isinstance(warm, list) and not set(toolchain) & set(warm), warm  # every unit cached: no compiler
    assert without_compiler(project, "build_wheel", str(second)) == name
    assert (first / name).read_bytes() == (second / name).read_bytes()  # the same wheel, from the cache
    ops = project / "flatproj" / "ops.py"
    ops.write_text(ops.read_text().replace("a * x[i]", "a * x[i] + 1.0"))
    edited = without_compiler(project, "get_requires_for_build_wheel")
    assert isinstance(edited, list) and set(toolchain) <= set(edited)


# --- NumPy is optional: no isolated build installs it -------------------------------------------

WITHOUT_NUMPY = """
import io, json, sys
from pathlib import Path


class NoNumpy:  # an environment without NumPy: every import of it fails
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("No module named 'numpy' (blocked by the test)")
        return None


sys.meta_path.insert(0, NoNumpy())
import oxide
import oxide_build
from oxide.runtime.launch import scalar_converter
from oxide_build.build import compile_project
from oxide_build.config import load_config

project = Path(sys.argv[1])
requires = oxide_build.get_requires_for_build_wheel()
log = io.StringIO()
build = compile_project(project, load_config(project), project.parent / "staging", log=log)
f16 = scalar_converter("f16")
try:
    oxide.runtime.DeviceArray.empty(4)
    refused = ""
except ImportError as exc:
    refused = str(exc)
print("RESULT " + json.dumps({
    "requires": requires, "kernels": build.kernel_count, "log": log.getvalue(), "refused": refused,
    "f16": [f16(1e6), f16(65519.0), f16(-70000.0)], "numpy": sorted(m for m in sys.modules if m.split(".")[0] == "numpy"),
}))
"""


def test_oxide_imports_and_builds_without_numpy(tmp_path: Path) -> None:
    import json
    import subprocess
    import tomllib as toml_module

    from test_build import subprocess_env

    pyproject = toml_module.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    for name, requirements in [("dependencies", pyproject["project"]["dependencies"]),
                               *pyproject["project"]["optional-dependencies"].items()]:
        if name != "test":  # the tests' references are NumPy's
            assert not [r for r in requirements if r.startswith("numpy")], (name, requirements)
    project = make_project(tmp_path, {"ops.py": SCALE})
    result = subprocess.run([sys.executable, "-c", WITHOUT_NUMPY, str(project)], cwd=tmp_path, capture_output=True,
                            text=True, env=subprocess_env(), timeout=600)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    got = json.loads(line[len("RESULT "):])
    assert got["kernels"] == 1 and "oxide: compiled 1 kernel in 1 module" in got["log"], got
    assert not [r for r in got["requires"] if r.startswith("numpy")], got["requires"]
    assert (tmp_path / "staging" / "flatproj" / "_oxide" / "flatproj.ops.sm_90.cubin").is_file()
    # what needs NumPy says so; a launch's f16 scalars round past the largest half without it
    assert got["refused"].startswith("oxide.runtime.DeviceArray needs NumPy, which is not installed: pip install numpy")
    assert got["f16"] == [float("inf"), 65519.0, float("-inf")]
    assert got["numpy"] == []
