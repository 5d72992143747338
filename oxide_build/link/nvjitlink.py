"""nvJitLink: PTX (and later LTO-IR) → cubin for one arch."""
from __future__ import annotations

from dataclasses import dataclass

from oxide.errors import LinkError, ToolchainError

__all__ = ["LinkInput", "link_cubin", "nvjitlink_version"]


@dataclass(frozen=True)
class LinkInput:
    name: str  # shown in diagnostics
    kind: str  # "ptx"
    data: bytes


def _nvjitlink():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        raise ToolchainError("cuda-bindings is not installed: pip install 'oxide-cuda[build]'") from None
    try:
        nvjitlink.version()
    except Exception as exc:  # the shared library is missing
        raise ToolchainError(
            f"nvJitLink could not be loaded ({exc}): pip install nvidia-nvjitlink"
        ) from None
    return nvjitlink


def nvjitlink_version() -> str:
    return ".".join(map(str, _nvjitlink().version()))


def link_cubin(inputs: list[LinkInput], arch: str, options: tuple[str, ...] = ()) -> bytes:
    nvjitlink = _nvjitlink()
    opts = [f"-arch={arch}", *options]
    handle = nvjitlink.create(len(opts), opts)
    try:
        kinds = {"ptx": nvjitlink.InputType.PTX, "ltoir": nvjitlink.InputType.LTOIR,
                 "cubin": nvjitlink.InputType.CUBIN, "fatbin": nvjitlink.InputType.FATBIN}
        try:
            for inp in inputs:
                nvjitlink.add_data(handle, kinds[inp.kind], inp.data, len(inp.data), inp.name)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _error_log(nvjitlink, handle)
            names = ", ".join(i.name for i in inputs)
            raise LinkError(f"nvJitLink failed for {arch} ({exc}) linking {names}:\n{log}".rstrip()) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


def _error_log(nvjitlink, handle) -> str:  # type: ignore[no-untyped-def]
    try:
        size = nvjitlink.get_error_log_size(handle)
        buf = bytearray(size)
        nvjitlink.get_error_log(handle, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""
