"""One fatbin per module (``cuda.bindings.nvfatbin``, wheel ``nvidia-nvfatbin``): a cubin per
requested arch, plus PTX of the newest one so that a newer GPU can JIT it."""
from __future__ import annotations

from oxide.errors import LinkError, ToolchainError

from ..targets import arch_number
from ..toolchain import bindings

__all__ = ["make_fatbin", "add_ltoir_fatbin", "nvfatbin_version"]

_PIP_HINT = "pip install nvidia-nvfatbin (or pip install 'oxide-cuda[build]')"


def _nvfatbin():  # type: ignore[no-untyped-def]
    nvfatbin = bindings("nvFatbin")
    try:
        nvfatbin.version()
    except Exception as exc:  # the library loaded but is not usable
        raise ToolchainError(f"nvFatbin could not be used ({exc}): {_PIP_HINT}") from None
    return nvfatbin


def nvfatbin_version() -> str:
    return ".".join(map(str, _nvfatbin().version()))


def _number(arch: str) -> str:
    """nvFatbin's arch string: ``"sm_90"`` -> ``"90"``, ``"sm_90a"`` -> ``"90a"``."""
    return arch.split("_", 1)[1]


def make_fatbin(cubins: dict[str, bytes], ptx: dict[str, str] | None = None, name: str = "module") -> bytes:
    """``cubins``: arch ("sm_90") → cubin; ``ptx``: arch → PTX text to embed as well."""
    nvfatbin = _nvfatbin()
    handle = nvfatbin.create([], 0)
    try:
        try:
            for arch, cubin in sorted(cubins.items(), key=lambda kv: (arch_number(kv[0]), kv[0])):
                nvfatbin.add_cubin(handle, cubin, len(cubin), _number(arch), f"{name}.{arch}")
            for arch, text in sorted((ptx or {}).items()):
                data = text.encode() + b"\0"
                nvfatbin.add_ptx(handle, data, len(data), _number(arch), f"{name}.{arch}.ptx", "")
        except nvfatbin.nvFatbinError as exc:
            raise LinkError(f"nvFatbin could not package {name} ({exc})") from None
        size = nvfatbin.size(handle)
        buf = bytearray(size)
        nvfatbin.get(handle, buf)
        return bytes(buf)
    finally:
        nvfatbin.destroy(handle)


def add_ltoir_fatbin(entries: list[tuple[str, str, bytes]]) -> bytes:
    """A fatbin of LTO-IR: ``entries`` of (arch, identifier, LTO-IR). nvJitLink takes it as one
    input and links the LTO-IR of the arch it links for (a multi-arch device library)."""
    nvfatbin = _nvfatbin()
    handle = nvfatbin.create([], 0)
    try:
        try:
            for arch, identifier, data in entries:
                nvfatbin.add_ltoir(handle, data, len(data), _number(arch), identifier, "")
        except nvfatbin.nvFatbinError as exc:
            raise LinkError(f"nvFatbin could not package the LTO-IR of {identifier} ({exc})") from None
        buf = bytearray(nvfatbin.size(handle))
        nvfatbin.get(handle, buf)
        return bytes(buf)
    finally:
        nvfatbin.destroy(handle)
