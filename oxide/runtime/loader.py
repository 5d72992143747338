"""Code for a device: which file of a package runs on this GPU, and loading it.

:func:`select_code` is a pure function of the manifest's code files and the device's compute
capability, so every rule is testable without a GPU: an exact cubin, else a cubin of the same
major version with a lower minor (binary compatible), else PTX the driver compiles, else an
error that lists what the package has.
"""

# Annotations evaluated (no ``from __future__ import annotations``), as typing.NamedTuple wants them.
import sys
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from oxide.abi.manifest import ErrorSite

if TYPE_CHECKING:  # type checkers see NamedTuple; oxide.abi.records_base says why not at run time
    from typing import NamedTuple as Record
else:
    from oxide.abi.records_base import Record
from oxide.errors import CudaError
from oxide.runtime import device, kernel_errors

if TYPE_CHECKING:
    from oxide.runtime.artifacts import LocatedManifest

# also here, imported on first use (module __getattr__): DRIVER_RELEASE_OF_CUDA, installed_driver_release
__all__ = [
    "CodeChoice", "parse_arch", "select_code", "load_module", "load_located", "get_function", "LOAD_LOCK",
    "check_driver",
]

# Loading is rare and may compile PTX: one lock for all of it keeps it simple and thread-safe.
LOAD_LOCK = _thread.RLock()
_modules: dict[tuple[int, str], Any] = {}  # (context uid, code file) -> CUmodule


class CodeChoice(Record):
    kind: str  # "cubin" or "ptx"
    arch: str  # the manifest key, e.g. "sm_90"
    file: str  # file name inside the artifact directory


def parse_arch(arch: str) -> tuple[int, int, str] | None:
    r"""``"sm_90a"`` -> ``(9, 0, "a")``; ``"sm_120"`` -> ``(12, 0, "")``; None if unreadable.

    What ``re.match(r"^(?:sm|compute)_(\d+)([af]?)$", arch)`` with at least two digits reads,
    without compiling the expression on a process's first launch (issue 28, cold start)."""
    text = arch[:-1] if arch.endswith("\n") else arch  # "$" matches before a final newline
    family, underscore, number = text.partition("_")
    if family not in ("sm", "compute") or not underscore:
        return None
    suffix = number[-1:] if number[-1:] in ("a", "f") else ""
    digits = number[: len(number) - len(suffix)]
    if len(digits) < 2 or not digits.isdecimal():  # isdecimal: what "\d" matches in a str
        return None
    return int(digits[:-1]), int(digits[-1]), suffix


def _list(keys: dict[str, str]) -> str:
    return ", ".join(sorted(keys, key=lambda a: (parse_arch(a) or (0, 0, ""), a))) or "none"


def select_code(
    cubins: dict[str, str],
    ptx: dict[str, str],
    capability: tuple[int, int],
    *,
    module: str = "",
    device_name: str = "",
) -> CodeChoice:
    """The code file to load on a device of compute capability ``capability``.

    1. a cubin for exactly this arch (``sm_90a`` before ``sm_90``: the builder added it for this GPU);
    2. a cubin of the same major version and the highest lower minor (``sm_80`` runs on sm_86);
       arch-specific ``a`` cubins run only on their exact arch;
    3. PTX for the highest arch not above the device (the driver compiles it);
    4. otherwise CudaError naming the device's arch and the arches the package has.
    """
    major, minor = capability
    best: tuple[tuple[int, int], str] | None = None
    for arch in cubins:
        parsed = parse_arch(arch)
        if parsed is None:
            continue
        a_major, a_minor, suffix = parsed
        if a_major != major or a_minor > minor or (suffix == "a" and a_minor != minor):
            continue
        rank = (a_minor, 2 if suffix == "a" else (1 if a_minor == minor and suffix == "" else 0))
        if best is None or rank > best[0]:
            best = (rank, arch)
    if best is not None:
        return CodeChoice("cubin", best[1], cubins[best[1]])
    best_ptx: tuple[tuple[int, int], str] | None = None
    for arch in ptx:
        parsed = parse_arch(arch)
        if parsed is None:
            continue
        a_major, a_minor, suffix = parsed
        if (a_major, a_minor) > (major, minor):
            continue
        if suffix == "a" and (a_major, a_minor) != (major, minor):
            continue
        if suffix == "f" and a_major != major:
            continue
        if best_ptx is None or (a_major, a_minor) > best_ptx[0]:
            best_ptx = ((a_major, a_minor), arch)
    if best_ptx is not None:
        return CodeChoice("ptx", best_ptx[1], ptx[best_ptx[1]])
    what = f"module {module}" if module else "this package"
    gpu = f"sm_{major}{minor}" + (f" ({device_name})" if device_name else "")
    raise CudaError(
        f"{what} has no code for this GPU: the device is {gpu}; the package has cubins for "
        f"{_list(cubins)} and PTX for {_list(ptx)}. Rebuild the package with sm_{major}{minor} "
        "among its target architectures."
    )


