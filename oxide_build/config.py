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
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from oxide.errors import OxideError
from oxide_build.targets import BACKENDS, DEFAULT_ARCHS, SUPPORTED_ARCHS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ALLOWED_KEYS",
    "ARCH_ENV",
    "DOTTED_GROUPS",
    "LOGGING_LEVELS",
    "CONFIG_SETTINGS_PREFIX",
    "CONFIG_KEY_OF_OPTION",
    "CompileOptions",
    "ConfigError",
    "SETUPTOOLS_SETTINGS",
    "check_foreign_settings",
    "PYPROJECT_SOURCE",
    "OxideConfig",
    "SettingDoc",
    "default_jobs",
    "env_name",
    "json_schema",
    "load_config",
    "parse_config",
    "read_pyproject",
    "settings_docs",
    "settings_reference",
]

ARCH_ENV = "OXIDE_ARCH"
LOGGING_LEVELS = ("ERROR", "WARNING", "INFO", "DEBUG")  # quietest first
# scikit-build-core's dotted spellings (editable.rebuild, logging.level): a table of a group,
# in TOML or as a dotted config setting, names the key "<group>-<name>"
DOTTED_GROUPS = ("editable", "logging")
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


_VERSION_RE = re.compile(r"\d+(\.\d+)*")

# what the items of a list-valued key may be: the message's "expected ...", and the check of one
# item ("arch" is checked against SUPPORTED_ARCHS with a message of its own)
LIST_ITEMS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "arch": ("a list of archs from " + ", ".join(SUPPORTED_ARCHS), lambda item: True),
    "package": ("a list of top-level package names", str.isidentifier),
    "string": ("a list of strings", lambda item: bool(item.strip())),
    "path": ("a list of paths relative to the project root",
             lambda item: bool(item.strip()) and not Path(item).is_absolute() and ".." not in Path(item).parts),
    "glob": ("a list of globs relative to the project root",
             lambda item: bool(item.strip()) and not Path(item).is_absolute() and ".." not in Path(item).parts),
    "define": ('a list of "NAME" or "NAME=VALUE"', lambda item: item.split("=", 1)[0].isidentifier()),
    # single strings (a str field without choices)
    "version": ('a version number such as "0.1"', lambda item: bool(_VERSION_RE.fullmatch(item.strip()))),
    "directory": ("a directory path (relative to the project root)", lambda item: bool(item.strip())),
}


def setting(
    *,
    items: str = "string",
    low: int | None = None,
    high: int | None = None,
    choices: tuple[str, ...] = (),
    unset: str = "",
) -> dict[str, Any]:
    """The metadata of an ``OxideConfig`` field that its type does not say: a list's kind of
    item (a key of ``LIST_ITEMS``), an integer's bounds, a string's choices, and what an unset
    value means (for the reference)."""
    assert items in LIST_ITEMS, items
    return {"items": items, "low": low, "high": high, "choices": choices, "unset": unset}


