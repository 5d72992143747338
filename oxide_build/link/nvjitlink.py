"""nvJitLink: PTX, LTO-IR, cubins, fatbins, objects and libraries → a cubin (or PTX) for one
arch. With ``-lto`` every LTO-IR input is optimized together, so a small C++ device function
is inlined into a Python kernel."""
from __future__ import annotations

import re
from dataclasses import dataclass

from oxide.errors import LinkError, ToolchainError

from ..toolchain import bindings

__all__ = ["NVJITLINK_RESULTS", "LinkInput", "UndefinedSymbolError", "describe_result", "link_cubin", "link_cubin_with_log", "link_ptx", "nvjitlink_version"]


@dataclass(frozen=True)
class LinkInput:
    name: str  # shown in diagnostics
    kind: str  # "ptx", "ltoir", "cubin", "fatbin", "object", "library"
    data: bytes


class UndefinedSymbolError(LinkError):
    """The link needs symbols no input defines; ``symbols`` lists them."""

    def __init__(self, message: str, symbols: list[str], log: str) -> None:
        self.symbols = symbols
        self.log = log
        super().__init__(message)


_UNDEFINED_RES = (
    re.compile(r"Unresolved extern function '([^']+)'"),
    re.compile(r"Undefined reference to '([^']+)'"),
    re.compile(r"[Uu]ndefined (?:reference|symbol)[^'`\"]*['`\"]([^'`\"]+)['`\"]"),
)


def _nvjitlink():  # type: ignore[no-untyped-def]
    nvjitlink = bindings("nvJitLink")
    try:
        nvjitlink.version()
    except Exception as exc:  # the library loaded but is not usable (too old for cuda-bindings?)
        raise ToolchainError(
            f"nvJitLink could not be used ({exc}): pip install nvidia-nvjitlink"
        ) from None
    return nvjitlink


def nvjitlink_version() -> str:
    return ".".join(map(str, _nvjitlink().version()))


def link_cubin(inputs: list[LinkInput], arch: str, options: tuple[str, ...] = ()) -> bytes:
    """Links ``inputs`` into one cubin for ``arch`` ("sm_90"); pass ``("-lto",)`` when any
    input is LTO-IR."""
    return _link(inputs, arch, options, "cubin")


