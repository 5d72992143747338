"""The compiler's options object, ``CompileOptions``: derived from ``OxideConfig``, one default
per option, written once (the ``[tool.oxide]`` field), so that a build, ``oxide compile``, the
JIT and ``compile_module()`` called with no options agree."""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from oxide_build.compile import CompileOptions as DriverOptions
from oxide_build.config import CONFIG_KEY_OF_OPTION, CompileOptions, OxideConfig

__all__: list[str] = []

# the options that are not project settings (no [tool.oxide] key)
NOT_CONFIG = {"link_cubins", "cudadevrt", "cache", "emit_ltoir", "device", "sanitize"}


def test_the_driver_and_the_config_share_one_options_object() -> None:
    assert DriverOptions is CompileOptions


def test_every_option_is_a_config_key_or_named_as_not_one() -> None:
    names = {f.name for f in fields(CompileOptions)}
    assert set(CONFIG_KEY_OF_OPTION) | NOT_CONFIG == names
    assert not set(CONFIG_KEY_OF_OPTION) & NOT_CONFIG
    config_fields = {f.name for f in fields(OxideConfig)}
    assert set(CONFIG_KEY_OF_OPTION.values()) <= config_fields


def test_each_default_is_the_config_default() -> None:
    options, config = CompileOptions(), OxideConfig()
    for option, key in CONFIG_KEY_OF_OPTION.items():
        assert getattr(options, option) == getattr(config, key), option
    # the default that differed before: a build ships one fatbin, and so does compile_module()
    assert CompileOptions().fatbin is True and OxideConfig().fatbin is True


def test_default_config_gives_default_options() -> None:
    assert OxideConfig().compile_options() == CompileOptions()


def test_every_config_key_reaches_its_option(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "inc").mkdir()  # a missing include-dirs entry is a ConfigError (tests/test_front_door.py)
    config = OxideConfig(arch=("sm_90",), ptx=True, fatbin=False, opt_level=1, bounds_check=False, backend="nvvm",
                         link=("k.cu",), include_dirs=("inc",), defines=("A=1",), nvrtc_options=("-std=c++20",),
                         fast_math=True, fma=False, lineinfo=True, max_registers=64)
    options = config.compile_options(tmp_path)
    assert options == CompileOptions(
        archs=("sm_90",), embed_ptx=True, fatbin=False, opt_level=1, bounds_check=False, backend="nvvm",
        link_inputs=(str((tmp_path / "k.cu").resolve()),), include_dirs=(str((tmp_path / "inc").resolve()),),
        defines=("A=1",), nvrtc_options=("-std=c++20",), fast_math=True, fma=False, lineinfo=True, max_registers=64)
