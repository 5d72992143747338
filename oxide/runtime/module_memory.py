"""Host access to module-level arrays (``ox.constant.array``, ``ox.global_memory.array``): the
array's address in the module's code loaded on the current device (``cuModuleGetGlobal``),
and synchronous copies to and from it."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from oxide.numpy_dependency import import_numpy

from . import artifacts, device, loader
from .manifest import ModuleArrayRecord

if TYPE_CHECKING:
    from oxide.lang.module_memory import ModuleArray

__all__ = ["array_address", "read_array", "write_array"]

_addresses: dict[tuple[int, str, str], tuple[int, int]] = {}  # (context uid, module, name) -> (ptr, bytes)


def _record(array: ModuleArray) -> tuple[Any, ModuleArrayRecord]:
    from oxide.errors import CudaError

    source = Path(array.file) if array.file else None
    module = array.module
    if module == "__main__" or not module:  # as artifacts.kernel_source names a script's kernels
        module = source.stem if source is not None else "__main__"
    located = artifacts.locate_manifest(source, module, lambda: device.context_device(device.current_context()).arch)
    name = array.name
    for record in located.manifest.arrays:
        if record.name == name:
            return located, record
    raise CudaError(f"{array.module}.{name} is not in the compiled module ({located.path}): the package was "
                    "built before it was declared, or the module has no kernels; rebuild it")


def array_address(array: ModuleArray) -> tuple[int, int]:
    """(device pointer, size in bytes) of ``array`` in its module's code on the current
    device, loading the code as a launch would."""
    ctx, uid = device.current()
    key = (uid, array.module, array.name)
    found = _addresses.get(key)
    if found is not None:
        return found
    located, record = _record(array)
    with loader.LOAD_LOCK:
        mod = loader.load_located(ctx, located)
    drv = device.driver()
    err, ptr, size = drv.cuModuleGetGlobal(mod, record.symbol.encode())
    if err != 0:
        device.raise_cuda_error(err, f"finding {array.module}.{record.name} ({record.symbol}) in the loaded code")
    found = (int(ptr), int(size))
    _addresses[key] = found
    return found


def read_array(array: ModuleArray) -> Any:
    np = import_numpy(f"reading the module array {array.module}.{array.name}")

    ptr, size = array_address(array)
    host = np.empty(array.shape, np.dtype(array.dtype.numpy_name))
    assert host.nbytes == size, (host.nbytes, size)
    (err,) = device.driver().cuMemcpyDtoH(host, ptr, host.nbytes)
    device.check(err, "cuMemcpyDtoH")
    return host


def write_array(array: ModuleArray, values: Any) -> None:
    np = import_numpy(f"writing the module array {array.module}.{array.name}")

    ptr, size = array_address(array)
    host = np.asarray(values)
    count = 1
    for d in array.shape:
        count *= d
    if host.size != count:
        raise ValueError(f"{array.module}.{array.name} holds {count} element(s) (shape {array.shape}); "
                         f"got {host.size} (shape {host.shape})")
    dtype = np.dtype(array.dtype.numpy_name)
    both_integers = host.dtype.kind in "iub" and dtype.kind in "iu"
    if both_integers and host.size:
        info = np.iinfo(dtype)
        if int(host.min()) < info.min or int(host.max()) > info.max:
            raise ValueError(f"{array.module}.{array.name} holds {array.dtype.name}; the values run from "
                             f"{int(host.min())} to {int(host.max())}")
    elif host.dtype != dtype and not (host.dtype.kind in "iub" and dtype.kind == "f") and not np.can_cast(
            host.dtype, dtype, casting="same_kind"):
        raise TypeError(f"{array.module}.{array.name} holds {array.dtype.name}; cannot convert {host.dtype} values")
    host = np.ascontiguousarray(host.reshape(array.shape), dtype=dtype)
    (err,) = device.driver().cuMemcpyHtoD(ptr, host, host.nbytes)
    device.check(err, "cuMemcpyHtoD")
