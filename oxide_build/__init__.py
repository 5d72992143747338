"""oxide's build side, and the PEP 517 / PEP 660 build backend ``build-backend = "oxide_build"``.

The hooks delegate to ``setuptools.build_meta`` for everything Python packaging does, and add
what oxide does: compile every kernel module of the project for the configured archs and put
the artifacts into the wheel (``<package>/_oxide/<module>.json`` and a cubin per arch). An
editable install compiles next to the sources instead, where the runtime then finds them.

Configuration: ``[tool.oxide]`` in pyproject.toml, ``OXIDE_ARCH``, ``-C oxide.<key>=<value>``
(see ``oxide_build.config``). A compile error fails the build with its diagnostic only, no
traceback.
"""
from __future__ import annotations

import functools
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ConfigSettings = Mapping[str, Any] | None
F = TypeVar("F", bound=Callable[..., Any])


def _reports_user_errors(hook: F) -> F:
    """An ``OxideError`` (compile, link, toolchain or config error) ends the build with its
    message on stderr and exit status 1: the message is the diagnostic, a traceback of the
    compiler would only hide it."""

    @functools.wraps(hook)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from oxide.errors import OxideError

        try:
            return hook(*args, **kwargs)
        except OxideError as exc:
            sys.stdout.flush()
            print(f"\n{exc}\n\noxide: build failed", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

    return wrapper  # type: ignore[return-value]


def _setuptools_settings(config_settings: ConfigSettings) -> dict[str, Any] | None:
    """The config settings meant for setuptools: ours (``oxide.*``) removed."""
    if config_settings is None:
        return None
    from oxide_build.config import CONFIG_SETTINGS_PREFIX

    return {k: v for k, v in config_settings.items() if not k.startswith(CONFIG_SETTINGS_PREFIX)}


def _project_dir() -> Path:
    return Path.cwd()  # PEP 517: hooks run in the project's root directory


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    from setuptools import build_meta

    return list(build_meta.get_requires_for_build_wheel(_setuptools_settings(config_settings)))


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    from setuptools import build_meta

    return list(build_meta.get_requires_for_build_sdist(_setuptools_settings(config_settings)))


def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> list[str]:
    from setuptools import build_meta

    return list(build_meta.get_requires_for_build_editable(_setuptools_settings(config_settings)))


def _add_runtime_requirement(metadata_directory: str, dist_info: str) -> str:
    from oxide_build.package.wheel import update_metadata_dir

    update_metadata_dir(Path(metadata_directory), dist_info)
    return dist_info


@_reports_user_errors
def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    from setuptools import build_meta

    dist_info = build_meta.prepare_metadata_for_build_wheel(metadata_directory, _setuptools_settings(config_settings))
    return _add_runtime_requirement(metadata_directory, dist_info)


@_reports_user_errors
def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    from setuptools import build_meta

    dist_info = build_meta.prepare_metadata_for_build_editable(
        metadata_directory, _setuptools_settings(config_settings)
    )
    return _add_runtime_requirement(metadata_directory, dist_info)


@_reports_user_errors
def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    from setuptools import build_meta

    from oxide_build.config import load_config

    load_config(_project_dir(), config_settings)  # a bad [tool.oxide] should not be shipped
    return str(build_meta.build_sdist(sdist_directory, _setuptools_settings(config_settings)))


@_reports_user_errors
def build_wheel(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    from setuptools import build_meta

    from oxide_build.build import compile_project
    from oxide_build.config import load_config
    from oxide_build.package.wheel import collect_files, rewrite_wheel

    project = _project_dir()
    config = load_config(project, config_settings)
    # Compile before setuptools runs: a compile error then fails the build at once.
    with tempfile.TemporaryDirectory(prefix="oxide-build-") as staging:
        compile_project(project, config, Path(staging))
        artifacts = collect_files(Path(staging))
    name = build_meta.build_wheel(wheel_directory, _setuptools_settings(config_settings), metadata_directory)
    rewrite_wheel(Path(wheel_directory) / name, artifacts)
    return str(name)


@_reports_user_errors
def build_editable(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    from setuptools import build_meta

    from oxide_build.build import compile_project
    from oxide_build.config import load_config
    from oxide_build.package.wheel import rewrite_wheel

    project = _project_dir()
    config = load_config(project, config_settings)
    # The editable wheel points at the source tree, so the artifacts go there.
    compile_project(project, config, staging_dir=None)
    name = build_meta.build_editable(wheel_directory, _setuptools_settings(config_settings), metadata_directory)
    rewrite_wheel(Path(wheel_directory) / name)
    return str(name)
