"""Writes ``oxide/runtime/_abi.h``, the C launcher's view of the contract, from ``oxide.abi``.

    python -m oxide.abi.header           # rewrite oxide/runtime/_abi.h
    python -m oxide.abi.header --check   # exit status 1 if it is not up to date

The header is checked in (a build of the wheel compiles the C launcher without running
Python code of ours); ``tests/test_abi.py`` regenerates it and compares.
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import error_record, launcher
from .scalars import SCALAR_TYPES

__all__ = ["HEADER_PATH", "render_header", "main"]

HEADER_PATH = Path(__file__).resolve().parent.parent / "runtime" / "_abi.h"


def _enum(entries: list[tuple[str, int]]) -> str:
    return "enum { " + ", ".join(f"{name} = {value}" for name, value in entries) + " };"


def render_header() -> str:
    """The text of ``_abi.h``."""
    dtypes = sorted(launcher.DTYPE_CODES.items(), key=lambda item: item[1])
    count = max(launcher.DTYPE_CODES.values()) + 1
    itemsizes = [0] * count
    for name, code in dtypes:
        itemsizes[code] = SCALAR_TYPES[name].itemsize
    arrays = sorted(launcher.ARRAY_KINDS.items(), key=lambda item: item[1])
    record = [("RECORD_" + name, getattr(error_record, name))
              for name in ("FLAG", "MODULE_ID", "SITE_ID", "INDEX", "LENGTH")]
    lines = [
        "/* Generated from oxide/abi/ by `python -m oxide.abi.header`: do not edit. */",
        "#ifndef OXIDE_ABI_H",
        "#define OXIDE_ABI_H",
        "",
        "/* what launcher.py expects (it ignores an extension built from another version) */",
        f"#define ABI_VERSION {launcher.ABI_VERSION}",
        "/* a Tensor of more dimensions stays on the Python path */",
        f"#define MAX_NDIM {launcher.MAX_LAUNCH_NDIM}",
        "/* the most elements a tensor may span for a launch of a kernel's index32 instance */",
        f"#define INDEX32_LIMIT {launcher.INDEX32_LIMIT}",
        "",
        "/* array kinds (oxide.abi.launcher.ARRAY_KINDS) */",
        _enum([("ARRAY_NONE", 0)] + [("ARRAY_" + name.upper(), code) for name, code in arrays]),
        "",
        "/* dtype codes (oxide.abi.launcher.DTYPE_CODES) and their sizes in bytes */",
        _enum([("DT_NONE", 0)] + [("DT_" + name.upper(), code) for name, code in dtypes] + [("DT_COUNT", count)]),
        "#define DT_ITEMSIZES {" + ", ".join(map(str, itemsizes)) + "}",
        "",
        "/* the device-error record: int64 words (oxide.abi.error_record) */",
        _enum(record + [("RECORD_WORDS", error_record.RECORD_WORDS)]),
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render_header()
    if args == ["--check"]:
        current = HEADER_PATH.read_text(encoding="utf-8") if HEADER_PATH.is_file() else ""
        if current != text:
            print(f"{HEADER_PATH} is out of date: run python -m oxide.abi.header", file=sys.stderr)
            return 1
        return 0
    HEADER_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
