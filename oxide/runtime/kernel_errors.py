"""Device-side check failures (bounds checks, ``assert``) raised on the host as ``KernelError``.

The device side (see ``oxide_build.lower.llvm``, ``fail_function``): every module with checks
has two globals, ``__oxide_error_ptr`` (the generic device address of a failure record, 0 by
default) and ``__oxide_module_id``. A failing thread claims the record with
``atom.cas.sys record[0] 0 -> 1``; the winner writes the module id, the site id (an
``ErrorSite.id`` of the module's manifest), the index and the length (0 and 0 for ``assert``),
fences, and exits; the other threads carry on. With no record set the thread traps, which the
driver reports as a sticky ``CudaError`` (``CUDA_ERROR_LAUNCH_FAILED``).

The host side, here: one record of 5 x int64 per CUDA context, in a page of host memory this
module allocates itself (never freed) and registers with the context as mapped pinned
memory (``cuMemHostRegister(DEVICEMAP | PORTABLE)``), so the host sees a failure by reading its
own memory, without synchronising. Because oxide owns the page, reading a record stays safe
after the context is reset or destroyed (which unmaps memory the driver allocated); records are
kept per context uid (:func:`oxide.runtime.device.context_uid`), so a reset context gets a new
one. Each module with error sites gets a
process-unique module id when it is loaded, and its two globals are set to the record's device
address and that id.

Where a failure surfaces: at the first of these calls after the failing kernel has finished
(or at least after its failing thread has written the record):

- the next launch of any oxide kernel, before it launches (the check is a plain read of host
  memory, a few nanoseconds);
- ``oxide.runtime.synchronize()``, after ``cuCtxSynchronize``;
- ``oxide.runtime.check_kernel_errors()``, for code that synchronises through PyTorch, CuPy or
  a stream of its own (``torch.cuda.synchronize(); oxide.runtime.check_kernel_errors()``).

The record is cleared when the error is raised, so one failure is raised once; the process
stays usable (unlike a trap, the failure is not a sticky CUDA error). Only the first failure
is kept until it is raised: later ones are dropped.
"""
from __future__ import annotations

import ctypes
import os
import struct
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
import time
from typing import Any, Callable

from oxide.abi import error_record
from oxide.abi.error_record import FLAG, INDEX, LENGTH, MODULE_ID, RECORD_WORDS, SITE_ID
from oxide.errors import KernelError
from oxide.runtime import device
from oxide.abi.manifest import ErrorSite

__all__ = [
    "RECORD_WORDS",
    "ERROR_PTR_SYMBOL",
    "MODULE_ID_SYMBOL",
    "ErrorRecord",
    "record_for_context",
    "register_module",
    "check_kernel_errors",
    "synchronize",
    "kernel_error",
    "watched_records",
    "add_record_listener",
]

# flag, module id, site id, index, length: the layout is oxide.abi.error_record's
ERROR_PTR_SYMBOL = error_record.ERROR_PTR_SYMBOL.encode()
MODULE_ID_SYMBOL = error_record.MODULE_ID_SYMBOL.encode()

# The device claims the record (flag 0 -> 1) before it writes the fields, so a reader that sees
# the flag may briefly see fields still 0 (ids start at 1). A published flag of 2, should the
# device ever write it after its fence, means the fields are complete.
_PUBLISHED = error_record.FLAG_PUBLISHED
_FIELDS_WAIT_S = 0.5


class ErrorRecord:
    """The failure record of one context: host and device addresses, and its words."""

    __slots__ = ("context", "host_address", "device_address", "words")

    def __init__(self, context: int, host_address: int, device_address: int) -> None:
        self.context = context
        self.host_address = host_address
        self.device_address = device_address
        self.words = (ctypes.c_int64 * RECORD_WORDS).from_address(host_address)

    def __repr__(self) -> str:
        return f"<oxide error record of context {self.context:#x} at {self.host_address:#x}>"


