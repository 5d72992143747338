"""Python AST → typed IR: names, types, generics."""
from __future__ import annotations

from .program import FrontendResult, build_program, located_error

__all__ = ["FrontendResult", "build_program", "located_error"]
