"""``[tool.oxide]``: the build configuration of a project, as frozen dataclasses.

Three sources, later ones winning: the ``[tool.oxide]`` table of ``pyproject.toml``, the
environment variable ``OXIDE_ARCH``, and PEP 517 config settings (``-C oxide.arch=sm_90``;
lists are comma-separated there). Every value is checked here, so a typo fails the build with
a message that names the key, the value and what is allowed.

The field docstrings of ``OxideConfig`` are the documentation: ``settings_reference()``
renders them (with each key's type and default) into ``docs/configuration.md``, the way
scikit-build-core documents its settings.
"""
from __future__ import annotations

import ast
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from oxide.errors import OxideError
from oxide_build.compile import CompileOptions
from oxide_build.targets import BACKENDS, DEFAULT_ARCHS, SUPPORTED_ARCHS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ALLOWED_KEYS",
    "ARCH_ENV",
    "CONFIG_SETTINGS_PREFIX",
    "ConfigError",
    "PYPROJECT_SOURCE",
    "OxideConfig",
    "SettingDoc",
    "default_jobs",
    "load_config",
    "parse_config",
    "read_pyproject",
    "settings_docs",
    "settings_reference",
]

ARCH_ENV = "OXIDE_ARCH"
CONFIG_SETTINGS_PREFIX = "oxide."
MAX_REGISTERS_RANGE = (16, 255)


class ConfigError(OxideError):
    """``[tool.oxide]``, ``OXIDE_ARCH`` or a ``-C oxide.*`` setting has a bad key or value."""


