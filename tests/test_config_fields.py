"""``[tool.oxide]`` keys are read from the fields of ``OxideConfig``: the type and
``setting()`` metadata of one field give its parser, its messages and its line in the reference
(the messages themselves are tested in tests/test_build.py)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import pytest

from oxide_build.config import ALLOWED_KEYS, ConfigError, OxideConfig, _Setting, _Source, setting

__all__: list[str] = []


@dataclass(frozen=True)
class _NewKeys:
    """Keys a future OxideConfig might gain: each is one field."""

    verbose: bool = False
    unroll: int | None = field(default=None, metadata=setting(low=1, high=8))
    threads: int = field(default=4, metadata=setting(low=1))
    mode: str = field(default="a", metadata=setting(choices=("a", "b")))
    extra_paths: tuple[str, ...] = field(default=(), metadata=setting(items="path"))


def _read(name: str, value: object, from_text: bool = False) -> object:
    (f,) = [f for f in fields(_NewKeys) if f.name == name]
    return _Setting.of(f).parse(_Source("pyproject.toml [tool.oxide]", from_text), value)


def test_every_key_of_oxide_config_is_read_from_its_field() -> None:
    assert ALLOWED_KEYS == tuple(sorted(f.name.replace("_", "-") for f in fields(OxideConfig)))
    for f in fields(OxideConfig):
        _Setting.of(f)  # a type the reader does not know fails here


def test_a_new_field_is_a_new_key() -> None:
    assert _read("verbose", "yes", from_text=True) is True
    assert _read("unroll", 8) == 8 and _read("threads", " 12 ", from_text=True) == 12
    assert _read("mode", "b") == "b" and _read("extra_paths", "a, b/c", from_text=True) == ("a", "b/c")
    for name, value, allowed in [
        ("verbose", 2, "true or false"),
        ("unroll", 9, "an integer from 1 to 8"),
        ("threads", 0, "a positive integer"),
        ("mode", "c", "'a' or 'b'"),
        ("extra_paths", ["../x"], "a list of paths relative to the project root"),
    ]:
        key = name.replace("_", "-")
        with pytest.raises(ConfigError) as err:
            _read(name, value)
        assert str(err.value) == f"pyproject.toml [tool.oxide]: {key} = {value!r} is not allowed; expected {allowed}"