@dataclass(frozen=True)
class OxideConfig:
    """The ``[tool.oxide]`` table. Keys are spelled with dashes in TOML (``opt-level``)."""

    arch: tuple[str, ...] = field(default=DEFAULT_ARCHS, metadata=setting(items="arch"))
    """GPU architectures to build a cubin for, e.g. ``["sm_80", "sm_90"]``. Every kernel is
    compiled for each; the runtime loads the cubin of the device's arch (or the newest older
    one of the same major version). An arch-specific target (``sm_90a``, ``sm_100a``) allows
    the instructions only that GPU has; its cubin loads on that exact arch only, where the
    runtime prefers it, so list the plain arch too (``["sm_80", "sm_90", "sm_90a"]``) for the
    other GPUs. ``OXIDE_ARCH=sm_90,sm_100`` overrides it."""

    packages: tuple[str, ...] | None = field(default=None, metadata=setting(items="package"))
    """Top-level packages (directory names under the project root, or under ``src/``) to scan
    for kernels; unset means every package."""

    ptx: bool = False
    """Also ship PTX of the newest arch, which the driver JIT-compiles on GPUs newer than every
    listed arch (forward compatibility)."""

    fatbin: bool = True
    """Ship one fatbin per module (nvFatbin) holding every arch's cubin and the PTX, instead of
    a file per arch; the driver picks the code for the device when it loads the module."""

    opt_level: int = field(default=3, metadata=setting(low=0, high=3))
    """Optimization level, 0 to 3 (LLVM and ptxas)."""

    bounds_check: bool = True
    """Check reads of ``Slice`` views on the device; a failed check raises
    ``oxide.KernelError`` on the host. Checks that a dominating guard proves are removed."""

    backend: str = field(default="nvptx", metadata=setting(choices=BACKENDS))
    """What turns LLVM IR into PTX: ``"nvptx"`` (LLVM's NVPTX target, through llvmlite) or
    ``"nvvm"`` (NVIDIA's libNVVM). Modules that link CUDA C++ go through libNVVM's LTO-IR
    either way, except those with bf16 values (libNVVM has no bf16), linked from NVPTX's PTX."""

    link: tuple[str, ...] = field(default=(), metadata=setting(items="glob"))
    """More device-linker inputs for every kernel module: CUDA C++ sources (``.cu``, compiled by
    NVRTC) and ``.ltoir``, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o`` and ``.a`` files. Globs,
    relative to the project root (``["csrc/*.cu"]``); a pattern that matches nothing is an
    error. Sources named by ``@extern(sources=...)`` need not be listed."""

    include_dirs: tuple[str, ...] = field(default=(), metadata=setting(items="path"))
    """Include directories for CUDA C++ sources, relative to the project root (the CUDA and CCCL
    headers of the nvidia-* wheels are always on the path)."""

    defines: tuple[str, ...] = field(default=(), metadata=setting(items="define"))
    """Preprocessor definitions for CUDA C++ sources: ``"NAME"`` or ``"NAME=VALUE"``."""

    nvrtc_options: tuple[str, ...] = ()
    """More NVRTC options for CUDA C++ sources, e.g. ``["-std=c++20"]``."""

    fast_math: bool = False
    """Approximate division, square root, ``exp``, ``log``, ``sin``, ``cos`` and ``tanh``
    (``f32``: ``tanh.approx.f32``, as nvcc ``-use_fast_math`` makes ``tanhf``); flush
    denormals; no guarantees about NaN and infinity."""

    fma: bool = True
    """Contract ``a * b + c`` in ``f32``/``f64`` into one fused multiply-add (one rounding), as
    nvcc's default ``--fmad=true`` does for CUDA C++; ``false`` rounds every ``+``, ``-`` and
    ``*`` on its own (``--fmad=false``). ``ox.math.fma`` is fused either way."""

    lineinfo: bool = False
    """Line tables in the cubins, so profilers (Nsight Compute) map SASS back to Python lines.
    File names are relative to the project's source root."""

    max_registers: int | None = field(default=None, metadata=setting(low=MAX_REGISTERS_RANGE[0], high=MAX_REGISTERS_RANGE[1]))
    """Per-thread register cap for every kernel (ptxas ``-maxrregcount``), 16 to 255; unset
    means no cap."""

    jobs: int | None = field(default=None, metadata=setting(low=1, unset="the number of CPUs"))
    """Compile jobs run at once (each a module for one arch); unset means one per CPU. The
    wheel's contents do not depend on it."""

    cmake_kernels: bool = False
    """The kernels are compiled by CMake (``oxide_add_kernels`` in CMakeLists.txt, see
    docs/mixed-language.md), not by the backend before CMake runs, so that they can link the
    device libraries CMake builds. The backend then checks the toolchain and the runtime
    requirement only (an editable install still compiles them next to the sources)."""

    verbose: bool = False
    """Print the build's details on stderr: where each toolchain piece comes from (the
    ``oxide: toolchain`` block) and a line per unit with its time. Without it a build prints a
    progress line on a terminal (none in a log) and the summary line. ``pip -v`` shows the
    backend's output; ``OXIDE_VERBOSE=1`` or ``-C oxide.verbose=true`` turn this on for one build."""

    logging_level: str = field(default="INFO", metadata=setting(choices=LOGGING_LEVELS))
    """How much a build prints on stderr (scikit-build-core's ``logging.level``; also spelt
    ``logging.level``, case-insensitive): ``"ERROR"``, only a failure's message; ``"WARNING"``,
    also warnings (a config setting no one reads, an unusable cache); ``"INFO"``, also the
    progress line on a terminal and the summary line; ``"DEBUG"``, also where each toolchain
    piece comes from (the ``oxide: toolchain`` block) and a line per unit with its time, as
    ``verbose = true`` does."""

    editable_rebuild: bool = True
    """In an editable install (``pip install -e``), recompile a kernel module whose source (or a
    module or C++ file it takes code from) changed since the install, on its first launch, where
    the ``[build]`` extra is installed (scikit-build-core's ``editable.rebuild``; also spelt
    ``editable.rebuild``). ``false``: run the code the install compiled, with one warning per
    stale module, until the next install."""

    editable_mode: str = field(default="inplace", metadata=setting(choices=("inplace",)))
    """Where an editable install puts the compiled kernels (scikit-build-core's
    ``editable.mode``; also spelt ``editable.mode``): ``"inplace"``, next to each kernel
    module's source (``<package>/_oxide/``), where the runtime looks beside the module it
    imports. It is the only mode: scikit-build-core's ``"redirect"`` (a build directory behind an
    import hook) has no counterpart. How the Python files are made importable is setuptools'
    choice (``-C editable_mode=strict``, ``lenient`` or ``compat``)."""

    editable_verbose: bool = True
    """Print a line on stderr when an editable install recompiles a stale module on its first
    launch (what changed, the arch, the time), as scikit-build-core's ``editable.verbose`` does
    for its rebuilds (also spelt ``editable.verbose``); ``false``: recompile silently."""

    minimum_version: str | None = field(default=None, metadata=setting(items="version"))
    """The oldest oxide-cuda that may build the project, e.g. ``"0.1"``: an older one fails the
    build at once, naming both versions, instead of misreading newer settings. Unset: any."""

    build_dir: str | None = field(default=None, metadata=setting(items="directory", unset="a temporary directory"))
    """Where a wheel build stages the compiled kernels (``<build-dir>/<package>/_oxide/``)
    before adding them to the wheel, relative to the project root; emptied when a build starts
    and kept after it, to look at. Unset: a temporary directory, removed after the build. It
    must lie inside the project and hold nothing else: it is deleted and rewritten."""

    cache_dir: str | None = field(default=None, metadata=setting(items="directory", unset="the user cache dir"))
    """Where the compile cache lives, relative to the project root (or absolute); the same as
    setting ``OXIDE_CACHE_DIR`` for the build. Unset: ``$OXIDE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/oxide``, else ``~/.cache/oxide`` (``oxide cache info``)."""

    def compile_options(self, project_dir: Path | None = None) -> CompileOptions:
        """The compiler's options: every field of ``CONFIG_KEY_OF_OPTION`` from its key.
        ``project_dir`` resolves ``link`` globs and ``include-dirs``; without it they are passed
        as written."""
        values: dict[str, Any] = {option: getattr(self, key) for option, key in CONFIG_KEY_OF_OPTION.items()}
        values["include_dirs"] = tuple(self._include_dirs(project_dir))
        values["link_inputs"] = tuple(self._link_inputs(project_dir))
        return CompileOptions(**values)

    @property
    def log_level(self) -> int:
        """``logging-level`` as a number (``LOGGING_LEVELS``' index: 0 ``ERROR`` to 3
        ``DEBUG``); ``verbose = true`` makes it at least ``DEBUG``."""
        return len(LOGGING_LEVELS) - 1 if self.verbose else LOGGING_LEVELS.index(self.logging_level)

    @property
    def shows_warnings(self) -> bool:
        return self.log_level >= LOGGING_LEVELS.index("WARNING")

    @property
    def shows_info(self) -> bool:
        """The progress line and the summary line."""
        return self.log_level >= LOGGING_LEVELS.index("INFO")

    @property
    def shows_debug(self) -> bool:
        """The toolchain block and a line per unit."""
        return self.log_level >= LOGGING_LEVELS.index("DEBUG")

    @property
    def job_count(self) -> int:
        return self.jobs if self.jobs is not None else default_jobs()

    def _include_dirs(self, project_dir: Path | None) -> list[str]:
        if project_dir is None:
            return list(self.include_dirs)
        found: list[str] = []
        for entry in self.include_dirs:
            path = (project_dir / entry).resolve()
            if not path.is_dir():
                what = "is a file, not a directory" if path.exists() else "does not exist"
                raise ConfigError(
                    f"{PYPROJECT_SOURCE}: include-dirs = {list(self.include_dirs)!r}: {entry!r} {what} "
                    f"({path}); entries are directories relative to the project root {project_dir}"
                )
            found.append(str(path))
        return found

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


