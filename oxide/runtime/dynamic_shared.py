"""Dynamic shared memory above the default 48 KiB per block.

A kernel function accepts at most ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` of dynamic
shared memory per block: by default 48 KiB less its static shared memory. More, up to the
device's opt-in maximum (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``, 227 KiB on
sm_90, 163 KiB on sm_80), needs ``cuFuncSetAttribute`` first, as ``cudaFuncSetAttribute`` in a CUDA C++
program. :func:`allow` does that for a launch, once per function per context, and refuses a
request beyond the device's maximum before anything is launched. What each function takes now is
cached in its ``Specialization.shared_limits`` (by context uid), so a launch that asks for no
more than before pays one dictionary lookup; the C launcher is told the figure with the function
(``Kernel._teach``) and leaves a launch asking for more to the Python path, which raises it.
"""
from __future__ import annotations

import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from typing import Any

from oxide.errors import CudaError
from oxide.runtime import device
from oxide.runtime.dispatch import Specialization

__all__ = ["limit", "allow"]

_lock = _thread.RLock()  # allow() holds it around limit()


def _function_attribute(drv: Any, fn: Any, attr: Any, what: str, kernel: str) -> int:
    err, value = drv.cuFuncGetAttribute(attr, fn)
    device.check(err, f"cuFuncGetAttribute({what}) of kernel {kernel}")
    return int(value)


def _optin_limit(drv: Any, ordinal: int) -> int:
    """Read when a limit is raised only: once per function per context, not worth a cache."""
    err, dev = drv.cuDeviceGet(ordinal)
    device.check(err, f"cuDeviceGet({ordinal})")
    err, value = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)
    device.check(err, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)")
    return int(value)


def limit(drv: Any, fn: Any, variant: Specialization, uid: int, kernel: str) -> int:
    """The dynamic shared bytes per block ``fn`` (``variant``'s function in the context of uid
    ``uid``) takes now: read once, then cached."""
    known = variant.shared_limits.get(uid)
    if known is None:
        known = _function_attribute(drv, fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    "MAX_DYNAMIC_SHARED_SIZE_BYTES", kernel)
        with _lock:
            known = variant.shared_limits.setdefault(uid, known)
    return known


def allow(drv: Any, fn: Any, variant: Specialization, ctx: int, uid: int, nbytes: int, kernel: str) -> None:
    """Makes ``fn`` (``variant``'s function in the current context ``ctx``, of uid ``uid``)
    accept ``nbytes`` of dynamic shared memory per block, raising its limit when it is lower;
    CudaError naming ``kernel`` when the device cannot give that much to one block."""
    with _lock:  # two threads raising one function's limit: the larger value stays
        attrs = drv.CUfunction_attribute
        takes = limit(drv, fn, variant, uid, kernel)
        if nbytes > takes:
            static = _function_attribute(drv, fn, attrs.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES", kernel)
            info = device.context_device(ctx)
            optin = _optin_limit(drv, info.ordinal)
            if nbytes + static > optin:
                of_static = f" (less the kernel's {static} bytes of static shared memory)" if static else ""
                raise CudaError(
                    f"kernel {kernel} asks for {nbytes} bytes of dynamic shared memory per block "
                    f"(the launch's shared_mem); {info.name} (cuda:{info.ordinal}) gives a block at most "
                    f"{optin - static} bytes{of_static}: its CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN "
                    f"is {optin}. Use less shared memory per block (smaller tiles, or more blocks); "
                    "the kernel was not launched",
                    name="CUDA_ERROR_INVALID_VALUE",
                )
            (err,) = drv.cuFuncSetAttribute(fn, attrs.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
            device.check(err, f"allowing kernel {kernel} {nbytes} bytes of dynamic shared memory "
                              "(cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES))")
            variant.shared_limits[uid] = nbytes