def link_cubin_with_log(inputs: list[LinkInput], arch: str, options: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """``link_cubin`` with ``-verbose``, also returning nvJitLink's info log (ptxas's resource
    lines per kernel: registers, shared and local memory, spills)."""
    info: list[str] = []
    cubin = _link(inputs, arch, (*options, "-verbose"), "cubin", info)
    return cubin, "".join(info)


def link_ptx(inputs: list[LinkInput], arch: str, options: tuple[str, ...] = ("-lto",)) -> str:
    """Links LTO-IR ``inputs`` and returns the PTX of the result (nvJitLink ``-ptx``), to see
    what the optimizer made of them."""
    return _link(inputs, arch, (*options, "-ptx"), "ptx").decode()


def _link(inputs: list[LinkInput], arch: str, options: tuple[str, ...], output: str,
          info: list[str] | None = None) -> bytes:
    nvjitlink = _nvjitlink()
    opts = [f"-arch={arch}", *options]
    handle = nvjitlink.create(len(opts), opts)
    try:
        kinds = {"ptx": nvjitlink.InputType.PTX, "ltoir": nvjitlink.InputType.LTOIR,
                 "cubin": nvjitlink.InputType.CUBIN, "fatbin": nvjitlink.InputType.FATBIN,
                 "object": nvjitlink.InputType.OBJECT, "library": nvjitlink.InputType.LIBRARY}
        names = ", ".join(i.name for i in inputs)
        for inp in inputs:
            try:
                nvjitlink.add_data(handle, kinds[inp.kind], inp.data, len(inp.data), inp.name)
            except nvjitlink.nvJitLinkError as exc:
                log = _error_log(nvjitlink, handle)
                raise LinkError(_input_problem(inp, arch, exc, log)) from None
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _error_log(nvjitlink, handle)
            undefined = [m for r in _UNDEFINED_RES for m in r.findall(log)]
            if undefined:
                symbols = list(dict.fromkeys(undefined))
                raise UndefinedSymbolError(
                    f"undefined symbol{'s' if len(symbols) > 1 else ''} {', '.join(symbols)} linking "
                    f"{names} for {arch}:\n{log}".rstrip(), symbols, log) from None
            raise LinkError(f"nvJitLink failed for {arch} ({describe_result(exc)}) linking {names}:\n{log}".rstrip()) from None
        if info is not None:
            size = nvjitlink.get_info_log_size(handle)
            buf = bytearray(size)
            nvjitlink.get_info_log(handle, buf)
            info.append(buf.rstrip(b"\0").decode(errors="replace"))
        if output == "ptx":
            size = nvjitlink.get_linked_ptx_size(handle)
            buf = bytearray(size)
            nvjitlink.get_linked_ptx(handle, buf)
            return bytes(buf).rstrip(b"\0")
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


def _input_problem(inp: LinkInput, arch: str, exc: Exception, log: str) -> str:
    """Says which input nvJitLink refused, why, and what to do about it."""
    text = str(exc)
    detail = f"\n{log}".rstrip() if log.strip() else ""
    if "ARCH_MISMATCH" in text:
        return (f"the linker input {inp.name} ({inp.kind}) was built for another arch than {arch}{detail}\n"
                f"  rebuild it for {arch} (e.g. nvcc -arch={arch} -dc -dlto, or a compute_XX with XX "
                f"at most {arch.split('_')[1]}), or drop {arch} from the archs")
    if "OUTDATED_LIBRARY" in text or ("UNRECOGNIZED_INPUT" in text and inp.kind == "ltoir"):
        return (f"the linker input {inp.name} ({inp.kind}) comes from a newer CUDA toolkit than this "
                f"nvJitLink {nvjitlink_version()} ({text}){detail}\n"
                f"  upgrade nvidia-nvjitlink (pip install -U nvidia-nvjitlink) to the toolkit that built "
                f"it, or rebuild it with CUDA {nvjitlink_version()}")
    return f"nvJitLink refused the linker input {inp.name} ({inp.kind}) for {arch} ({describe_result(exc)}){detail}"


# nvJitLinkResult, the same numbers in CUDA 12 and 13 (nvJitLink.h): name, and what it means
# here. A cuda-bindings older or newer than the library may print only "ERROR 4"; the number
# is what is reliable.
NVJITLINK_RESULTS: dict[int, tuple[str, str]] = {
    1: ("ERROR_UNRECOGNIZED_OPTION", "an option this nvJitLink does not know"),
    2: ("ERROR_MISSING_ARCH", "no -arch given"),
    3: ("ERROR_INVALID_INPUT", "an input it cannot read"),
    4: ("ERROR_PTX_COMPILE", "its PTX compiler rejected the PTX: a PTX ISA version or target newer than this "
                             "nvJitLink knows (a CUDA 12 nvJitLink before 12.8 knows no sm_100/sm_120), or a PTX error "
                             "the log names; use an nvJitLink of the CUDA release that supports the arch, or drop the arch"),
    5: ("ERROR_NVVM_COMPILE", "the LTO compile of the LTO-IR failed (the log names why)"),
    6: ("ERROR_INTERNAL", "an internal error of nvJitLink"),
    7: ("ERROR_THREADPOOL", "its thread pool failed"),
    8: ("ERROR_UNRECOGNIZED_INPUT", "an input of an unknown kind, or LTO-IR of a newer CUDA release than this nvJitLink"),
    9: ("ERROR_FINALIZE", "finalizing the link failed"),
    10: ("ERROR_NULL_INPUT", "an empty input"),
    11: ("ERROR_INCOMPATIBLE_OPTIONS", "options that contradict each other"),
    12: ("ERROR_INCORRECT_INPUT_TYPE", "an input whose kind does not match its contents"),
    13: ("ERROR_ARCH_MISMATCH", "an input built for another arch"),
    14: ("ERROR_OUTDATED_LIBRARY", "an input made by a newer CUDA release than this nvJitLink"),
    15: ("ERROR_MISSING_FATBIN", "a fatbin input without code for the arch"),
    16: ("ERROR_UNRECOGNIZED_ARCH", "an arch this nvJitLink does not know: use a newer nvJitLink, or drop the arch"),
    17: ("ERROR_UNSUPPORTED_ARCH", "an arch this nvJitLink does not support: use a newer nvJitLink, or drop the arch"),
    18: ("ERROR_LTO_NOT_ENABLED", "LTO-IR input without -lto"),
}


def describe_result(exc: BaseException) -> str:
    """An nvJitLink error as its name, number and meaning (``ERROR_PTX_COMPILE (4): its PTX
    compiler rejected ...``), whatever text the bindings gave it."""
    status = getattr(exc, "status", None)
    if not isinstance(status, int):
        match = re.search(r"\b(\d+)\)?\s*$", str(exc))
        status = int(match.group(1)) if match else None
    known = NVJITLINK_RESULTS.get(status) if status is not None else None
    if known is None:
        return str(exc)
    name, meaning = known
    return f"{name} ({status}): {meaning}"


def _error_log(nvjitlink, handle) -> str:  # type: ignore[no-untyped-def]
    try:
        size = nvjitlink.get_error_log_size(handle)
        buf = bytearray(size)
        nvjitlink.get_error_log(handle, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""
