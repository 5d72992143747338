"""Every error oxide raises to a user, in one place.

Compiler errors carry a source location and render it like a C compiler does:
``file:line:col: error: message``, the source line, a caret under the column, and a hint.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "OxideError",
    "SourceLocation",
    "CompileError",
    "LinkError",
    "CudaError",
    "KernelError",
    "ToolchainError",
]


class OxideError(Exception):
    """Base class of every error oxide raises on purpose."""


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    col: int  # 1-based, like compilers print it
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class CompileError(OxideError):
    """A kernel or device function cannot be compiled: the message points at the source."""

    def __init__(self, message: str, location: SourceLocation | None = None, hint: str = "") -> None:
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        if self.location is None:
            text = f"error: {self.message}"
        else:
            text = f"{self.location}: error: {self.message}"
            src = self.location.source_line.rstrip("\n")
            if src:
                stripped = src.expandtabs(4)
                text += f"\n    {stripped}\n    {' ' * max(self.location.col - 1, 0)}^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class LinkError(OxideError):
    """Linking device code failed (missing symbol, bad input, wrong arch)."""


class ToolchainError(OxideError):
    """A compiler component is missing; the message names the pip package that provides it."""


class CudaError(OxideError):
    """The CUDA driver reported an error, or there is no usable GPU."""

    def __init__(self, message: str, code: int | None = None, name: str | None = None) -> None:
        self.code = code
        self.name = name
        super().__init__(message)


class KernelError(OxideError):
    """A check inside a kernel failed on the device (bounds check, assert)."""

    def __init__(
        self,
        message: str,
        kernel: str = "",
        location: str = "",
        index: int | None = None,
        length: int | None = None,
    ) -> None:
        self.kernel = kernel
        self.location = location
        self.index = index
        self.length = length
        super().__init__(message)