def default_jobs() -> int:
    """The CPUs this process may run on (``jobs`` when unset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class OxideConfig:
    """The ``[tool.oxide]`` table. Keys are spelled with dashes in TOML (``opt-level``)."""

    arch: tuple[str, ...] = DEFAULT_ARCHS
    """GPU architectures to build a cubin for, e.g. ``["sm_80", "sm_90"]``. Every kernel is
    compiled for each; the runtime loads the cubin of the device's arch (or the newest older
    one of the same major version). ``OXIDE_ARCH=sm_90,sm_100`` overrides it."""

    packages: tuple[str, ...] | None = None
    """Top-level packages (directory names under the project root, or under ``src/``) to scan
    for kernels; unset means every package."""

    ptx: bool = False
    """Also ship PTX of the newest arch, which the driver JIT-compiles on GPUs newer than every
    listed arch (forward compatibility)."""

    fatbin: bool = True
    """Ship one fatbin per module (nvFatbin) holding every arch's cubin and the PTX, instead of
    a file per arch; the driver picks the code for the device when it loads the module."""

    opt_level: int = 3
    """Optimization level, 0 to 3 (LLVM and ptxas)."""

    bounds_check: bool = True
    """Check reads of ``Slice`` views on the device; a failed check raises
    ``oxide.KernelError`` on the host. Checks that a dominating guard proves are removed."""

    backend: str = "nvptx"
    """What turns LLVM IR into PTX: ``"nvptx"`` (LLVM's NVPTX target, through llvmlite) or
    ``"nvvm"`` (NVIDIA's libNVVM). Modules that link CUDA C++ always go through libNVVM's
    LTO-IR."""

    link: tuple[str, ...] = ()
    """More device-linker inputs for every kernel module: CUDA C++ sources (``.cu``, compiled by
    NVRTC) and ``.ltoir``, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o`` and ``.a`` files. Globs,
    relative to the project root (``["csrc/*.cu"]``); a pattern that matches nothing is an
    error. Sources named by ``@extern(sources=...)`` need not be listed."""

    include_dirs: tuple[str, ...] = ()
    """Include directories for CUDA C++ sources, relative to the project root (the CUDA and CCCL
    headers of the nvidia-* wheels are always on the path)."""

    defines: tuple[str, ...] = ()
    """Preprocessor definitions for CUDA C++ sources: ``"NAME"`` or ``"NAME=VALUE"``."""

    nvrtc_options: tuple[str, ...] = ()
    """More NVRTC options for CUDA C++ sources, e.g. ``["-std=c++20"]``."""

    fast_math: bool = False
    """Approximate division, square root, ``exp``, ``log``, ``sin`` and ``cos``; flush
    denormals; no guarantees about NaN and infinity."""

    lineinfo: bool = False
    """Line tables in the cubins, so profilers (Nsight Compute) map SASS back to Python lines.
    File names are relative to the project's source root."""

    max_registers: int | None = None
    """Per-thread register cap for every kernel (ptxas ``-maxrregcount``), 16 to 255; unset
    means no cap."""

    jobs: int | None = None
    """Compile jobs run at once (each a module for one arch); unset means one per CPU. The
    wheel's contents do not depend on it."""

    cmake_kernels: bool = False
    """The kernels are compiled by CMake (``oxide_add_kernels`` in CMakeLists.txt, see
    docs/mixed-language.md), not by the backend before CMake runs, so that they can link the
    device libraries CMake builds. The backend then checks the toolchain and the runtime
    requirement only (an editable install still compiles them next to the sources)."""

    def compile_options(self, project_dir: Path | None = None) -> CompileOptions:
        """The compiler's options. ``project_dir`` resolves ``link`` globs and
        ``include-dirs``; without it they are passed as written."""
        return CompileOptions(
            archs=self.arch,
            opt_level=self.opt_level,
            bounds_check=self.bounds_check,
            embed_ptx=self.ptx,
            backend=self.backend,
            include_dirs=tuple(self._include_dirs(project_dir)),
            defines=self.defines,
            nvrtc_options=self.nvrtc_options,
            link_inputs=tuple(self._link_inputs(project_dir)),
            fast_math=self.fast_math,
            lineinfo=self.lineinfo,
            max_registers=self.max_registers,
            fatbin=self.fatbin,
        )

    @property
    def job_count(self) -> int:
        return self.jobs if self.jobs is not None else default_jobs()

    def _include_dirs(self, project_dir: Path | None) -> list[str]:
        if project_dir is None:
            return list(self.include_dirs)
        return [str((project_dir / d).resolve()) for d in self.include_dirs]

    def _link_inputs(self, project_dir: Path | None) -> list[str]:
        if project_dir is None:
            return list(self.link)
        found: dict[str, None] = {}
        for pattern in self.link:
            if Path(pattern).is_absolute():  # a file a build tool made (CMake's device libraries)
                matches = [Path(pattern)] if Path(pattern).is_file() else []
            else:
                matches = sorted(p for p in project_dir.glob(pattern) if p.is_file())
            if not matches:
                raise ConfigError(
                    f"{PYPROJECT_SOURCE}: link = {list(self.link)!r}: {pattern!r} matches no file "
                    f"under {project_dir}"
                )
            for path in matches:
                found.setdefault(str(path.resolve()), None)
        return list(found)


def _toml_key(name: str) -> str:
    return name.replace("_", "-")


ALLOWED_KEYS: tuple[str, ...] = tuple(sorted(_toml_key(f.name) for f in fields(OxideConfig)))


PYPROJECT_SOURCE = "pyproject.toml [tool.oxide]"


@dataclass(frozen=True)
class _Source:
    """Where a value came from, for messages."""

    where: str
    from_text: bool  # a string to split and convert (environment, config settings)


# what each kind of value may be, as error messages and the reference say it
_ALLOWED: dict[str, str] = {
    "bool": "true or false",
    "arch": "a list of archs from " + ", ".join(SUPPORTED_ARCHS),
    "packages": "a list of top-level package names",
    "strings": "a list of strings",
    "paths": "a list of paths relative to the project root",
    "globs": "a list of globs relative to the project root",
    "defines": 'a list of "NAME" or "NAME=VALUE"',
    "backend": " or ".join(repr(b) for b in BACKENDS),
    "opt-level": "an integer from 0 to 3",
    "max-registers": f"an integer from {MAX_REGISTERS_RANGE[0]} to {MAX_REGISTERS_RANGE[1]}",
    "jobs": "a positive integer",
}

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
    raise _bad(source, key, value, _ALLOWED["bool"])


def _as_int(source: _Source, key: str, value: Any, low: int, high: int | None, allowed: str) -> int:
    number: Any = value
    if source.from_text and isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if (
        isinstance(number, bool)
        or not isinstance(number, int)
        or number < low
        or (high is not None and number > high)
    ):
        raise _bad(source, key, value, allowed)
    return number


def _as_arch(source: _Source, key: str, value: Any) -> tuple[str, ...]:
    allowed = _ALLOWED["arch"]
    archs = _as_list(source, key, value, allowed)
    if not archs:
        raise _bad(source, key, value, allowed)
    for arch in archs:
        if arch not in SUPPORTED_ARCHS:
            raise ConfigError(
                f"{source.where}: arch {arch!r} is not supported; supported archs: "
                + ", ".join(SUPPORTED_ARCHS)
            )
    return tuple(dict.fromkeys(archs))  # drop repeats, keep the order given


def _as_packages(source: _Source, key: str, value: Any) -> tuple[str, ...]:
    allowed = _ALLOWED["packages"]
    packages = _as_list(source, key, value, allowed)
    for name in packages:
        if not name.isidentifier():
            raise _bad(source, key, value, allowed)
    return tuple(packages)


def _as_strings(source: _Source, key: str, value: Any, allowed: str = _ALLOWED["strings"]) -> tuple[str, ...]:
    items = _as_list(source, key, value, allowed)
    if any(not item.strip() for item in items):
        raise _bad(source, key, value, allowed)
    return tuple(items)


def _as_paths(source: _Source, key: str, value: Any) -> tuple[str, ...]:
    allowed = _ALLOWED["globs"] if key == "link" else _ALLOWED["paths"]
    items = _as_strings(source, key, value, allowed)
    for item in items:
        if Path(item).is_absolute() or ".." in Path(item).parts:
            raise _bad(source, key, value, allowed)
    return items


def _as_defines(source: _Source, key: str, value: Any) -> tuple[str, ...]:
    allowed = _ALLOWED["defines"]
    items = _as_list(source, key, value, allowed)
    for item in items:
        name = item.split("=", 1)[0]
        if not name.isidentifier():
            raise _bad(source, key, value, allowed)
    return tuple(items)


def _as_backend(source: _Source, key: str, value: Any) -> str:
    text = value.strip() if source.from_text and isinstance(value, str) else value
    if text not in BACKENDS:
        raise _bad(source, key, value, _ALLOWED["backend"])
    return str(text)


def _as_opt_level(source: _Source, key: str, value: Any) -> int:
    return _as_int(source, key, value, 0, 3, _ALLOWED["opt-level"])


def _as_max_registers(source: _Source, key: str, value: Any) -> int:
    low, high = MAX_REGISTERS_RANGE
    return _as_int(source, key, value, low, high, _ALLOWED["max-registers"])


def _as_jobs(source: _Source, key: str, value: Any) -> int:
    return _as_int(source, key, value, 1, None, _ALLOWED["jobs"])


_Parser = Callable[[_Source, str, Any], Any]


def _bool_parser(source: _Source, key: str, value: Any) -> bool:
    return _as_bool(source, key, value)


# TOML key -> (parser, what is allowed, type as the reference shows it)
_PARSERS: dict[str, tuple[_Parser, str, str]] = {
    "arch": (_as_arch, _ALLOWED["arch"], "list of strings"),
    "packages": (_as_packages, _ALLOWED["packages"], "list of strings"),
    "ptx": (_bool_parser, _ALLOWED["bool"], "bool"),
    "fatbin": (_bool_parser, _ALLOWED["bool"], "bool"),
    "opt-level": (_as_opt_level, _ALLOWED["opt-level"], "int"),
    "bounds-check": (_bool_parser, _ALLOWED["bool"], "bool"),
    "backend": (_as_backend, _ALLOWED["backend"], "string"),
    "link": (_as_paths, _ALLOWED["globs"], "list of strings"),
    "include-dirs": (_as_paths, _ALLOWED["paths"], "list of strings"),
    "defines": (_as_defines, _ALLOWED["defines"], "list of strings"),
    "nvrtc-options": (_as_strings, _ALLOWED["strings"], "list of strings"),
    "fast-math": (_bool_parser, _ALLOWED["bool"], "bool"),
    "lineinfo": (_bool_parser, _ALLOWED["bool"], "bool"),
    "max-registers": (_as_max_registers, _ALLOWED["max-registers"], "int"),
    "jobs": (_as_jobs, _ALLOWED["jobs"], "int"),
    "cmake-kernels": (_bool_parser, _ALLOWED["bool"], "bool"),
}
assert set(_PARSERS) == set(ALLOWED_KEYS), "every OxideConfig field needs a parser"


def _unknown_key(where: str, key: str) -> ConfigError:
    return ConfigError(f"{where}: unknown key {key!r}; allowed keys: " + ", ".join(ALLOWED_KEYS))


def parse_config(
    table: Mapping[str, Any],
    source: str = PYPROJECT_SOURCE,
    base: OxideConfig = OxideConfig(),
    from_text: bool = False,
) -> OxideConfig:
    """Checks one table of settings (TOML values; strings when ``from_text``) and returns
    ``base`` with those settings applied. ``source`` names where they came from in errors."""
    src = _Source(source, from_text)
    for key in table:
        if key not in _PARSERS:
            raise _unknown_key(source, key)
    values: dict[str, Any] = {}
    for key, value in table.items():
        parser = _PARSERS[key][0]
        values[key.replace("-", "_")] = parser(src, key, value)
    return _replace(base, values)


def _replace(config: OxideConfig, values: dict[str, Any]) -> OxideConfig:
    current = {f.name: getattr(config, f.name) for f in fields(OxideConfig)}
    current.update(values)
    return OxideConfig(**current)


def read_pyproject(project_dir: Path) -> Mapping[str, Any]:
    """``pyproject.toml`` of ``project_dir`` as a dict (empty when there is none)."""
    path = project_dir / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _oxide_table(pyproject: Mapping[str, Any]) -> Mapping[str, Any]:
    tool = pyproject.get("tool", {})
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
    config = parse_config(_oxide_table(read_pyproject(project_dir)))
    arch_env = env.get(ARCH_ENV, "").strip()
    if arch_env:
        config = parse_config({"arch": arch_env}, source=f"environment variable {ARCH_ENV}", base=config, from_text=True)
    settings = _settings_table(config_settings)
    for key in settings:
        if key not in _PARSERS:
            raise _unknown_key(f"config setting {CONFIG_SETTINGS_PREFIX}{key}", key)
    for key, value in settings.items():
        config = parse_config({key: value}, source=f"config setting {CONFIG_SETTINGS_PREFIX}{key}", base=config, from_text=True)
    return config


# --- the reference ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingDoc:
    key: str  # as spelled in TOML
    type: str
    default: str  # as TOML
    allowed: str
    doc: str


def _field_docstrings() -> dict[str, str]:
    """Field name -> the string literal that follows its annotation in ``OxideConfig``."""
    tree = ast.parse(inspect.getsource(OxideConfig))
    (cls,) = tree.body
    assert isinstance(cls, ast.ClassDef)
    docs: dict[str, str] = {}
    body = cls.body
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _toml_value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def settings_docs() -> list[SettingDoc]:
    """Every ``[tool.oxide]`` key with its type, default and documentation, in field order."""
    docs = _field_docstrings()
    out: list[SettingDoc] = []
    for f in fields(OxideConfig):
        key = _toml_key(f.name)
        default = f.default if f.default is not MISSING else None
        shown = _toml_value(default)
        if f.name == "jobs":
            shown = "unset (the number of CPUs)"
        _, allowed, kind = _PARSERS[key]
        out.append(SettingDoc(key, kind, shown, allowed, docs.get(f.name, "")))
    return out


def settings_reference() -> str:
    """The ``[tool.oxide]`` reference in Markdown (the body of ``docs/configuration.md``)."""
    lines: list[str] = []
    for s in settings_docs():
        doc = " ".join(s.doc.split())
        lines += [
            f"### `{s.key}`",
            "",
            f"- type: {s.type}; allowed: {s.allowed}",
            f"- default: `{s.default}`" if not s.default.startswith("unset") else f"- default: {s.default}",
            f"- override: `-C {CONFIG_SETTINGS_PREFIX}{s.key}=...`"
            + (f" or `{ARCH_ENV}=...`" if s.key == "arch" else ""),
            "",
            doc,
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"