_lock = _thread.RLock()
_records: dict[int, ErrorRecord] = {}  # context uid -> its record
_pages: list[ctypes.Array[ctypes.c_char]] = []  # the records' memory: kept for the life of the process
# Every record, read by each launch. A tuple replaced on change, so readers need no lock.
_watched: tuple[ErrorRecord, ...] = ()
_sites: dict[int, tuple[str, dict[int, ErrorSite]]] = {}  # module id -> (module name, sites by id)
_module_ids: dict[str, int] = {}  # manifest path -> module id
# Called with the host addresses of all records whenever they change (the compiled launcher
# reads the flags too).
_record_listeners: list[Callable[[tuple[int, ...]], None]] = []


def watched_records() -> tuple[ErrorRecord, ...]:
    return _watched


def add_record_listener(listener: Callable[[tuple[int, ...]], None]) -> None:
    """``listener(host_addresses)`` now and whenever the set of records changes."""
    with _lock:
        _record_listeners.append(listener)
        listener(tuple(r.host_address for r in _watched))


def _records_changed() -> None:
    addresses = tuple(r.host_address for r in _watched)
    for listener in _record_listeners:
        listener(addresses)


def _page_size() -> int:
    sysconf = getattr(os, "sysconf", None)
    if sysconf is not None:
        return int(sysconf("SC_PAGESIZE"))
    import mmap  # Windows

    return mmap.PAGESIZE


def record_for_context(ctx: int) -> ErrorRecord:
    """The record of context ``ctx`` (current on this thread), allocated on first use."""
    uid = device.context_uid(ctx)
    rec = _records.get(uid)
    if rec is not None:
        return rec
    global _watched
    with _lock:
        rec = _records.get(uid)
        if rec is not None:
            return rec
        drv = device.driver()
        flags = int(drv.CU_MEMHOSTREGISTER_DEVICEMAP) | int(drv.CU_MEMHOSTREGISTER_PORTABLE)
        # a zeroed page of our own, page-aligned inside a buffer of two (not mmap: importing it
        # loads a library, 0.2-0.4 ms of a process's first launch, issue 28 item 5)
        nbytes = _page_size()
        page = (ctypes.c_char * (2 * nbytes))()
        host_address = (ctypes.addressof(page) + nbytes - 1) & ~(nbytes - 1)
        (err,) = drv.cuMemHostRegister(host_address, nbytes, flags)
        device.check(err, f"cuMemHostRegister({nbytes} bytes, DEVICEMAP | PORTABLE) for the kernel error record")
        ctypes.memset(host_address, 0, RECORD_WORDS * 8)
        err, dptr = drv.cuMemHostGetDevicePointer(host_address, 0)
        device.check(err, "cuMemHostGetDevicePointer for the kernel error record")
        _pages.append(page)
        rec = ErrorRecord(ctx, host_address, int(dptr))
        _records[uid] = rec  # never freed: it lives as long as the context's modules point at it
        # a record of a context that was reset under the same handle is dropped: its failure,
        # if any, died with that context
        _watched = tuple(r for r in _watched if r.context != ctx) + (rec,)
        _records_changed()
        return rec


def _module_id(key: str, module: str, sites: tuple[ErrorSite, ...]) -> int:
    with _lock:
        mid = _module_ids.get(key)
        if mid is None:
            mid = len(_module_ids) + 1  # 0 means "no record written yet"
            _module_ids[key] = mid
            _sites[mid] = (module, {s.id: s for s in sites})
        return mid