_DEFAULTS = OxideConfig()


@dataclass(frozen=True)
class CompileOptions:
    """What one compile of a module is asked for: the compiler's options object. Each option
    that is a ``[tool.oxide]`` key (``CONFIG_KEY_OF_OPTION``) takes its default from that key's
    ``OxideConfig`` field, the one place it is written and documented; the last six are not
    project settings (the command line, the JIT and the tests set them)."""

    archs: tuple[str, ...] = _DEFAULTS.arch
    opt_level: int = _DEFAULTS.opt_level
    bounds_check: bool = _DEFAULTS.bounds_check
    embed_ptx: bool = _DEFAULTS.ptx  # also ship PTX of the newest arch (forward compatibility)
    backend: str = _DEFAULTS.backend  # what makes PTX of a module without C++: "nvptx" or "nvvm"
    include_dirs: tuple[str, ...] = _DEFAULTS.include_dirs  # -I for NVRTC (resolved paths)
    defines: tuple[str, ...] = _DEFAULTS.defines  # -D for NVRTC: "NAME" or "NAME=VALUE"
    nvrtc_options: tuple[str, ...] = _DEFAULTS.nvrtc_options
    link_inputs: tuple[str, ...] = _DEFAULTS.link  # more linker inputs (resolved paths): .cu .ltoir .ptx ...
    fast_math: bool = _DEFAULTS.fast_math
    fma: bool = _DEFAULTS.fma
    lineinfo: bool = _DEFAULTS.lineinfo
    max_registers: int | None = _DEFAULTS.max_registers
    fatbin: bool = _DEFAULTS.fatbin  # also make CompiledModule.fatbin: the cubins + PTX of the newest arch
    # not [tool.oxide] keys
    link_cubins: bool = True  # False: stop after PTX (oxide compile --emit llvm/ptx)
    cudadevrt: bool = False  # link libcudadevrt (device runtime: dynamic parallelism)
    cache: bool = True  # reuse NVRTC / libNVVM / nvJitLink results from the compile cache
    emit_ltoir: bool = False  # LTO-IR of the Python side even when the module has no C++ interop
    # "cuda" (PTX, cubins) or "cpu": host code for the CPU device instead (backends/cpu/; the
    # runtime's OXIDE_DEVICE=cpu asks for it), and no GPU code
    device: str = "cuda"
    # with device "cpu": host code instrumented for the CPU device's memcheck (every global and
    # shared access checked against the launch's allocations, backends/cpu/codegen.py)
    sanitize: bool = False


