"""oxide's build side, and the PEP 517 / PEP 660 build backend ``build-backend = "oxide_build"``.

The hooks delegate everything Python packaging does to a *host backend*, with its own config
settings passed through untouched (ours, ``oxide.*``, removed):

- ``scikit_build_core.build`` for a project with a host extension built by CMake (a
  ``CMakeLists.txt`` next to ``pyproject.toml``, or a ``[tool.scikit-build]`` table); it needs
  the extra ``oxide-cuda[cmake]``;
- ``setuptools.build_meta`` for everything else.

and add what oxide does: compile every kernel module of the project for the configured archs
and put the artifacts into the wheel (``<package>/_oxide/<module>.json`` and a fatbin), check
that a project with kernels requires the oxide runtime (``oxide-cuda>=X,<Y`` in
``[project] dependencies``, see ``oxide_build.package.requirement``) and that the CUDA
toolchain of the build environment is consistent (``oxide_build.toolchain``), and make the
sdist carry the C++ sources and CMake files and no build outputs. An editable install compiles next to the sources instead, where the
runtime then finds them (and recompiles a kernel module edited later, on first use).

Configuration: ``[tool.oxide]`` in pyproject.toml, ``OXIDE_ARCH``, ``-C oxide.<key>=<value>``
(see ``oxide_build.config`` and docs/configuration.md). A compile error fails the build with
its diagnostic only, no traceback.
"""
from __future__ import annotations

import functools
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from oxide_build.config import OxideConfig

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "host_backend_name",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ConfigSettings = Mapping[str, Any] | None
F = TypeVar("F", bound=Callable[..., Any])

SETUPTOOLS_BACKEND = "setuptools.build_meta"
CMAKE_BACKEND = "scikit_build_core.build"


