"""Every error oxide raises to a user, in one place.

Compiler errors carry a source location and render it like a C compiler does:
``file:line:col: error: message``, the source line, a caret under the column, and a hint.
"""
from __future__ import annotations

__all__ = [
    "OxideError",
    "SourceLocation",
    "CompileError",
    "LinkError",
    "CudaError",
    "KernelError",
    "SynccheckError",
    "MemcheckError",
    "RacecheckError",
    "InitcheckError",
    "ToolchainError",
]


class OxideError(Exception):
    """Base class of every error oxide raises on purpose."""


class SourceLocation:
    """A place in a source file. A plain immutable class rather than a dataclass: this module
    is imported with every kernel module, and ``dataclasses`` costs milliseconds to import."""

    __slots__ = ("file", "line", "col", "source_line")

    file: str
    line: int
    col: int  # 1-based, like compilers print it
    source_line: str

    def __init__(self, file: str, line: int, col: int, source_line: str = "") -> None:
        for name, value in (("file", file), ("line", line), ("col", col), ("source_line", source_line)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SourceLocation is immutable; cannot set {name!r}")

    def _key(self) -> tuple[str, int, int, str]:
        return (self.file, self.line, self.col, self.source_line)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourceLocation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"SourceLocation(file={self.file!r}, line={self.line!r}, col={self.col!r}, "
                f"source_line={self.source_line!r})")

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


class KernelError(OxideError, RuntimeError):
    """A check inside a kernel failed on the device (bounds check, assert), or a launch
    precondition failed on the host. Also a ``RuntimeError``, which is what PyTorch code (and
    its tests) catch from a failed kernel."""

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


class SynccheckError(KernelError):
    """A barrier that can never complete (the CPU device's synccheck): some threads of a block
    wait at a barrier or warp operation that the others never reach (they exited, or wait at
    another one). ``block`` and ``thread`` name a waiting thread, ``location`` the Python
    ``file:line`` of its barrier."""

    def __init__(self, message: str, kernel: str = "", location: str = "",
                 block: tuple[int, int, int] | None = None, thread: tuple[int, int, int] | None = None) -> None:
        self.block = block
        self.thread = thread
        super().__init__(message, kernel=kernel, location=location)


class MemcheckError(KernelError):
    """An access outside every allocation of a launch (the CPU device's memcheck,
    ``OXIDE_SANITIZE=memcheck``): global memory outside the launch's views and the module's
    arrays, or shared memory outside the block's. ``location`` is the access's Python
    ``file:line:col``; ``address`` and ``size`` what it touched."""

    def __init__(self, message: str, kernel: str = "", location: str = "", block: tuple[int, int, int] | None = None,
                 thread: tuple[int, int, int] | None = None, address: int = 0, size: int = 0) -> None:
        self.block = block
        self.thread = thread
        self.address = address
        self.size = size
        super().__init__(message, kernel=kernel, location=location)


class RacecheckError(KernelError):
    """Two threads access one byte of shared or global memory, at least one of them writing, not
    both atomically, and nothing orders them (the CPU device's racecheck,
    ``OXIDE_SANITIZE=racecheck``): in one block no barrier (or warp operation of their warp)
    between them; in two blocks (global memory) no grid barrier and no release/acquire through
    fences and atomics. ``location`` is the second access's ``file:line:col``, ``other_location``
    the first's; ``block``/``thread`` the second's, ``other_block``/``other_thread`` the first's
    (``other_block`` is ``block`` for a race inside one block)."""

    def __init__(self, message: str, kernel: str = "", location: str = "", other_location: str = "",
                 block: tuple[int, int, int] | None = None, thread: tuple[int, int, int] | None = None,
                 other_thread: tuple[int, int, int] | None = None,
                 other_block: tuple[int, int, int] | None = None) -> None:
        self.other_location = other_location
        self.block = block
        self.thread = thread
        self.other_thread = other_thread
        self.other_block = other_block if other_block is not None else block
        super().__init__(message, kernel=kernel, location=location)


class InitcheckError(KernelError):
    """A read of shared memory no thread of the block wrote (the CPU device's initcheck,
    ``OXIDE_SANITIZE=initcheck``)."""

    def __init__(self, message: str, kernel: str = "", location: str = "", block: tuple[int, int, int] | None = None,
                 thread: tuple[int, int, int] | None = None) -> None:
        self.block = block
        self.thread = thread
        super().__init__(message, kernel=kernel, location=location)