# CompileOptions field -> the OxideConfig field (the [tool.oxide] key, dashes for underscores)
# it is read from; its default is that field's
CONFIG_KEY_OF_OPTION: dict[str, str] = {
    "archs": "arch", "opt_level": "opt_level", "bounds_check": "bounds_check", "embed_ptx": "ptx",
    "backend": "backend", "include_dirs": "include_dirs", "defines": "defines", "nvrtc_options": "nvrtc_options",
    "link_inputs": "link", "fast_math": "fast_math", "fma": "fma", "lineinfo": "lineinfo",
    "max_registers": "max_registers", "fatbin": "fatbin",
}


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


@dataclass(frozen=True)
class _Setting:
    """How one ``[tool.oxide]`` key is read: from its ``OxideConfig`` field's type (``bool``,
    ``int``, ``str``, ``tuple[str, ...]``, each possibly ``| None``) and ``setting()`` metadata."""

    key: str  # as spelled in TOML
    kind: str  # "bool", "int", "str" or "list"
    items: str
    low: int | None
    high: int | None
    choices: tuple[str, ...]
    unset: str

    @classmethod
    def of(cls, f: Field[Any]) -> _Setting:
        kind = {"bool": "bool", "int": "int", "str": "str", "tuple[str, ...]": "list"}[str(f.type).removesuffix(" | None")]
        meta = f.metadata or setting()
        return cls(_toml_key(f.name), kind, meta["items"], meta["low"], meta["high"], meta["choices"], meta["unset"])

    @property
    def allowed(self) -> str:
        """What a value may be, as error messages and the reference say it."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "int":
            if self.high is not None:
                return f"an integer from {self.low} to {self.high}"
            return "a positive integer" if self.low == 1 else f"an integer of at least {self.low}"
        if self.kind == "str":
            return " or ".join(repr(c) for c in self.choices) if self.choices else LIST_ITEMS[self.items][0]
        return LIST_ITEMS[self.items][0]

    @property
    def type_name(self) -> str:
        return {"bool": "bool", "int": "int", "str": "string", "list": "list of strings"}[self.kind]

    def parse(self, source: _Source, value: Any) -> Any:
        key, allowed = self.key, self.allowed
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if source.from_text and isinstance(value, str):
                text = value.strip().lower()
                if text in ("1", "true", "yes", "on"):
                    return True
                if text in ("0", "false", "no", "off"):
                    return False
            raise _bad(source, key, value, allowed)
        if self.kind == "int":
            number: Any = value
            if source.from_text and isinstance(value, str) and value.strip().isdigit():
                number = int(value.strip())
            if (
                isinstance(number, bool)
                or not isinstance(number, int)
                or (self.low is not None and number < self.low)
                or (self.high is not None and number > self.high)
            ):
                raise _bad(source, key, value, allowed)
            return number
        if self.kind == "str":
            text = value.strip() if source.from_text and isinstance(value, str) else value
            if self.choices == LOGGING_LEVELS and isinstance(text, str):
                text = text.upper()
            if not self.choices:
                if not isinstance(text, str) or not LIST_ITEMS[self.items][1](text):
                    raise _bad(source, key, value, allowed)
                return text
            if text not in self.choices:
                raise _bad(source, key, value, allowed)
            return str(text)
        items = _as_list(source, key, value, allowed)
        if self.items == "arch":
            return _archs(source, key, value, items, allowed)
        if not all(LIST_ITEMS[self.items][1](item) for item in items):
            raise _bad(source, key, value, allowed)
        return tuple(items)


def _archs(source: _Source, key: str, value: Any, archs: list[str], allowed: str) -> tuple[str, ...]:
    if not archs:
        raise _bad(source, key, value, allowed)
    for arch in archs:
        if arch not in SUPPORTED_ARCHS:
            raise ConfigError(
                f"{source.where}: arch {arch!r} is not supported; supported archs: "
                + ", ".join(SUPPORTED_ARCHS)
            )
    return tuple(dict.fromkeys(archs))  # drop repeats, keep the order given


# TOML key -> how it is read, from the fields of OxideConfig
_SETTINGS: dict[str, _Setting] = {_toml_key(f.name): _Setting.of(f) for f in fields(OxideConfig)}


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
        if key not in _SETTINGS:
            raise _unknown_key(source, key)
    values: dict[str, Any] = {}
    for key, value in table.items():
        values[key.replace("-", "_")] = _SETTINGS[key].parse(src, value)
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
        group, dot, rest = name.partition(".")
        if dot and group in DOTTED_GROUPS:  # -C oxide.editable.rebuild=false
            name = f"{group}-{rest}"
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        table[name] = value
    return table


# The config settings setuptools.build_meta reads (its _ConfigSettingsTranslator); every other
# key given to a setuptools-hosted build is read by no one.
SETUPTOOLS_SETTINGS = frozenset({
    "--global-option", "--build-option", "verbose", "--verbose", "quiet", "--quiet",
    "tag-date", "tag-build", "editable-mode", "editable_mode",
})


def _meant_for_oxide(key: str) -> str | None:
    """The ``oxide.<key>`` a setting without our prefix was probably meant as (``oxid.arch``,
    ``oxide-arch``, ``Oxide.arch``), or None."""
    import difflib

    head, dot, rest = key.partition(".")
    if dot and head.lower() != "oxide" and difflib.SequenceMatcher(None, head.lower(), "oxide").ratio() >= 0.75:
        return CONFIG_SETTINGS_PREFIX + rest
    lowered = key.lower()
    for separator in (".", "-", "_", ":"):
        if lowered.startswith("oxide" + separator) and not key.startswith(CONFIG_SETTINGS_PREFIX):
            return CONFIG_SETTINGS_PREFIX + key[len("oxide") + 1:]
    return None


def check_foreign_settings(config_settings: Mapping[str, Any] | None, host_reads: frozenset[str] | None) -> list[str]:
    """The config settings that are not ``oxide.*``: one that looks like a misspelt ``oxide.``
    key is an error (it would be passed on to the host backend and the build would silently use
    the default), and with ``host_reads`` (the keys the host backend reads; None when it checks
    its own), a warning for each key no one reads."""
    warnings: list[str] = []
    for key in config_settings or {}:
        if key.startswith(CONFIG_SETTINGS_PREFIX):
            continue
        meant = _meant_for_oxide(key)
        if meant is not None:
            name = meant[len(CONFIG_SETTINGS_PREFIX):]
            known = name in _SETTINGS
            raise ConfigError(
                f"config setting {key}: oxide's settings are spelt {CONFIG_SETTINGS_PREFIX}<key>"
                + (f"; did you mean -C {meant}=...?" if known else "")
                + " Allowed keys: " + ", ".join(ALLOWED_KEYS)
            )
        if host_reads is not None and key not in host_reads:
            warnings.append(
                f"oxide: warning: config setting {key!r} is read by neither oxide (its keys are "
                f"{CONFIG_SETTINGS_PREFIX}<key>) nor setuptools; it has no effect"
            )
    return warnings


def env_name(key: str) -> str:
    """The environment variable that sets ``key`` for one build: ``OXIDE_<KEY>``
    (``opt-level`` -> ``OXIDE_OPT_LEVEL``)."""
    return "OXIDE_" + key.upper().replace("-", "_")


def _key_line(text: str, header: str, key: str, occurrence: int = 0) -> int | None:
    """The line (1-based) of ``key = ...`` in the ``occurrence``-th table ``header``
    (``[tool.oxide]``, ``[[tool.oxide.overrides]]``) of a TOML text; None if not found
    there (a key written as a dotted key or an inline table elsewhere)."""
    seen = -1
    inside = False
    key_re = re.compile(r"""\s*(?:%s|"%s"|'%s')\s*[=.]""" % ((re.escape(key),) * 3))
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.split("#", 1)[0].strip() == header and (seen := seen + 1) == occurrence
            continue
        if inside and key_re.match(line):
            return number
    return None


def _located(text: str, key: str, header: str = "[tool.oxide]", occurrence: int = 0) -> str:
    line = _key_line(text, header, key, occurrence) if text else None
    table = header.strip("[]")
    return f"pyproject.toml:{line}: [{table}]" if line is not None else f"pyproject.toml [{table}]"


def _override_applies(where: str, condition: Any, environ: Mapping[str, str]) -> bool:
    """Whether the ``if`` table of one ``[[tool.oxide.overrides]]`` entry holds here: every
    condition given must (``platform-system``/``platform-machine``: a regular expression that
    matches ``sys.platform``/``platform.machine()`` whole; ``python-version``: a version
    specifier, ``">=3.11"``; ``env``: a table of variable -> regular expression its value must
    match, or true/false for set to a true value / not)."""
    import platform

    if not isinstance(condition, dict) or not condition:
        raise ConfigError(f"{where}: an override needs an `if` table of conditions, e.g. "
                          'if.platform-system = "linux"; known conditions: ' + ", ".join(_CONDITIONS))
    for name, wanted in condition.items():
        if name in ("platform-system", "platform-machine"):
            if not isinstance(wanted, str):
                raise ConfigError(f"{where}: if.{name} = {wanted!r} is not allowed; expected a regular expression (a string)")
            actual = sys.platform if name == "platform-system" else platform.machine()
            if not re.fullmatch(wanted, actual):
                return False
        elif name == "python-version":
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                spec = SpecifierSet(str(wanted))
            except InvalidSpecifier:
                raise ConfigError(f"{where}: if.python-version = {wanted!r} is not a version specifier "
                                  '(e.g. ">=3.11")') from None
            if not spec.contains(platform.python_version(), prereleases=True):
                return False
        elif name == "env":
            if not isinstance(wanted, dict):
                raise ConfigError(f"{where}: if.env must be a table: if.env.NAME = \"regex\" or true/false")
            for variable, expected in wanted.items():
                value = environ.get(variable)
                if isinstance(expected, bool):
                    truthy = value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")
                    if truthy != expected:
                        return False
                elif isinstance(expected, str):
                    if value is None or not re.fullmatch(expected, value):
                        return False
                else:
                    raise ConfigError(f"{where}: if.env.{variable} = {expected!r} is not allowed; expected a regular "
                                      "expression (a string) or true/false")
        else:
            raise ConfigError(f"{where}: unknown condition if.{name}; known conditions: " + ", ".join(_CONDITIONS))
    return True


_CONDITIONS = ("platform-system", "platform-machine", "python-version", "env")


def _check_minimum_version(config: OxideConfig, where: str) -> None:
    if config.minimum_version is None:
        return
    from oxide import __version__ as running

    def numbers(text: str) -> tuple[int, ...]:
        match = _VERSION_RE.match(text)
        return tuple(int(n) for n in match.group(0).split(".")) if match else ()

    if numbers(running) < numbers(config.minimum_version):
        raise ConfigError(
            f"{where}: minimum-version = {config.minimum_version!r}, but this build runs oxide-cuda {running}: "
            f'require it in [build-system]: requires = ["oxide-cuda[build]>={config.minimum_version}"]'
        )


def _flattened(table: Mapping[str, Any], where: Callable[[str], str]) -> list[tuple[str, Any, str]]:
    """``(key, value, key as written)`` for each entry of a ``[tool.oxide]`` table or override,
    with a table of a ``DOTTED_GROUPS`` group (``editable.rebuild = false``, or
    ``[tool.oxide.editable]``) spread into its keys (``editable-rebuild``). ``where(key)``
    locates a written key for an error."""
    out: list[tuple[str, Any, str]] = []
    for key, value in table.items():
        if key in DOTTED_GROUPS and isinstance(value, dict):
            for name, item in value.items():
                flat = f"{key}-{name}"
                if flat not in _SETTINGS:
                    raise _unknown_key(where(key), f"{key}.{name}")
                out.append((flat, item, key))
        else:
            out.append((key, value, key))
    return out


def load_config(
    project_dir: Path,
    config_settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> OxideConfig:
    """The configuration of the project in ``project_dir``, each later source winning:
    ``[tool.oxide]``, the ``[[tool.oxide.overrides]]`` whose ``if`` holds (in order), the
    environment variables ``OXIDE_<KEY>`` (``env_name``), then ``oxide.*`` config settings.
    An error in ``pyproject.toml`` names its line."""
    env = os.environ if environ is None else environ
    path = project_dir / "pyproject.toml"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    table = dict(_oxide_table(read_pyproject(project_dir)))
    overrides = table.pop("overrides", [])
    config = OxideConfig()
    for key, value, written in _flattened(table, lambda key: _located(text, key)):
        config = parse_config({key: value}, source=_located(text, written), base=config)
    if not isinstance(overrides, list) or not all(isinstance(o, dict) for o in overrides):
        raise ConfigError(f"{_located(text, 'overrides')}: overrides must be an array of tables: [[tool.oxide.overrides]]")
    for number, override in enumerate(overrides):
        header = "[[tool.oxide.overrides]]"
        where = _located(text, "if", header, number)
        if _override_applies(where, override.get("if"), env):
            entries = {key: value for key, value in override.items() if key != "if"}
            for key, value, written in _flattened(entries, lambda key: _located(text, key, header, number)):
                if key == "overrides":
                    raise ConfigError(f"{_located(text, key, header, number)}: overrides do not nest")
                config = parse_config({key: value}, source=_located(text, written, header, number), base=config)
    _check_minimum_version(config, _located(text, "minimum-version"))
    for key in _SETTINGS:
        value = env.get(env_name(key), "").strip()
        if value:
            config = parse_config({key: value}, source=f"environment variable {env_name(key)}", base=config, from_text=True)
    settings = _settings_table(config_settings)
    for key in settings:
        if key not in _SETTINGS:
            raise _unknown_key(f"config setting {CONFIG_SETTINGS_PREFIX}{key}", key)
    for key, value in settings.items():
        config = parse_config({key: value}, source=f"config setting {CONFIG_SETTINGS_PREFIX}{key}", base=config, from_text=True)
    return config


# --- the JSON schema ----------------------------------------------------------------------------


def _value_schema(spec: _Setting) -> dict[str, Any]:
    if spec.kind == "bool":
        return {"type": "boolean"}
    if spec.kind == "int":
        out: dict[str, Any] = {"type": "integer"}
        if spec.low is not None:
            out["minimum"] = spec.low
        if spec.high is not None:
            out["maximum"] = spec.high
        return out
    if spec.kind == "str":
        if spec.choices == LOGGING_LEVELS:  # read case-insensitively
            return {"type": "string", "enum": list(LOGGING_LEVELS) + [level.lower() for level in LOGGING_LEVELS]}
        return {"type": "string", "enum": list(spec.choices)} if spec.choices else {"type": "string", "minLength": 1}
    items: dict[str, Any] = {"type": "string"}
    if spec.items == "arch":
        items["enum"] = list(SUPPORTED_ARCHS)
    out = {"type": "array", "items": items}
    if spec.items == "arch":
        out["minItems"] = 1
    return out


def json_schema(tool_name: str = "oxide") -> dict[str, Any]:
    """The JSON schema of ``[tool.oxide]`` (draft 7), for validate-pyproject (the entry point
    ``validate_pyproject.tool_schema``: ``oxide = "oxide_build.config:json_schema"``) and
    editors; each key's description is its documentation. ``tool_name``: what the plugin
    protocol passes (``"oxide"``)."""
    docs = {d.key: " ".join(d.doc.split()) for d in settings_docs()}
    properties: dict[str, Any] = {
        key: {**_value_schema(spec), "description": docs.get(key, "")} for key, spec in _SETTINGS.items()
    }
    for group in DOTTED_GROUPS:  # editable.rebuild, logging.level: scikit-build-core's spelling
        members = {key[len(group) + 1:]: value for key, value in properties.items() if key.startswith(group + "-")}
        properties[group] = {
            "type": "object",
            "description": f"The {group}-* keys spelt as scikit-build-core spells them ({group}."
                           + f", {group}.".join(members) + ").",
            "additionalProperties": False,
            "properties": members,
        }
    override_properties = {key: value for key, value in properties.items()}
    override_properties["if"] = {
        "type": "object",
        "description": "The conditions, all of which must hold for the override to apply.",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            "platform-system": {"type": "string", "description": "A regular expression matching sys.platform whole."},
            "platform-machine": {"type": "string", "description": "A regular expression matching platform.machine() whole."},
            "python-version": {"type": "string", "description": 'A version specifier for the running Python, e.g. ">=3.11".'},
            "env": {"type": "object", "description": "Environment variable -> a regular expression its value matches "
                                                       "whole, or true/false (set to a true value / not).",
                    "additionalProperties": {"type": ["string", "boolean"]}},
        },
    }
    properties["overrides"] = {
        "type": "array",
        "description": "Settings applied when their `if` conditions hold, in order, after the table.",
        "items": {"type": "object", "required": ["if"], "additionalProperties": False, "properties": override_properties},
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "urn:oxide-cuda:tool-oxide",  # validate-pyproject needs a unique id; no document lives there
        "title": "[tool.oxide]: the build configuration of an oxide project",
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
    }


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
        spec = _SETTINGS[key]
        shown = f"unset ({spec.unset})" if default is None and spec.unset else _toml_value(default)
        out.append(SettingDoc(key, spec.type_name, shown, spec.allowed, docs.get(f.name, "")))
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
            f"- override: `-C {CONFIG_SETTINGS_PREFIX}{s.key}=...` or `{env_name(s.key)}=...`",
            "",
            doc,
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"
