"""What the device linker is given, by file type.

``.cu`` sources are compiled by NVRTC to LTO-IR first; everything else goes to nvJitLink as it
is: ``.ltoir``, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o`` and ``.a`` (from ``nvcc -dc -dlto``:
host objects with embedded device code) and ``libcudadevrt.a`` (the device runtime, for
dynamic parallelism), found in the nvidia-cuda-runtime wheel by ``oxide_build.toolchain``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oxide.errors import LinkError

__all__ = ["INPUT_KINDS", "InputFile", "classify_input", "input_file", "cudadevrt_path"]

# suffix -> kind; a kind is one of LinkInput's (nvjitlink.py), or "cu" (needs NVRTC first)
INPUT_KINDS: dict[str, str] = {
    ".cu": "cu",
    ".cuh": "cu",
    ".ltoir": "ltoir",
    ".ptx": "ptx",
    ".cubin": "cubin",
    ".fatbin": "fatbin",
    ".o": "object",
    ".obj": "object",
    ".a": "library",
    ".lib": "library",
}


@dataclass(frozen=True)
class InputFile:
    path: Path
    kind: str

    @property
    def name(self) -> str:
        return str(self.path)


def classify_input(path: Path | str) -> str:
    """The kind of a linker input, from its suffix; ``LinkError`` for anything else."""
    suffix = Path(path).suffix.lower()
    kind = INPUT_KINDS.get(suffix)
    if kind is None:
        raise LinkError(
            f"cannot link {path}: unknown input type {suffix or '(no suffix)'!r}; "
            f"known: {', '.join(sorted(INPUT_KINDS))}"
        )
    return kind


def input_file(path: Path | str) -> InputFile:
    p = Path(path)
    kind = classify_input(p)
    if not p.is_file():
        raise LinkError(f"linker input {p} does not exist")
    return InputFile(p, kind)


def cudadevrt_path() -> Path:
    """``libcudadevrt.a`` from the nvidia-cuda-runtime wheel (or the CUDA_HOME toolkit)."""
    from ..toolchain import cudadevrt_path as located

    return located()
