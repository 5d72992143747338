"""CUDA C++ (``.cu``) → LTO-IR (or PTX) in-process with NVRTC (``cuda.bindings.nvrtc``).

The CUDA headers and CUB/Thrust/libcu++ (CCCL) come from the nvidia-* wheels
(nvidia-cuda-runtime, nvidia-cuda-cccl), found by ``oxide_build.toolchain``; a build host needs
no CUDA toolkit.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from oxide.errors import LinkError, ToolchainError

from ..toolchain import bindings, cuda_include_dirs

__all__ = ["CudaSource", "compile_cuda", "nvrtc_version", "cuda_include_dirs", "source_dependencies"]

_PIP_HINT = "pip install nvidia-cuda-nvrtc (or pip install 'oxide-cuda[build]')"


@dataclass(frozen=True)
class CudaSource:
    path: Path
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()  # "NAME" or "NAME=VALUE"
    options: tuple[str, ...] = ()  # more NVRTC options, e.g. "-std=c++20"
    headers: tuple[tuple[str, str], ...] = ()  # generated headers (name, text), #include-able
    force_include: str = ""  # one of ``headers``, included before the file's first line
    appendix: str = ""  # generated code compiled after the file's last line (template instances)


def _nvrtc():  # type: ignore[no-untyped-def]
    nvrtc = bindings("NVRTC")
    try:
        err, *_ = nvrtc.nvrtcVersion()
        if int(err) != 0:
            raise RuntimeError(str(err))
    except Exception as exc:  # libnvrtc.so is missing or cannot be loaded
        raise ToolchainError(f"NVRTC could not be loaded ({exc}): {_PIP_HINT}") from None
    return nvrtc


def nvrtc_version() -> str:
    _, major, minor = _nvrtc().nvrtcVersion()
    return f"{major}.{minor}"


def _check(nvrtc, result) -> None:  # type: ignore[no-untyped-def]
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(nvrtc.nvrtcGetErrorString(err)[1].decode())


def compile_cuda(source: CudaSource, arch: str, output: str = "ltoir") -> bytes:
    """Compiles one ``.cu`` file for ``arch`` ("sm_90"): ``output`` "ltoir" (``-dlto``) or "ptx".

    A compile error raises ``oxide.LinkError`` carrying NVRTC's log, whose lines point at the
    ``.cu`` file and line.
    """
    nvrtc = _nvrtc()
    path = Path(source.path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise LinkError(f"cannot read the CUDA source {path}: {exc.strerror}") from None
    number = arch.split("_", 1)[1]
    opts = [f"-arch=compute_{number}", *(["-dlto"] if output == "ltoir" else []), "-rdc=true",
            "-std=c++17", f"-I{path.parent}"]
    opts += [f"-I{d}" for d in source.include_dirs]
    opts += [f"-I{d}" for d in cuda_include_dirs()]
    opts += [f"-D{d}" for d in source.defines]
    if any(o.startswith("-std=") for o in source.options):
        opts = [o for o in opts if not o.startswith("-std=")]
    opts += list(source.options)
    if source.force_include:
        # the #line keeps NVRTC's line numbers those of the file
        quoted = str(path).replace("\\", "\\\\").replace('"', '\\"')
        text = f'#include "{source.force_include}"\n#line 1 "{quoted}"\n'.encode() + text
    if source.appendix:
        text += b"\n" + source.appendix.encode() + b"\n"
    err, prog = nvrtc.nvrtcCreateProgram(text, str(path).encode(), len(source.headers),
                                         [h[1].encode() for h in source.headers],
                                         [h[0].encode() for h in source.headers])
    _check(nvrtc, err)
    try:
        encoded = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _log(nvrtc, prog)
        if int(err) != 0:
            raise LinkError(
                f"NVRTC could not compile {path} for {arch}:\n{log.strip()}\n"
                f"(options: {' '.join(opts)})"
            )
        if output == "ltoir":
            err, size = nvrtc.nvrtcGetLTOIRSize(prog)
            _check(nvrtc, err)
            buf = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetLTOIR(prog, buf))
        else:
            err, size = nvrtc.nvrtcGetPTXSize(prog)
            _check(nvrtc, err)
            buf = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetPTX(prog, buf))
            buf = buf.rstrip(b"\0")
        return bytes(buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _log(nvrtc, prog) -> str:  # type: ignore[no-untyped-def]
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if int(err) != 0 or size <= 1:
        return ""
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


_INCLUDE_RE = re.compile(rb'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def source_dependencies(path: Path, include_dirs: tuple[str, ...] = ()) -> list[Path]:
    """The user headers ``path`` includes, transitively (those found next to the including file
    or in ``include_dirs``; CUDA and CCCL headers are keyed by their package version instead).
    Used for the compile cache key, so editing a header recompiles."""
    seen: dict[Path, None] = {}
    stack = [Path(path)]
    dirs = [Path(d) for d in include_dirs]
    while stack:
        current = stack.pop()
        try:
            data = current.read_bytes()
        except OSError:
            continue
        for m in _INCLUDE_RE.finditer(data):
            name = m.group(2).decode(errors="replace")
            candidates = ([current.parent] if m.group(1) == b'"' else []) + dirs
            for d in candidates:
                found = d / name
                if found.is_file():
                    found = Path(os.path.normpath(found))
                    if found not in seen:
                        seen[found] = None
                        stack.append(found)
                    break
    return list(seen)