def register_module(ctx: int, cumodule: Any, *, key: str, module: str, sites: tuple[ErrorSite, ...]) -> int | None:
    """Points the error globals of the loaded ``cumodule`` at the record of ``ctx``.

    Returns the module id; None when the module has no error sites or no error globals (built
    without checks, or by an older compiler), which is then left as it is.
    """
    if not sites:
        return None
    drv = device.driver()
    err, ptr_global, size = drv.cuModuleGetGlobal(cumodule, ERROR_PTR_SYMBOL)
    if err != 0 or int(size) != 8:
        return None
    err, id_global, id_size = drv.cuModuleGetGlobal(cumodule, MODULE_ID_SYMBOL)
    if err != 0 or int(id_size) != 8:
        return None
    rec = record_for_context(ctx)
    mid = _module_id(key, module, sites)
    for target, value, what in ((id_global, mid, "__oxide_module_id"), (ptr_global, rec.device_address, "__oxide_error_ptr")):
        data = struct.pack("=Q", value)
        (err,) = drv.cuMemcpyHtoD(target, data, 8)
        device.check(err, f"setting {what} of module {module}")
    return mid


def assertion_error(site: ErrorSite, note: str = "") -> KernelError:
    """The ``KernelError`` of a failed ``assert`` (on the device, or at launch: ``note``)."""
    location = f"{site.file}:{site.line}:{site.col}"
    return KernelError(f"assertion failed in kernel {site.kernel} at {location}: {site.what}{note}",
                       kernel=site.kernel, location=location)


def kernel_error(module_id: int, site_id: int, index: int, length: int) -> KernelError:
    """The ``KernelError`` for a record's fields."""
    entry = _sites.get(module_id)
    site = entry[1].get(site_id) if entry is not None else None
    if site is None:
        where = f"module {entry[0]}" if entry is not None else f"module id {module_id}"
        return KernelError(
            f"a check failed in a kernel of {where} (site {site_id}, index {index}, length {length}), "
            "but its manifest does not describe that site: rebuild the package",
            index=index,
            length=length,
        )
    if site.kind == "assert":
        return assertion_error(site)
    location = f"{site.file}:{site.line}:{site.col}"
    return KernelError(
        f"bounds check failed in kernel {site.kernel} at {location}: {site.what} with index {index} but length {length}",
        kernel=site.kernel,
        location=location,
        index=index,
        length=length,
    )


def _take(rec: ErrorRecord) -> KernelError | None:
    """Reads and clears a set record; None when another thread took it first."""
    with _lock:
        w = rec.words
        flag = w[FLAG]
        if flag == 0:
            return None
        deadline = time.monotonic() + _FIELDS_WAIT_S
        while flag != _PUBLISHED and (w[MODULE_ID] == 0 or w[SITE_ID] == 0) and time.monotonic() < deadline:
            time.sleep(0)
            flag = w[FLAG]
        module_id, site_id, index, length = w[MODULE_ID], w[SITE_ID], w[INDEX], w[LENGTH]
        w[MODULE_ID] = w[SITE_ID] = w[INDEX] = w[LENGTH] = 0
        w[FLAG] = 0  # last: a new failure may claim the record only once it is clean
    return kernel_error(module_id, site_id, index, length)


def check_kernel_errors() -> None:
    """Raises ``KernelError`` if a kernel failed a device-side check since the last check.

    Call it after synchronising through another library (``torch.cuda.synchronize()``,
    ``cupy.cuda.Device().synchronize()``, ``stream.synchronize()``); oxide's own launches and
    ``oxide.runtime.synchronize()`` check by themselves. It costs a read of host memory.
    """
    for rec in _watched:
        if rec.words[FLAG]:
            error = _take(rec)
            if error is not None:
                raise error


def synchronize() -> None:
    """Waits until every kernel and copy issued in the current context has finished.

    Then raises ``oxide.KernelError`` if a kernel failed a device-side check (bounds check,
    ``assert``); a sticky CUDA error (illegal address, trap) is a ``CudaError`` naming it.
    """
    device.current_context()
    (err,) = device.driver().cuCtxSynchronize()
    device.check(err, "cuCtxSynchronize")
    check_kernel_errors()


def _reset_for_tests() -> None:
    global _watched
    with _lock:
        _records.clear()
        _watched = ()
        _sites.clear()
        _module_ids.clear()
        _records_changed()
