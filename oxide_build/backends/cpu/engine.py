"""A module compiled for the CPU device and its kernels, launched with exactly what
``cuLaunchKernel`` takes (``oxide_build/cpu_engine.py`` makes them; the runtime's CPU driver
calls these):

- ``CpuModule.function(symbol) -> CpuFunction`` (``cuModuleGetFunction``) and
  ``CpuModule.global_address(name) -> (address, bytes)`` (``cuModuleGetGlobal``: the error
  record's pointer, the module id, the module's arrays).
- ``CpuFunction.launch(grid, block, dynamic_shared_bytes, kernel_params, sanitize)``:
  synchronous; a failed check writes the error record as on the GPU; a barrier that can never
  complete raises ``oxide.errors.SynccheckError``.
"""
from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence

import llvmlite.binding as llvm

from oxide.abi import vectors
from oxide.abi.params import PRESENT_SLOTS
from oxide.abi.records import is_record_dtype, record_itemsize
from oxide.abi.scalars import SCALAR_TYPES
from oxide.errors import InitcheckError, KernelError, MemcheckError, RacecheckError, SynccheckError
from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleArrayRecord

from .codegen import KernelMode

__all__ = ["CpuFunction", "CpuModule", "SANITIZERS", "MAX_DYNAMIC_SHARED_BYTES"]

SANITIZERS = frozenset({"memcheck", "racecheck", "initcheck", "synccheck"})
IMPLEMENTED_SANITIZERS = SANITIZERS  # synccheck is always on
# the sanitizers of the instrumented build: _fibers.c's CHECK_* bits
_CHECKS = {"memcheck": 1, "racecheck": 2, "initcheck": 4}
MAX_DYNAMIC_SHARED_BYTES = 227 * 1024  # an sm_90 block's shared memory beyond the static 48 KiB
MAX_BLOCK_THREADS = 1024

# _fibers.c's error kinds
_OK, _DEADLOCK, _MISMATCH, _TRAP, _NO_MEMORY, _WARP_DEADLOCK, _MEMCHECK, _RACE, _UNINITIALIZED = range(9)
_ACCESSES = ("read", "write", "atomic", "volatile read", "volatile write")  # _fibers.c's access codes
_DONE = ("read", "wrote", "atomically updated", "read (volatile)", "wrote (volatile)")
_DOES = ("reads", "writes", "atomically updates", "reads (volatile)", "writes (volatile)")
_STORES = (1, 4)  # the access codes of a plain and a relaxed store


def _two_writes(launch: _Launch) -> str:
    """For a write-write race: why two writes race (they stored different values)."""
    if launch.err_access in _STORES and launch.err_other_access in (1, 2, 4):
        return (" (two writes of different values: which one the memory keeps depends on the order; writes of "
                "the value already there are not reported)")
    return ""

# one launch at a time in the process: the scheduler's state is global (_fibers.c)
_launch_lock = threading.Lock()
# llvm.add_symbol is process-wide: a module's C++ symbols are registered and resolved together
_symbols_lock = threading.Lock()


class _Launch(ctypes.Structure):
    """``launch_t`` of ``_fibers.c``."""

    _fields_ = [
        ("block_fn", ctypes.c_void_p), ("thread_fn", ctypes.c_void_p), ("params", ctypes.c_void_p),
        ("grid", ctypes.c_int32 * 3), ("block", ctypes.c_int32 * 3), ("mode", ctypes.c_int32), ("pad", ctypes.c_int32),
        ("shared_bytes", ctypes.c_int64),
        ("err_kind", ctypes.c_int32), ("err_site", ctypes.c_int32), ("err_other_site", ctypes.c_int32),
        ("err_exited", ctypes.c_int32), ("err_block", ctypes.c_int32 * 3), ("err_thread", ctypes.c_int32 * 3),
        ("err_lane_mask", ctypes.c_int32), ("pad2", ctypes.c_int32),
        ("ranges", ctypes.c_void_p), ("n_ranges", ctypes.c_int64), ("static_shared_bytes", ctypes.c_int64),
        ("err_address", ctypes.c_uint64), ("err_size", ctypes.c_int64), ("err_access", ctypes.c_int32),
        ("err_space", ctypes.c_int32), ("checks", ctypes.c_int32), ("err_other_thread", ctypes.c_int32),
        ("err_other_access", ctypes.c_int32), ("err_linear", ctypes.c_int32), ("err_offset", ctypes.c_int64),
        ("err_other_block", ctypes.c_int32 * 3), ("pad3", ctypes.c_int32), ("err_local_bytes", ctypes.c_int64),
    ]
    # not of launch_t: the launch's allocations by name (``CpuFunction._ranges``), for messages
    buffers: list[tuple[str, int, int]] = []