def load_module(
    ctx: int,
    path: Path,
    kind: str,
    *,
    module: str = "",
    arch: str = "",
    error_sites: Sequence[ErrorSite] = (),
    manifest_key: str = "",
    cuda_driver: int = 0,
) -> Any:
    """The ``CUmodule`` of code file ``path`` in context ``ctx`` (current), loaded once.

    ``cuda_driver`` (the manifest's): the oldest driver the code needs, checked first, so an old
    driver is a message naming both versions rather than a bare load error.

    A module with ``error_sites`` gets its device-error globals pointed at the context's
    failure record (:mod:`oxide.runtime.kernel_errors`) before anything can launch from it.
    """
    key = (device.context_uid(ctx), str(path))
    with LOAD_LOCK:
        mod = _modules.get(key)
        if mod is not None:
            return mod
        try:
            image = path.read_bytes()
        except OSError as e:
            raise CudaError(f"cannot read the {kind} of module {module or path.stem}: {e}") from None
        if kind == "ptx" and not image.endswith(b"\0"):
            image += b"\0"
        drv = device.driver()
        if cuda_driver:
            check_driver(drv, cuda_driver, module or path.stem)
        err, mod = drv.cuModuleLoadData(image)
        if err != 0:
            hint = ""
            name = device._error_name(drv, err)
            if kind == "ptx" and name in ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_PTX"):
                hint = (
                    f"the PTX for {arch} is newer than this driver can compile: update the NVIDIA "
                    "driver, or rebuild the package with a cubin for this GPU's arch"
                )
            device.raise_cuda_error(err, f"loading the {kind} {path.name} of module {module or path.stem}", hint)
        if error_sites:
            kernel_errors.register_module(
                ctx, mod, key=manifest_key or str(path), module=module or path.stem, sites=tuple(error_sites)
            )
        _modules[key] = mod
        return mod


def load_located(ctx: int, located: "LocatedManifest") -> Any:
    """The ``CUmodule`` of ``located``'s code in context ``ctx`` (current), loaded once: the code
    file :func:`select_code` picks for the context's GPU, or on the CPU device the module compiled
    for the host (``located.cpu``, which ``cpu_driver.CpuDriver`` loads)."""
    m = located.manifest
    if located.cpu is None:
        info = device.context_device(ctx)
        choice = select_code(m.cubins, m.ptx, (info.major, info.minor), module=m.module, device_name=info.name)
        return load_module(ctx, located.directory / choice.file, choice.kind, module=m.module, arch=choice.arch,
                           error_sites=m.error_sites, manifest_key=str(located.path), cuda_driver=m.cuda_driver)
    key = (device.context_uid(ctx), str(located.path))
    with LOAD_LOCK:
        mod = _modules.get(key)
        if mod is not None:
            return mod
        from oxide.runtime.cpu_driver import CpuCode

        err, mod = device.driver().cuModuleLoadData(CpuCode(located.cpu, m.module))
        if err != 0:
            device.raise_cuda_error(err, f"loading module {m.module} on the CPU device")
        if m.error_sites:
            kernel_errors.register_module(ctx, mod, key=str(located.path), module=m.module, sites=tuple(m.error_sites))
        _modules[key] = mod
        return mod


_driver_version: list[int] = []


def __getattr__(name: str) -> Any:
    """``DRIVER_RELEASE_OF_CUDA`` and ``installed_driver_release`` (driver_release.py), imported
    when first asked for: only the message of a too old driver needs them (issue 28, cold start)."""
    if name in ("DRIVER_RELEASE_OF_CUDA", "installed_driver_release"):
        from oxide.runtime import driver_release

        value = getattr(driver_release, name)
        globals()[name] = value  # a test's monkeypatch.setattr replaces this binding
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _cuda_version_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"


def check_driver(drv: Any, needed: int, module: str) -> None:
    """A ``CudaError`` when the driver supports an older CUDA than ``needed`` (cuDriverGetVersion's
    numbering), naming the installed driver and the one needed."""
    if not _driver_version:
        err, version = drv.cuDriverGetVersion()
        if err != 0:
            return  # the load itself reports a driver that cannot say
        _driver_version.append(int(version))
    have = _driver_version[0]
    if have >= needed:
        return
    major = needed // 1000
    this = sys.modules[__name__]  # through the module: its __getattr__ imports them on first use
    release = this.installed_driver_release()
    installed = f"driver {release}, which supports" if release else "driver supports"
    needed_release = this.DRIVER_RELEASE_OF_CUDA.get(major)
    raise CudaError(
        f"module {module} was built with the CUDA {major} toolchain: its code needs an NVIDIA driver for CUDA "
        f"{_cuda_version_text(needed)} or newer" + (f" ({needed_release} or newer)" if needed_release else "")
        + f"; this machine's {installed} CUDA {_cuda_version_text(have)}. Update the NVIDIA driver, or rebuild "
        "the package with the toolchain of this driver's CUDA release (docs/toolchain.md, \"Which driver a wheel "
        "needs\")"
    )


def get_function(mod: Any, symbol: str, *, kernel: str = "") -> Any:
    """The ``CUfunction`` ``symbol`` of ``mod``."""
    drv = device.driver()
    err, fn = drv.cuModuleGetFunction(mod, symbol.encode())
    if err != 0:
        device.raise_cuda_error(err, f"finding entry point {symbol!r} of kernel {kernel or symbol}")
    return fn
