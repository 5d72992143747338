"""``[tool.oxide]``: the build configuration of a project, as frozen dataclasses.

Three sources, later ones winning: the ``[tool.oxide]`` table of ``pyproject.toml``, the
environment variable ``OXIDE_ARCH``, and PEP 517 config settings (``-C oxide.arch=sm_90``;
lists are comma-separated there). Every value is checked here, so a typo fails the build with
a message that names the key, the value and what is allowed.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from oxide.errors import OxideError
from oxide_build.compile import DEFAULT_ARCHS, SUPPORTED_ARCHS, CompileOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ARCH_ENV",
    "CONFIG_SETTINGS_PREFIX",
    "ConfigError",
    "PYPROJECT_SOURCE",
    "OxideConfig",
    "load_config",
    "parse_config",
]

ARCH_ENV = "OXIDE_ARCH"
CONFIG_SETTINGS_PREFIX = "oxide."


class ConfigError(OxideError):
    """``[tool.oxide]``, ``OXIDE_ARCH`` or a ``-C oxide.*`` setting has a bad key or value."""


@dataclass(frozen=True)
class OxideConfig:
    """The ``[tool.oxide]`` table. Keys are spelled with dashes in TOML (``opt-level``)."""

    arch: tuple[str, ...] = DEFAULT_ARCHS
    """GPU architectures to build a cubin for, e.g. ``["sm_80", "sm_90"]``."""

    packages: tuple[str, ...] | None = None
    """Top-level packages (directory names under the project root) to scan for kernels;
    unset means every package."""

    ptx: bool = False
    """Also ship PTX of the newest arch, for GPUs newer than every listed arch."""

    opt_level: int = 3
    """LLVM optimization level, 0 to 3."""

    bounds_check: bool = True
    """Check reads of ``Slice`` views on the device (checks a guard proves are removed)."""

    def compile_options(self) -> CompileOptions:
        return CompileOptions(
            archs=self.arch,
            opt_level=self.opt_level,
            bounds_check=self.bounds_check,
            embed_ptx=self.ptx,
        )


def _toml_key(name: str) -> str:
    return name.replace("_", "-")


ALLOWED_KEYS: tuple[str, ...] = tuple(sorted(_toml_key(f.name) for f in fields(OxideConfig)))


PYPROJECT_SOURCE = "pyproject.toml [tool.oxide]"


@dataclass(frozen=True)
class _Source:
    """Where a value came from, for messages."""

    where: str
    from_text: bool  # a string to split and convert (environment, config settings)


def _bad(source: _Source, key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{source.where}: {key} = {value!r} is not allowed; expected {allowed}")


def _as_list(source: _Source, key: str, value: Any, allowed: str) -> list[str]:
    if source.from_text and isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise _bad(source, key, value, allowed)


def _as_bool(source: _Source, key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if source.from_text and isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    raise _bad(source, key, value, "true or false")


def _as_arch(source: _Source, value: Any) -> tuple[str, ...]:
    allowed = "a list of archs from " + ", ".join(SUPPORTED_ARCHS)
    archs = _as_list(source, "arch", value, allowed)
    if not archs:
        raise _bad(source, "arch", value, allowed)
    for arch in archs:
        if arch not in SUPPORTED_ARCHS:
            raise ConfigError(
                f"{source.where}: arch {arch!r} is not supported; supported archs: "
                + ", ".join(SUPPORTED_ARCHS)
            )
    return tuple(dict.fromkeys(archs))  # drop repeats, keep the order given


def _as_packages(source: _Source, value: Any) -> tuple[str, ...]:
    allowed = "a list of top-level package names"
    packages = _as_list(source, "packages", value, allowed)
    for name in packages:
        if not name.isidentifier():
            raise _bad(source, "packages", value, allowed)
    return tuple(packages)


def _as_opt_level(source: _Source, value: Any) -> int:
    level: Any = value
    if source.from_text and isinstance(value, str) and value.strip().isdigit():
        level = int(value.strip())
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise _bad(source, "opt-level", value, "an integer from 0 to 3")
    return level


def parse_config(
    table: Mapping[str, Any],
    source: str = PYPROJECT_SOURCE,
    base: OxideConfig = OxideConfig(),
    from_text: bool = False,
) -> OxideConfig:
    """Checks one table of settings (TOML values; strings when ``from_text``) and returns
    ``base`` with those settings applied. ``source`` names where they came from in errors."""
    src = _Source(source, from_text)
    values: dict[str, Any] = {}
    for key in table:
        if key not in ALLOWED_KEYS:
            raise ConfigError(
                f"{source}: unknown key {key!r}; allowed keys: " + ", ".join(ALLOWED_KEYS)
            )
    if "arch" in table:
        values["arch"] = _as_arch(src, table["arch"])
    if "packages" in table:
        values["packages"] = _as_packages(src, table["packages"])
    if "ptx" in table:
        values["ptx"] = _as_bool(src, "ptx", table["ptx"])
    if "opt-level" in table:
        values["opt_level"] = _as_opt_level(src, table["opt-level"])
    if "bounds-check" in table:
        values["bounds_check"] = _as_bool(src, "bounds-check", table["bounds-check"])
    return _replace(base, values)


def _replace(config: OxideConfig, values: dict[str, Any]) -> OxideConfig:
    current = {f.name: getattr(config, f.name) for f in fields(OxideConfig)}
    current.update(values)
    return OxideConfig(**current)


def _read_pyproject(project_dir: Path) -> Mapping[str, Any]:
    path = project_dir / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("oxide", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{PYPROJECT_SOURCE}: must be a table")
    return table


def _settings_table(config_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``oxide.*`` entries of PEP 517 config settings, prefix removed. A key given twice
    (a list) counts as one comma-separated value."""
    table: dict[str, Any] = {}
    for key, value in (config_settings or {}).items():
        if not key.startswith(CONFIG_SETTINGS_PREFIX):
            continue
        name = key[len(CONFIG_SETTINGS_PREFIX):]
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        table[name] = value
    return table


def load_config(
    project_dir: Path,
    config_settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> OxideConfig:
    """The configuration of the project in ``project_dir``: ``[tool.oxide]``, then
    ``OXIDE_ARCH``, then ``oxide.*`` config settings."""
    env = os.environ if environ is None else environ
    config = parse_config(_read_pyproject(project_dir))
    arch_env = env.get(ARCH_ENV, "").strip()
    if arch_env:
        config = parse_config({"arch": arch_env}, source=f"environment variable {ARCH_ENV}", base=config, from_text=True)
    settings = _settings_table(config_settings)
    if settings:
        for key in settings:
            if key not in ALLOWED_KEYS:
                raise ConfigError(
                    f"config setting {CONFIG_SETTINGS_PREFIX}{key}: unknown key {key!r}; allowed keys: "
                    + ", ".join(ALLOWED_KEYS)
                )
        for key, value in settings.items():
            config = parse_config({key: value}, source=f"config setting {CONFIG_SETTINGS_PREFIX}{key}", base=config, from_text=True)
    return config