def _launcher() -> Callable[[object], int]:
    from .jit import scheduler

    address = scheduler().symbols()["oxide_cpu_launch"]
    launch: Callable[[object], int] = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Launch))(address)
    return launch


class CpuFunction:
    """One kernel entry point of a ``CpuModule``."""

    def __init__(self, module: CpuModule, name: str, mode: KernelMode, params: int, max_threads: int) -> None:
        self.module = module
        self.name = name
        self.mode = mode
        self.cooperative = mode is KernelMode.COOPERATIVE
        self.max_threads_per_block = max_threads
        self.static_shared_bytes = module.static_shared_bytes
        self.param_count = params  # the pointers kernelParams holds
        jit = module.jit
        self._thread_fn = jit.function_address(f"__oxide_cpu_thread.{name}")
        self._block_fn = jit.function_address(f"__oxide_cpu_block.{name}") if mode is KernelMode.LOOP else 0
        self._spec = next((k for k in module.kernels if name in k.instances()), None)
        self._checks = 0  # the instrumented build's sanitizers of the launch under way

    def __repr__(self) -> str:
        return f"<CpuFunction {self.name} of {self.module.module_name} ({self.mode.name.lower()})>"

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
               kernel_params: int | Sequence[int], sanitize: frozenset[str] = frozenset()) -> None:
        """Runs the kernel over ``grid`` x ``block`` (see the module's docstring)."""
        unknown = set(sanitize) - SANITIZERS
        if unknown:
            raise ValueError(f"unknown sanitizer(s) {', '.join(sorted(unknown))}; the CPU device has "
                             f"{', '.join(sorted(SANITIZERS))}")
        missing = set(sanitize) - IMPLEMENTED_SANITIZERS
        if missing:
            raise ValueError(f"the CPU device does not implement {', '.join(sorted(missing))} yet; it has "
                             f"{', '.join(sorted(IMPLEMENTED_SANITIZERS))}")
        checks = frozenset(sanitize) & _CHECKS.keys()
        if checks and not self.module.sanitized:
            self._launch_checked(grid, block, dynamic_shared_bytes, kernel_params, checks)
            return
        self._checks = sum(_CHECKS[c] for c in checks)
        if len(grid) != 3 or len(block) != 3:
            raise ValueError(f"grid and block are 3-tuples; got grid {grid}, block {block}")
        grid = (int(grid[0]), int(grid[1]), int(grid[2]))
        block = (int(block[0]), int(block[1]), int(block[2]))
        threads = block[0] * block[1] * block[2]
        if min(block) < 1 or threads > min(MAX_BLOCK_THREADS, self.max_threads_per_block):
            raise ValueError(f"kernel {self._kernel_name}: a block of {block} = {threads} threads; at most "
                             f"{min(MAX_BLOCK_THREADS, self.max_threads_per_block)} (and at least 1)")
        if min(grid) < 0 or max(grid) > 0x7FFFFFFF:
            raise ValueError(f"kernel {self._kernel_name}: grid {grid} out of range")
        if not 0 <= dynamic_shared_bytes <= MAX_DYNAMIC_SHARED_BYTES:
            raise ValueError(f"kernel {self._kernel_name}: {dynamic_shared_bytes} bytes of dynamic shared memory; "
                             f"a block has at most {MAX_DYNAMIC_SHARED_BYTES}")
        keep: object = None
        if isinstance(kernel_params, int):
            params = kernel_params
        else:
            values = [int(v) & 0xFFFFFFFFFFFFFFFF for v in kernel_params]
            total = self._total_slots()
            declared_slots = self._declared_slots
            if len(values) == total and declared_slots is not None and total != self.param_count:
                every = values  # every slot of the parameter block: the declared ones are passed
                values = [every[k] for k in declared_slots]
                slot_block = (ctypes.c_uint64 * max(len(every), 1))(*every)
                pointers = (ctypes.c_void_p * max(len(values), 1))(
                    *(ctypes.addressof(slot_block) + 8 * k for k in declared_slots))
                kernel_params = ctypes.addressof(pointers)
                keep_all = (slot_block, pointers)
                self._launch_params(grid, block, dynamic_shared_bytes, kernel_params, keep_all)
                return
            if len(values) != self.param_count:
                raise ValueError(f"kernel {self._kernel_name} declares {self.param_count} parameters (of "
                                 f"{total} slots); got {len(values)} slot values")
            slot_block = (ctypes.c_uint64 * max(len(values), 1))(*values)
            pointers = (ctypes.c_void_p * max(len(values), 1))(
                *(ctypes.addressof(slot_block) + 8 * k for k in range(len(values))))
            keep = (slot_block, pointers)
            params = ctypes.addressof(pointers)
        self._launch_params(grid, block, dynamic_shared_bytes, params, keep)

    @property
    def _declared_slots(self) -> tuple[int, ...] | None:
        """The slots this entry point declares (the manifest's record for the kernel as written or
        for its index32 instance, which may read fewer: no last-axis stride); None: every slot."""
        spec = self._spec
        if spec is None:
            return None
        if spec.index32_symbol and self.name == spec.index32_symbol:
            return spec.index32_param_slots
        if spec.fast_symbol and self.name == spec.fast_symbol:
            return spec.fast_param_slots
        if spec.fast_index32_symbol and self.name == spec.fast_index32_symbol:
            return spec.fast_index32_param_slots
        return spec.param_slots

    def _total_slots(self) -> int:
        spec = self._spec
        return sum(p.slot_count for p in spec.params) if spec is not None else 0

    def _launch_params(self, grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
                       params: int, keep: object) -> None:
        launch = _Launch()
        ranges: object = None
        if self.module.sanitized:
            ranges, launch.buffers = self._ranges(params)
            launch.ranges, launch.n_ranges = ctypes.addressof(ranges), len(ranges) // 2  # type: ignore[arg-type]
        launch.static_shared_bytes = self.static_shared_bytes
        launch.checks = self._checks if self.module.sanitized else 0
        launch.block_fn, launch.thread_fn, launch.params = self._block_fn, self._thread_fn, params
        launch.grid[:], launch.block[:] = grid, block
        launch.mode = self.mode.value
        launch.shared_bytes = self.static_shared_bytes + dynamic_shared_bytes
        with self.module.lock, _launch_lock:
            status = _launcher()(ctypes.byref(launch))
        del keep, ranges
        if status != _OK:
            raise self._error(launch)

    def _launch_checked(self, grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
                        kernel_params: int | Sequence[int], checks: frozenset[str]) -> None:
        """The launch in the module's instrumented build, which shares this module's error record,
        module id and arrays (copied in before, the arrays back after)."""
        checked = self.module.sanitized_module()
        shared = [name for name in self.module.global_names() if name in checked.global_names()]
        for name in shared:
            _copy_global(self.module, checked, name)
        try:
            checked.function(self.name).launch(grid, block, dynamic_shared_bytes, kernel_params, checks)
        finally:
            for name in shared:
                _copy_global(checked, self.module, name)

    def _slots(self, params: int) -> list[int | None]:
        """Every slot of the launch's parameter block (the runtime packs all of them in one buffer,
        and kernelParams points at the declared ones): None where it cannot be read."""
        spec = self._spec
        if spec is None:
            return []
        total = sum(p.slot_count for p in spec.params)
        declared_slots = self._declared_slots
        declared = list(declared_slots) if declared_slots is not None else list(range(total))
        if not declared or not params:
            return [None] * total
        pointers = (ctypes.c_void_p * len(declared)).from_address(params)
        first = int(pointers[0] or 0) - 8 * declared[0]
        contiguous = all(int(pointers[k] or 0) == first + 8 * s for k, s in enumerate(declared))
        if contiguous:
            return list((ctypes.c_uint64 * total).from_address(first))
        out: list[int | None] = [None] * total
        for k, s in enumerate(declared):
            out[s] = ctypes.c_uint64.from_address(int(pointers[k] or 0)).value
        return out

    def _ranges(self, params: int) -> tuple[ctypes.Array[ctypes.c_uint64], list[tuple[str, int, int]]]:
        """memcheck's allocations of this launch, sorted: each view argument's elements and the
        module's arrays (global memory); and each by its name (a message's words)."""
        spans: list[tuple[int, int]] = []
        named: list[tuple[str, int, int]] = []
        slots = self._slots(params)
        position = 0
        spec = self._spec
        for p in spec.params if spec is not None else ():
            count = p.slot_count
            before = len(spans)
            if p.is_view and position < len(slots) and slots[position] is not None:
                ptr = int(slots[position] or 0)
                item = _itemsize(p.dtype)
                dims = slots[position + 1:position + count - (PRESENT_SLOTS if p.optional else 0)]
                if p.is_tensor:
                    shape, strides = dims[:p.ndim], dims[p.ndim:]
                    if any(d is None for d in dims):
                        spans.append((ptr, ptr + (1 << 40)))
                    elif all(int(d or 0) > 0 for d in shape):
                        signed = [_signed(int(st or 0)) for st in strides]
                        low = sum(min(0, (int(d or 0) - 1) * st) for d, st in zip(shape, signed))
                        high = sum(max(0, (int(d or 0) - 1) * st) for d, st in zip(shape, signed))
                        spans.append((ptr + low * item, ptr + (high + 1) * item))
                else:
                    length = dims[0] if dims else None
                    spans.append((ptr, ptr + (1 << 40) if length is None else ptr + int(length) * item))
                if len(spans) > before:
                    named.append((f"parameter {p.name}", *spans[-1]))
            position += count
        for record in self.module.arrays:
            if record.space == "global":
                address, size = self.module.global_address(record.symbol)
                spans.append((address, address + size))
                named.append((f"module array {record.name}", address, address + size))
        spans.sort()
        merged: list[list[int]] = []
        for start, end in spans:  # overlapping views are one allocation for the search
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        flat = [v for span in merged for v in span]
        return (ctypes.c_uint64 * max(len(flat), 2))(*flat), named

    @property
    def _kernel_name(self) -> str:
        return self._spec.name if self._spec is not None else self.name

    def _access_site(self, site: int) -> str:
        sites = self.module.access_sites
        if 0 <= site < len(sites):
            file, line, col = sites[site]
            return f"{file}:{line}:{col}"
        return "?"

    @staticmethod
    def _thread_of(linear: int, launch: _Launch) -> tuple[int, int, int]:
        bx, by = launch.block[0], launch.block[1]
        return (linear % bx, linear // bx % by, linear // (bx * by))

    @staticmethod
    def _buffer_byte(launch: _Launch) -> str:
        """Which byte of which argument (or module array) a global access touched."""
        address = launch.err_address
        for name, start, end in launch.buffers:
            if start <= address < end:
                return f"byte {address - start} of {name}"
        return f"the byte at {address:#x}"

    def _global_race(self, launch: _Launch, at: str, before: str, racing: tuple[int, int, int]) -> RacecheckError:
        """racecheck of global memory (``_global_races.h``): the two accesses, in their blocks."""
        kernel = self._kernel_name
        block, thread = tuple(launch.err_block), tuple(launch.err_thread)
        other_block = tuple(launch.err_other_block)
        why = ("no barrier between them (block.sync(), or a warp operation of their warp)" if other_block == block
               else "nothing ordering the blocks: no grid.sync() between them, and no release/acquire (a fence "
                    "before an atomic or volatile store in the first, an atomic or volatile read of what it stored "
                    "with a fence in the second)")
        return RacecheckError(
            f"racecheck: a race on global memory in kernel {kernel}: block {block}, thread {thread} "
            f"{_DOES[launch.err_access]} {self._buffer_byte(launch)} at {at}, and block "
            f"{other_block}, thread {racing} {_DONE[launch.err_other_access]} it at {before}, with {why}"
            f"{_two_writes(launch)}",
            kernel=kernel, location=at, other_location=before, block=block, thread=thread,  # type: ignore[arg-type]
            other_thread=racing, other_block=other_block)  # type: ignore[arg-type]

    def _site(self, site: int) -> str:
        sites = self.module.sync_sites
        if 0 <= site < len(sites):
            file, line, col = sites[site]
            return f"{file}:{line}:{col}"
        cxx = self.module.cxx.site(site)  # a barrier or warp operation of the C++ (cxx.py)
        if cxx is not None:
            return f"{cxx[0]}:{cxx[1]}" if cxx[1] else f"{cxx[0]} (or a header it includes)"
        return "?"

    def _error(self, launch: _Launch) -> KernelError:
        kernel = self._kernel_name
        block = tuple(launch.err_block)
        thread = tuple(launch.err_thread)
        where = f"block {block}, thread {thread}"
        if launch.err_kind == _TRAP:
            return KernelError(f"kernel {kernel} trapped in {where}: a check failed with no error record set up "
                               "(the runtime stores the record's address in __oxide_error_ptr before launching)",
                               kernel=kernel)
        if launch.err_kind in (_RACE, _UNINITIALIZED):
            at = self._access_site(launch.err_site)
            offset = launch.err_offset
            if launch.err_kind == _UNINITIALIZED:
                return InitcheckError(
                    f"initcheck: in kernel {kernel}, {where} {'reads' if launch.err_access == 0 else 'atomically updates'} "
                    f"byte {offset} of the block's shared memory "
                    f"at {at}, which no thread of the block wrote", kernel=kernel, location=at, block=block,  # type: ignore[arg-type]
                    thread=thread)  # type: ignore[arg-type]
            racing = self._thread_of(launch.err_other_thread, launch)
            before = self._access_site(launch.err_other_site)
            if launch.err_space == 1:
                return self._global_race(launch, at, before, racing)
            return RacecheckError(
                f"racecheck: a race on shared memory in kernel {kernel}, block {block}: thread {thread} "
                f"{_DOES[launch.err_access]} byte {offset} at {at}, and thread {racing} "
                f"{_DONE[launch.err_other_access]} it at {before} with no barrier between them (block.sync(), or a "
                f"warp operation of their warp){_two_writes(launch)}",
                kernel=kernel, location=at, other_location=before, block=block, thread=thread,  # type: ignore[arg-type]
                other_thread=racing)
        if launch.err_kind == _MEMCHECK:
            at = self._access_site(launch.err_site)
            space = "shared memory outside the block's" if launch.err_space == 3 else \
                "global memory outside every view argument and module array of the launch"
            if launch.err_space == 0:
                space = (f"byte {launch.err_offset} of a local array of {launch.err_local_bytes} bytes (past its "
                         "end or before its start)")
            return MemcheckError(
                f"memcheck: in kernel {kernel}, {where}: a {_ACCESSES[launch.err_access]} of {launch.err_size} bytes "
                f"at {launch.err_address:#x} at {at} touches {space}; the thread ended there",
                kernel=kernel, location=at, block=block, thread=thread,  # type: ignore[arg-type]
                address=launch.err_address, size=launch.err_size)
        if launch.err_kind == _NO_MEMORY:
            return KernelError(f"kernel {kernel}: out of host memory for the CPU device's thread stacks", kernel=kernel)
        if launch.err_kind == _MISMATCH:
            at, other = self._site(launch.err_site), self._site(launch.err_other_site)
            return SynccheckError(
                f"synccheck: in kernel {kernel}, {where} waits at the barrier at {at} while other threads of its "
                f"block wait at the barrier at {other}: a block's threads must all reach the same barrier",
                kernel=kernel, location=at, block=block, thread=thread)  # type: ignore[arg-type]
        if launch.err_kind == _WARP_DEADLOCK:
            return SynccheckError(
                f"synccheck: in kernel {kernel}, {where} waits at a warp operation for lanes "
                f"{launch.err_lane_mask & 0xFFFFFFFF:#010x} that never reach one (they exited or wait at a barrier)",
                kernel=kernel, block=block, thread=thread)  # type: ignore[arg-type]
        at = self._site(launch.err_site)
        what = "grid.sync()" if launch.err_other_site else "the barrier"
        return SynccheckError(
            f"synccheck: in kernel {kernel}, {where} waits at {what} at {at}, which the block's other threads never "
            f"reach ({launch.err_exited} of them exited): every thread of a block must reach each barrier",
            kernel=kernel, location=at, block=block, thread=thread)  # type: ignore[arg-type]


class CpuModule:
    """A kernel module compiled for the host (``compile_module_for_cpu``)."""

    def __init__(self, module_name: str, kernels: tuple[KernelSpec, ...], error_sites: tuple[ErrorSite, ...],
                 arrays: tuple[ModuleArrayRecord, ...], host: object) -> None:
        from .codegen import HostCode
        from .jit import JitModule

        assert isinstance(host, HostCode)
        self.module_name = module_name
        self.kernels = kernels
        self.error_sites = error_sites
        self.arrays = arrays
        self.static_shared_bytes = host.static_shared_bytes
        self.sync_sites = host.sync_sites
        self.access_sites = host.access_sites
        self.sanitized = host.sanitized
        # makes the module's memcheck build (cpu_engine.py sets it; compiled on first use)
        self.make_sanitized: Callable[[], CpuModule] | None = None
        self._sanitized: CpuModule | None = None
        self.modes = host.modes
        self.refused = host.refused  # entry symbol -> the CompileError its launch raises
        self.cxx = host.cxx  # the externs' C++, built for the host (cxx.py)
        with _symbols_lock:  # the JIT resolves the C++ symbols by name: this module's library's
            if host.cxx.library:
                from .cxx import load_host_cxx

                for name, address in load_host_cxx(host.cxx.library, host.cxx.symbols).items():
                    llvm.add_symbol(name, address)
            self.jit = JitModule(host.llvm_ir, registered=frozenset(host.cxx.symbols))
            if host.cxx.library and host.cxx.exports:  # the C++'s calls of the exported Python functions
                from .cxx import bind_exports

                bind_exports(host.cxx.library, {s: self.jit.function_address(s) for s in host.cxx.exports})
        self.lock = threading.RLock()
        self._functions: dict[str, CpuFunction] = {}
        self._param_counts = {name: count for name, count in _declared_params(host.llvm_ir, host.modes).items()}

    def __repr__(self) -> str:
        return f"<CpuModule {self.module_name}: {', '.join(sorted(self.modes))}>"

    def function(self, symbol: str) -> CpuFunction:
        """The kernel entry ``symbol`` (one of ``KernelSpec.instances()``)."""
        if symbol not in self._functions:
            if symbol in self.refused:  # it reaches what the CPU device cannot run (or is C++)
                raise self.refused[symbol]
            if symbol not in self.modes:
                raise KeyError(f"module {self.module_name} has no kernel entry {symbol!r}; it has "
                               f"{', '.join(sorted(self.modes)) or 'none'}")
            spec = next((k for k in self.kernels if symbol in k.instances()), None)
            bound = getattr(spec, "launch_bounds", None) or MAX_BLOCK_THREADS
            self._functions[symbol] = CpuFunction(self, symbol, self.modes[symbol], self._param_counts[symbol],
                                                  int(bound))
        return self._functions[symbol]

    def sanitized_module(self) -> CpuModule:
        """The module built for memcheck (every global and shared access checked)."""
        if self._sanitized is None:
            if self.make_sanitized is None:
                raise ValueError(f"module {self.module_name} has no memcheck build")
            self._sanitized = self.make_sanitized()
        return self._sanitized

    def global_names(self) -> list[str]:
        """The globals the host reads and writes: the error record's pointer, the module id, the arrays."""
        from oxide.abi import error_record

        names = [error_record.ERROR_PTR_SYMBOL, error_record.MODULE_ID_SYMBOL, *(a.symbol for a in self.arrays)]
        out = []
        for name in names:
            try:
                self.jit.global_address(name)
            except KeyError:
                continue
            out.append(name)
        return out

    def global_address(self, name: str) -> tuple[int, int]:
        """(host address, bytes) of the module global ``name``; KeyError if it has none."""
        try:
            return self.jit.global_address(name), self.jit.global_size(name)
        except (KeyError, NameError):
            raise KeyError(f"module {self.module_name} has no global {name!r}") from None


def _declared_params(llvm_ir: str, modes: dict[str, KernelMode]) -> dict[str, int]:
    """Entry symbol -> the parameters it declares (the pointers in kernelParams)."""
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(llvm_ir)
    return {symbol: len(list(mod.get_function(symbol).arguments)) for symbol in modes}


def _copy_global(source: CpuModule, target: CpuModule, name: str) -> None:
    src, size = source.global_address(name)
    dst, size2 = target.global_address(name)
    ctypes.memmove(dst, src, min(size, size2))


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _itemsize(dtype: str) -> int:
    if dtype in SCALAR_TYPES:
        return SCALAR_TYPES[dtype].itemsize
    if vectors.vector_lanes(dtype) is not None:
        return vectors.vector_itemsize(dtype)
    if is_record_dtype(dtype):
        return record_itemsize(dtype)
    return 1 << 20  # an element type this module does not know: not checked finely