def _reports_user_errors(hook: F) -> F:
    """An ``OxideError`` (compile, link, toolchain or config error) ends the build with its
    message on stderr and exit status 1: the message is the diagnostic, a traceback of the
    compiler would only hide it."""

    @functools.wraps(hook)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import warnings

        from oxide.errors import OxideError

        try:
            with warnings.catch_warnings():
                warnings.showwarning = _show_warning
                return hook(*args, **kwargs)
        except OxideError as exc:
            sys.stdout.flush()
            print(f"\n{exc}\n\noxide: build failed", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".")[0]
            if missing not in _BUILD_EXTRA_MODULES:
                raise
            sys.stdout.flush()
            print(f"\n{_missing_build_extra_message(missing)}\n\noxide: build failed", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

    return wrapper  # type: ignore[return-value]


_python_show_warning = __import__("warnings").showwarning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning of oxide's (an unusable compile cache) during a build: one line, ``oxide:
    warning: ...``, as the build's other warnings; not the file and source line inside oxide
    that raised it. Others' warnings print as Python prints them."""
    if not category.__module__.startswith(("oxide.", "oxide_build.")):
        _python_show_warning(message, category, filename, lineno, file, line)
        return
    text = str(message)
    text = text[len("oxide: "):] if text.startswith("oxide: ") else text
    print(f"oxide: warning: {text}", file=sys.stderr if file is None else file, flush=True)


# Top-level modules that the [build] extra of oxide-cuda installs and the hooks import: one of
# them missing means the build environment has oxide-cuda without the extra.
_BUILD_EXTRA_MODULES = frozenset({"packaging", "llvmlite", "setuptools", "wheel", "cuda"})


def _missing_build_extra_message(module: str) -> str:
    return (
        f"oxide: the build environment has no {module!r}, which comes with the [build] extra of "
        "oxide-cuda: pip install 'oxide-cuda[build]' for a build without isolation (an isolated build "
        'with requires = ["oxide-cuda"] gets what it needs from the backend, the compiler only when '
        "something is not in the compile cache)"
    )


def _host_settings(config_settings: ConfigSettings) -> dict[str, Any] | None:
    """The config settings meant for the host backend: ours (``oxide.*``) removed."""
    if config_settings is None:
        return None
    from oxide_build.config import CONFIG_SETTINGS_PREFIX

    return {k: v for k, v in config_settings.items() if not k.startswith(CONFIG_SETTINGS_PREFIX)}


def _project_dir() -> Path:
    return Path.cwd()  # PEP 517: hooks run in the project's root directory


def host_backend_name(project_dir: Path) -> str:
    """``scikit_build_core.build`` for a CMake project, else ``setuptools.build_meta``."""
    if (project_dir / "CMakeLists.txt").is_file():
        return CMAKE_BACKEND
    from oxide_build.config import read_pyproject

    tool = read_pyproject(project_dir).get("tool", {})
    if isinstance(tool, dict) and "scikit-build" in tool:
        return CMAKE_BACKEND
    return SETUPTOOLS_BACKEND


def _host_backend() -> ModuleType:
    name = host_backend_name(_project_dir())
    if name == CMAKE_BACKEND:
        try:
            import scikit_build_core.build as backend
        except ImportError:
            from oxide.errors import ToolchainError

            raise ToolchainError(
                "this project builds a host extension with CMake (CMakeLists.txt or "
                "[tool.scikit-build]), which needs scikit-build-core: add \"oxide-cuda[cmake]\" to "
                "[build-system] requires, or pip install 'oxide-cuda[cmake]'"
            ) from None
        return backend
    from setuptools import build_meta

    from oxide_build.package.flat_layout import exclude_python_free_dirs

    exclude_python_free_dirs(_project_dir())  # csrc/, include/: not packages (docs/configuration.md)
    return build_meta


def _host_editable_hook(name: str) -> Callable[..., Any]:
    """The host backend's PEP 660 hook ``name``; setuptools before 64 has none (the ``[build]``
    extra asks for 64, but a build without isolation takes the environment's setuptools as it is)."""
    backend = _host_backend()
    hook = getattr(backend, name, None)
    if hook is None:
        from oxide.errors import ToolchainError

        version = getattr(sys.modules.get(backend.__name__.split(".")[0]), "__version__", "?")
        raise ToolchainError(
            f"an editable install needs setuptools 64 or newer (PEP 660); this build environment has "
            f"setuptools {version}: pip install 'setuptools>=64' (next to PyTorch: 'setuptools>=64,<82'), "
            "or install without -e"
        )
    return hook  # type: ignore[no-any-return]


def _check_settings(config_settings: ConfigSettings) -> None:
    """A misspelt ``-C oxide.`` key or a bad ``[tool.oxide]`` fails the first hook a frontend
    calls."""
    from oxide_build.config import check_foreign_settings, load_config

    check_foreign_settings(config_settings, None)
    load_config(_project_dir(), config_settings)


def _toolchain_requirements(config_settings: ConfigSettings) -> list[str]:
    """What this build environment lacks for the project (``oxide_build.package.build_requirements``):
    with ``requires = ["oxide-cuda"]``, the ``[build]`` extra's packaging pieces, and its
    compiler only when something is not in the compile cache; the CUDA C++ toolchain (NVRTC,
    CCCL, cuRAND) for a project that compiles C++, likewise."""
    import functools

    from oxide_build.build import needs_compiler
    from oxide_build.config import load_config
    from oxide_build.package.build_requirements import missing_build_extra, missing_cpp_toolchain
    from oxide_build.scan import scan_root

    project = _project_dir()
    config = load_config(project, config_settings)
    compiles = functools.lru_cache(maxsize=1)(lambda: needs_compiler(project, config))
    out = missing_build_extra(compiles)
    if _compiler_installed() or compiles():
        out += [r for r in missing_cpp_toolchain(project, config, scan_root(project)) if r not in out]
    return out


def _host_requirements(hook: str, config_settings: ConfigSettings) -> list[str]:
    """The host backend's ``get_requires_for_build_*``; where the host backend is not installed
    yet (``requires = ["oxide-cuda"]``), its package from oxide-cuda's extras instead (setuptools
    comes with the [build] pieces, scikit-build-core with [cmake])."""
    from oxide_build.package.build_requirements import extra_requirements, importable

    name = host_backend_name(_project_dir())
    module = "scikit_build_core" if name == CMAKE_BACKEND else "setuptools"
    if not importable(module):
        return extra_requirements("cmake") if name == CMAKE_BACKEND else []
    if hook == "get_requires_for_build_editable":
        return list(_host_editable_hook(hook)(_host_settings(config_settings)))
    return list(getattr(_host_backend(), hook)(_host_settings(config_settings)))


@_reports_user_errors
def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    _check_settings(config_settings)
    host = _host_requirements("get_requires_for_build_wheel", config_settings)
    return host + [r for r in _toolchain_requirements(config_settings) if r not in host]


@_reports_user_errors
def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    _check_settings(config_settings)
    from oxide_build.package.build_requirements import missing_build_extra

    host = _host_requirements("get_requires_for_build_sdist", config_settings)
    return host + [r for r in missing_build_extra(lambda: False) if r not in host]  # an sdist compiles nothing


@_reports_user_errors
def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> list[str]:
    _check_settings(config_settings)
    host = _host_requirements("get_requires_for_build_editable", config_settings)
    return host + [r for r in _toolchain_requirements(config_settings) if r not in host]


def _kernel_modules(project: Path, config_settings: ConfigSettings, warn: bool = False) -> list[str]:
    """The project's modules that define kernels (scanned, nothing imported); loading the
    configuration first, so a bad ``[tool.oxide]`` or a misspelt ``-C oxide.`` key fails every
    hook. With ``warn``, prints a warning for each config setting no one reads."""
    from oxide_build.scan import scan_root
    from oxide_build.config import SETUPTOOLS_SETTINGS, check_foreign_settings, load_config
    from oxide_build.scan import scan_tree

    host_reads = SETUPTOOLS_SETTINGS if host_backend_name(project) == SETUPTOOLS_BACKEND else None
    unread = check_foreign_settings(config_settings, host_reads)
    config = load_config(project, config_settings)
    for warning in unread:
        if warn and config.shows_warnings:
            print(warning, file=sys.stderr, flush=True)
    packages = list(config.packages) if config.packages is not None else None
    return sorted(m.name for m in scan_tree(scan_root(project), packages).modules)


def _check_static_requirement(project: Path, kernel_modules: list[str]) -> bool:
    """Checks the runtime requirement in ``[project] dependencies``; False when the
    dependencies are dynamic (then the metadata the host backend wrote must be checked)."""
    from oxide_build.config import read_pyproject
    from oxide_build.package.requirement import check_requirements, dependencies_are_dynamic

    pyproject = read_pyproject(project)
    if dependencies_are_dynamic(pyproject):
        return False
    dependencies = pyproject["project"].get("dependencies", [])
    check_requirements([d for d in dependencies if isinstance(d, str)], kernel_modules,
                       f"{project / 'pyproject.toml'}: [project] dependencies")
    return True


def _check_metadata_requirement(metadata: str, kernel_modules: list[str], source: str) -> None:
    from oxide_build.package.requirement import check_requirements, metadata_requirements

    check_requirements(metadata_requirements(metadata), kernel_modules, source)


def _check_toolchain(verbose: bool, log: Any = None) -> None:
    """Fails at once, with the packages to install, when the LTO-IR producers are newer than
    nvJitLink; with ``verbose`` (``[tool.oxide] verbose`` or ``logging-level = "DEBUG"``,
    ``OXIDE_VERBOSE=1``, ``OXIDE_LOGGING_LEVEL=debug``) or on that
    failure, prints where each toolchain piece comes from (pip -v shows it)."""
    from oxide.errors import ToolchainError
    from oxide_build.toolchain import check_link_compatibility, toolchain_report

    out = sys.stderr if log is None else log

    def report() -> None:
        print("oxide: toolchain\n" + "\n".join(f"  {line}" for line in toolchain_report()), file=out, flush=True)

    if verbose:
        report()
    try:
        check_link_compatibility()
    except ToolchainError:
        if not verbose:
            report()  # what the message is about: where each piece came from
        raise


def _compiler_installed() -> bool:
    from oxide_build.package.module_cache import compiler_installed

    return compiler_installed()


def _compile_project(project: Path, config: OxideConfig, staging: Path | None) -> None:
    """``compile_project``; at ``logging-level = "ERROR"`` without the cache's warnings."""
    import warnings

    from oxide_build.build import compile_project

    with warnings.catch_warnings():
        if not config.shows_warnings:
            from oxide_build.link.cache import CacheWarning

            warnings.simplefilter("ignore", CacheWarning)
        compile_project(project, config, staging)


def _prepare_metadata(kind: str, metadata_directory: str, config_settings: ConfigSettings) -> str:
    from oxide_build.package.wheel import normalized_dist_name

    project = _project_dir()
    modules = _kernel_modules(project, config_settings)
    static = _check_static_requirement(project, modules)
    prepare = (_host_editable_hook("prepare_metadata_for_build_editable") if kind == "editable"
               else _host_backend().prepare_metadata_for_build_wheel)
    dist_info = str(prepare(metadata_directory, _host_settings(config_settings)))
    name, dash, version = dist_info[: -len(".dist-info")].rpartition("-")
    normalized = f"{normalized_dist_name(name)}-{version}.dist-info"  # as rewrite_wheel names it
    if dash and normalized != dist_info:
        (Path(metadata_directory) / dist_info).rename(Path(metadata_directory) / normalized)
        dist_info = normalized
    if not static:
        path = Path(metadata_directory) / dist_info / "METADATA"
        _check_metadata_requirement(path.read_text(encoding="utf-8"), modules, str(path))
    return dist_info


@_reports_user_errors
def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    return _prepare_metadata("wheel", metadata_directory, config_settings)


@_reports_user_errors
def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    return _prepare_metadata("editable", metadata_directory, config_settings)


@_reports_user_errors
def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    from oxide_build.package.sdist import rewrite_sdist

    project = _project_dir()
    # a bad [tool.oxide], or kernels without the runtime requirement, should not be shipped
    _check_static_requirement(project, _kernel_modules(project, config_settings, warn=True))
    from oxide_build.scan import scan_root
    from oxide_build.config import load_config
    from oxide_build.package.sdist import check_extern_sources_inside

    config = load_config(project, config_settings)
    check_extern_sources_inside(project, scan_root(project), list(config.packages) if config.packages is not None else None)
    name = str(_host_backend().build_sdist(sdist_directory, _host_settings(config_settings)))
    return rewrite_sdist(Path(sdist_directory) / name, project).name


def _build_dir(project: Path, build_dir: str) -> Path:
    """``[tool.oxide] build-dir``, emptied: a directory strictly inside the project that holds
    no Python file (it is deleted and rewritten, so it must not be a source directory)."""
    import shutil

    from oxide_build.config import ConfigError

    path = (project / build_dir).resolve()
    base = project.resolve()
    if path == base or not path.is_relative_to(base):
        raise ConfigError(f"[tool.oxide] build-dir = {build_dir!r}: must be a directory inside the project {base} "
                          "(it is emptied by every build), e.g. \"build/oxide\"")
    if path.is_dir() and any(path.rglob("*.py")):
        raise ConfigError(f"[tool.oxide] build-dir = {build_dir!r}: {path} holds Python files; every build empties "
                          "it, so name a directory of its own, e.g. \"build/oxide\"")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


@_reports_user_errors
def build_wheel(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    from oxide_build.config import load_config
    from oxide_build.package.wheel import collect_files, rewrite_wheel, wheel_metadata

    project = _project_dir()
    modules = _kernel_modules(project, config_settings, warn=True)
    static = _check_static_requirement(project, modules)
    config = load_config(project, config_settings)
    backend = _host_backend()
    if modules and _compiler_installed():  # without it, every unit must come from the cache
        _check_toolchain(config.shows_debug)
    # Compile before the host build runs: a compile error then fails the build at once.
    artifacts: dict[str, bytes] = {}
    if config.cmake_kernels:
        # CMake's oxide_add_kernels compiles them; it reads [tool.oxide], and the archs
        # chosen here (OXIDE_ARCH, -C oxide.arch) through the environment
        import os

        os.environ["OXIDE_ARCH"] = ",".join(config.arch)
    elif config.build_dir is not None:
        staging = _build_dir(project, config.build_dir)
        _compile_project(project, config, staging)
        artifacts = collect_files(staging)
    else:
        with tempfile.TemporaryDirectory(prefix="oxide-build-") as staging_dir:
            _compile_project(project, config, Path(staging_dir))
            artifacts = collect_files(Path(staging_dir))
    name = backend.build_wheel(wheel_directory, _host_settings(config_settings))
    if not static:
        _check_metadata_requirement(wheel_metadata(Path(wheel_directory) / name), modules, str(name))
    return rewrite_wheel(Path(wheel_directory) / name, artifacts, drop_artifact_dirs=True).name


@_reports_user_errors
def build_editable(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    from oxide_build.config import load_config
    from oxide_build.package.wheel import rewrite_wheel, wheel_metadata

    project = _project_dir()
    modules = _kernel_modules(project, config_settings, warn=True)
    static = _check_static_requirement(project, modules)
    config = load_config(project, config_settings)
    host_build_editable = _host_editable_hook("build_editable")  # before compiling: fails at once
    if modules and _compiler_installed():
        _check_toolchain(config.shows_debug)
    # The editable wheel points at the source tree, so the artifacts go there.
    _compile_project(project, config, None)
    name = host_build_editable(wheel_directory, _host_settings(config_settings))
    if not static:
        _check_metadata_requirement(wheel_metadata(Path(wheel_directory) / name), modules, str(name))
    return rewrite_wheel(Path(wheel_directory) / name).name
