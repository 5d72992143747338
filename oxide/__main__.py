"""``python -m oxide``: where oxide's CMake package and C++ headers are, as pybind11 does it.

    cmake -S . -B build -Doxide_DIR="$(python -m oxide --cmake-dir)"
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cmake_dir", "include_dir", "main"]

_PACKAGE = Path(__file__).resolve().parent


def cmake_dir() -> Path:
    """The directory of ``oxideConfig.cmake``: inside the installed package, or the checkout's
    top-level ``cmake/`` (an editable install)."""
    for candidate in (_PACKAGE / "cmake", _PACKAGE.parent / "cmake"):
        if (candidate / "oxideConfig.cmake").is_file():
            return candidate
    raise FileNotFoundError(f"oxideConfig.cmake is neither in {_PACKAGE / 'cmake'} nor in {_PACKAGE.parent / 'cmake'}")


def include_dir() -> Path:
    """The directory to put on a C++ include path for ``#include <oxide/launch.hpp>``."""
    return _PACKAGE / "include"


def main(argv: Sequence[str] | None = None) -> int:
    from oxide import __version__

    parser = argparse.ArgumentParser(prog="python -m oxide", description="Paths for C++ and CMake projects using oxide.")
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("--cmake-dir", action="store_true", help="print the directory of oxideConfig.cmake (oxide_DIR)")
    parser.add_argument("--include-dir", action="store_true", help="print the include directory of oxide's C++ headers")
    args = parser.parse_args(argv)
    if not (args.cmake_dir or args.include_dir):
        parser.print_help()
        return 1
    try:
        if args.cmake_dir:
            print(cmake_dir())
        if args.include_dir:
            print(include_dir())
    except FileNotFoundError as exc:
        print(f"python -m oxide: {exc}: reinstall oxide-cuda", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
