"""Host code for the CPU device: the program lowered in the CPU dialect (``lower/dialect.py``),
and per kernel the entry points the scheduler (``_fibers.c``) calls.

For each kernel entry symbol ``K``:

- ``__oxide_cpu_thread.K(void **params)``: one CUDA thread; reads each declared parameter from
  the slot its pointer names (cuLaunchKernel's ``kernelParams``) and calls ``K``;
- ``__oxide_cpu_block.K(void **params)``, for a kernel that needs no fibers (no barrier, no
  warp operation, no grid barrier anywhere in what it calls): every thread of the block in one
  loop (x fastest), ``K`` inlined into it; it records the position of the running thread, so a
  thread that ends at a failed check ends only itself (the scheduler runs the rest).

A kernel that reaches a barrier runs on fibers (``KernelMode.FIBERS``), one that reaches
``grid.sync()`` on fibers of the whole grid (``COOPERATIVE``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from llvmlite import ir as ll
from llvmlite.ir.instructions import Fence

from oxide.errors import CompileError, SourceLocation

from ... import cpu_abi
from ...cpu_abi import NoCpuFormError
from ...ir.types import ArrayType
from ...intrinsics import INTRINSICS, Role
from ...intrinsics.thread import BARRIER
from ...ir import nodes as ir
from ...lower.dialect import cpu_dialect
from ...lower.index32 import index32_twins
from .cxx import HostCxx

__all__ = ["HostCode", "KernelMode", "lower_for_cpu", "host_target"]

I8, I32, I64 = ll.IntType(8), ll.IntType(32), ll.IntType(64)


class KernelMode(Enum):
    """How the scheduler runs a kernel's threads (``_fibers.c``'s MODE_*)."""

    LOOP = 0
    FIBERS = 1
    COOPERATIVE = 2


@dataclass(frozen=True)
class HostCode:
    """What the CPU stage makes of a module: LLVM IR for the host, and what the launch needs."""

    llvm_ir: str
    modes: dict[str, KernelMode]  # entry symbol -> how its threads run
    kept_params: dict[str, tuple[int, ...]]
    static_shared_bytes: int  # each block's static shared segment (all of the module's arrays)
    sync_sites: tuple[tuple[str, int, int], ...]  # barrier / warp operation id -> file, line, col
    # sanitized code (memcheck): every global and shared access calls oxide_cpu_access first,
    # naming its access site: id -> file, line, col
    access_sites: tuple[tuple[str, int, int], ...] = ()
    sanitized: bool = False
    # entry symbol -> why the CPU device cannot run that kernel (it reaches a construct with no
    # CPU form: the located CompileError, raised when it is launched); the others run
    refused: dict[str, CompileError] = field(default_factory=dict)
    cxx: HostCxx = field(default_factory=HostCxx)  # the externs' C++, built for the host (cxx.py)


def host_target() -> tuple[str, str]:
    """The host's (triple, data layout), as LLVM's native target gives them."""
    from .jit import target_machine

    tm = target_machine()
    return tm.triple, str(tm.target_data)


def _direct_sync(fn: ir.Function) -> tuple[bool, bool]:
    """Whether ``fn`` itself reaches a barrier, warp operation or a yield (nanosleep), and a grid
    barrier."""
    sync = grid = False
    for s in ir.statements(fn.body):
        for root in ir.statement_roots(s):
            for e in ir.subexpressions(root):
                if isinstance(e, ir.Call) and e.symbol == BARRIER:
                    sync = True
                elif isinstance(e, ir.Intrinsic):
                    info = INTRINSICS.get(e.name)
                    if info is not None and (info.convergent or info.has(Role.BLOCK_BARRIER) or info.has(Role.YIELDS)):
                        sync = True
                    if info is not None and info.has(Role.GRID_BARRIER):
                        grid = True
    return sync, grid


def _callees(fn: ir.Function) -> set[str]:
    return {e.symbol for s in ir.statements(fn.body) for root in ir.statement_roots(s)
            for e in ir.subexpressions(root) if isinstance(e, ir.Call)}


def _reachable(symbol: str, calls: dict[str, set[str]]) -> set[str]:
    """``symbol`` and every function of the module it calls, directly or not (``calls``: each
    function's callees in the module)."""
    seen, todo = {symbol}, [symbol]
    while todo:
        for c in calls[todo.pop()] - seen:
            seen.add(c)
            todo.append(c)
    return seen


def kernel_modes(program: ir.Program, syncing_externs: frozenset[str] = frozenset()) -> dict[str, KernelMode]:
    """Each kernel's ``KernelMode``, across the functions it calls; ``syncing_externs``: the C++
    functions (``cxx.py``) whose code has barriers or warp operations."""
    by_symbol = {fn.symbol: fn for fn in program.functions}
    direct = {fn.symbol: _direct_sync(fn) for fn in program.functions}
    for fn in program.functions:
        if _callees(fn) & syncing_externs:
            direct[fn.symbol] = (True, direct[fn.symbol][1])
    calls = {fn.symbol: _callees(fn) & by_symbol.keys() for fn in program.functions}
    modes: dict[str, KernelMode] = {}
    twins = index32_twins(program)
    for fn in program.functions:
        if not fn.is_kernel:
            continue
        reached = _reachable(fn.symbol, calls)
        sync, grid = any(direct[s][0] for s in reached), any(direct[s][1] for s in reached)
        mode = KernelMode.COOPERATIVE if grid else KernelMode.FIBERS if sync else KernelMode.LOOP
        modes[fn.symbol] = mode
        if fn.symbol in twins:
            modes[twins[fn.symbol]] = mode
    return modes


# the local arrays of one function, at most: a thread's fiber has 256 KiB of stack
# (_fibers.c), and its frames need some of it
LOCAL_ARRAY_LIMIT = 192 * 1024


def _local_bytes(fn: ir.Function) -> tuple[int, ir.Loc | None]:
    """The bytes of ``fn``'s own local arrays, and where its largest is declared."""
    total, where, largest = 0, None, 0
    for s in ir.statements(fn.body):
        if isinstance(s, ir.ArrayDecl) and isinstance(s.ty, ArrayType) and s.ty.space == "local" and s.ty.size:
            size = s.ty.size * s.ty.elem.itemsize
            total += size
            if size > largest:
                largest, where = size, s.loc
    return total, where


def refused_kernels(program: ir.Program, refused: dict[str, CompileError]) -> dict[str, CompileError]:
    """Entry symbol -> the refusal of a function it reaches (itself or a device function it calls),
    or of its local arrays, more than a fiber's stack holds."""
    by_symbol = {fn.symbol: fn for fn in program.functions}
    refused = dict(refused)
    for fn in program.functions:
        local, where = _local_bytes(fn)
        if local > LOCAL_ARRAY_LIMIT and fn.symbol not in refused and where is not None:
            refused[fn.symbol] = NoCpuFormError(
                f"{fn.python_name}() declares {local} bytes of local arrays; a thread of the CPU device has "
                f"{LOCAL_ARRAY_LIMIT // 1024} KiB for them", SourceLocation(fn.file, where.line, where.col),
                "use smaller local arrays (or shared memory) to run this kernel on the CPU device")
    calls = {fn.symbol: _callees(fn) & by_symbol.keys() for fn in program.functions}
    twins = index32_twins(program)
    out: dict[str, CompileError] = {}
    for fn in program.functions:
        if not fn.is_kernel:
            continue
        seen, todo = {fn.symbol}, [fn.symbol]
        while todo:
            s = todo.pop(0)
            if s in refused:
                out[fn.symbol] = refused[s]
                if fn.symbol in twins:
                    out[twins[fn.symbol]] = refused[s]
                break
            for c in sorted(calls[s] - seen):
                seen.add(c)
                todo.append(c)
    return out


def _load_params(b: ll.IRBuilder, kernel: ll.Function, params: ll.Value, module: ll.Module) -> list[ll.Value]:
    """The kernel's arguments from cuLaunchKernel's ``kernelParams``: one slot pointer each."""
    invariant = module.add_metadata([])
    i8pp = ll.PointerType(ll.PointerType(I8))
    slots = b.bitcast(params, i8pp)
    values: list[ll.Value] = []
    for k, arg in enumerate(kernel.args):
        slot = b.load(b.gep(slots, [ll.Constant(I64, k)]), typ=ll.PointerType(I8))
        slot.set_metadata("invariant.load", invariant)
        value = b.load(b.bitcast(slot, ll.PointerType(arg.type)), typ=arg.type)
        value.set_metadata("invariant.load", invariant)
        values.append(value)
    return values


def _context_field(b: ll.IRBuilder, ctx: ll.GlobalVariable, field: int, axis: int | None = None) -> ll.Value:
    zero = ll.Constant(I32, 0)
    indices = [zero, ll.Constant(I32, field)] + ([] if axis is None else [ll.Constant(I32, axis)])
    return b.gep(ctx, indices, inbounds=True)


def _thread_function(module: ll.Module, kernel: ll.Function) -> None:
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [ll.PointerType(I8)]), f"__oxide_cpu_thread.{kernel.name}")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.call(kernel, _load_params(b, kernel, fn.args[0], module))
    b.ret_void()


def _block_function(module: ll.Module, kernel: ll.Function, ctx: ll.GlobalVariable) -> None:
    """Every thread of the running block, x fastest, in one loop nest around ``kernel``."""
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [ll.PointerType(I8)]), f"__oxide_cpu_block.{kernel.name}")
    entry = fn.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    args = _load_params(b, kernel, fn.args[0], module)
    ntid = [b.load(_context_field(b, ctx, cpu_abi.SPECIAL_REGISTER_FIELDS["ntid"], a), typ=I32) for a in range(3)]
    position = b.alloca(I64)
    b.store(ll.Constant(I64, 0), position)
    counters = [b.alloca(I32) for _ in range(3)]
    exit_block = fn.append_basic_block("done")

    def nest(axis: int, after: ll.Block) -> ll.Block:
        """The loop over ``axis`` (2: z, outermost); returns its header."""
        head = fn.append_basic_block(f"loop.{'xyz'[axis]}")
        body = fn.append_basic_block(f"body.{'xyz'[axis]}")
        step = fn.append_basic_block(f"step.{'xyz'[axis]}")
        b.position_at_end(head)
        i = b.load(counters[axis], typ=I32)
        b.cbranch(b.icmp_unsigned("<", i, ntid[axis]), body, after)
        b.position_at_end(body)
        b.store(i, _context_field(b, ctx, cpu_abi.SPECIAL_REGISTER_FIELDS["tid"], axis))
        if axis > 0:
            b.store(ll.Constant(I32, 0), counters[axis - 1])
            inner = nest(axis - 1, step)
            b.position_at_end(body)
            b.branch(inner)
        else:
            p = b.load(position, typ=I64)
            b.store(p, _context_field(b, ctx, cpu_abi.POSITION_FIELD))
            b.call(kernel, args)
            b.store(b.add(p, ll.Constant(I64, 1)), position)
            b.branch(step)
        b.position_at_end(step)
        b.store(b.add(b.load(counters[axis], typ=I32), ll.Constant(I32, 1)), counters[axis])
        b.branch(head)
        return head

    b.store(ll.Constant(I32, 0), counters[2])
    outer = nest(2, exit_block)
    b.position_at_end(entry)
    b.branch(outer)
    b.position_at_end(exit_block)
    b.ret_void()


def _bytes(ty: ll.Type) -> int:
    """The bytes a load or store of ``ty`` touches (scalars, vectors, arrays, structs)."""
    if isinstance(ty, ll.IntType):
        return max(1, ty.width // 8)
    if isinstance(ty, ll.DoubleType):
        return 8
    if isinstance(ty, ll.FloatType):
        return 4
    if isinstance(ty, ll.PointerType):
        return 8
    if isinstance(ty, ll.VectorType):
        return ty.count * _bytes(ty.element)
    if isinstance(ty, ll.ArrayType):
        return ty.count * _bytes(ty.element)
    if isinstance(ty, ll.LiteralStructType):
        return sum(_bytes(t) for t in ty.elements)
    return 2  # half, bfloat


def _location(instr: ll.Instruction) -> tuple[str, int, int]:
    """The Python file:line:col of an instruction, from its line-table location."""
    import os

    loc = instr.metadata.get("dbg")
    if loc is None:
        return ("?", 0, 0)
    fields = dict(loc.operands)
    scope = dict(fields["scope"].operands)
    file = dict(scope["file"].operands)
    directory, name = str(file["directory"]), str(file["filename"])
    return (name if directory == "." else os.path.join(directory, name), int(fields["line"]), int(fields["column"]))


def _local_array(ptr: ll.Value) -> tuple[ll.AllocaInstr | None, bool]:
    """The local (an ``alloca``) that ``ptr`` points into, and whether an offset on the way is
    computed at run time (None: not a local's; a local at constant offsets is not checked)."""
    at_run_time = False
    while True:
        if isinstance(ptr, ll.GEPInstr):
            at_run_time = at_run_time or not all(isinstance(i, ll.Constant) for i in ptr.indices)
            ptr = ptr.pointer
        elif isinstance(ptr, ll.CastInstr) and ptr.opname in ("bitcast", "addrspacecast"):
            ptr = ptr.operands[0]
        else:
            return (ptr, at_run_time) if isinstance(ptr, ll.AllocaInstr) else (None, False)


def _instrument_accesses(module: ll.Module) -> tuple[tuple[str, int, int], ...]:
    """The sanitizers: a call of ``oxide_cpu_access`` before every load, store and atomic of
    global or shared memory (address spaces 1 and 3) in the module's functions, save those at a
    global itself (the module's own variables: always in bounds), a store's value passed to it
    through a slot of the function's frame (racecheck compares it with the bytes memory holds), of ``oxide_cpu_local_access``
    before every access of a local array at a run-time index (memcheck), and of ``oxide_cpu_fence``
    after every fence (racecheck's release/acquire, ``_global_races.h``)."""
    hook = module.globals.get("oxide_cpu_access")
    if hook is None:
        hook = ll.Function(module, cpu_abi.runtime_function_type("oxide_cpu_access"), "oxide_cpu_access")
    fence_hook = module.globals.get("oxide_cpu_fence")
    if fence_hook is None:
        fence_hook = ll.Function(module, cpu_abi.runtime_function_type("oxide_cpu_fence"), "oxide_cpu_fence")
    local_hook = module.globals.get("oxide_cpu_local_access")
    if local_hook is None:
        local_hook = ll.Function(module, cpu_abi.runtime_function_type("oxide_cpu_local_access"),
                                 "oxide_cpu_local_access")
    import llvmlite.binding as llvm

    layout = llvm.create_target_data(module.data_layout)
    sites: list[tuple[str, int, int]] = []
    ids: dict[tuple[str, int, int], int] = {}
    spills: dict[tuple[str, str], ll.AllocaInstr] = {}  # (function, type) -> a store's bytes for the hook
    b = ll.IRBuilder()
    for fn in list(module.functions):
        if fn.is_declaration:
            continue
        for block in fn.blocks:
            for instr in list(block.instructions):
                # atomic and volatile loads and stores: PTX's relaxed accesses, which do not race
                # with each other (racecheck orders blocks through them and fences)
                # (llvmlite's LoadAtomicInstr and StoreAtomicInstr are not LoadInstr/StoreInstr)
                if isinstance(instr, (ll.LoadInstr, ll.LoadAtomicInstr)):
                    relaxed = isinstance(instr, ll.LoadAtomicInstr) or getattr(instr, "volatile", False)
                    ptr, access, ty = instr.operands[0], 3 if relaxed else 0, instr.type
                elif isinstance(instr, (ll.StoreInstr, ll.StoreAtomicInstr)):
                    relaxed = isinstance(instr, ll.StoreAtomicInstr) or getattr(instr, "volatile", False)
                    ptr, access, ty = instr.operands[1], 4 if relaxed else 1, instr.operands[0].type
                elif isinstance(instr, (ll.AtomicRMW, ll.CmpXchg)):
                    ptr, access, ty = instr.operands[0], 2, instr.operands[1].type
                elif isinstance(instr, Fence):
                    b.position_after(instr)
                    b.call(fence_hook, [])
                    continue
                else:
                    continue
                space = getattr(ptr.type, "addrspace", 0)
                if space == 0:
                    array, at_run_time = _local_array(ptr)
                    if array is not None and at_run_time:
                        where = _location(instr)
                        if where not in ids:
                            ids[where] = len(sites)
                            sites.append(where)
                        b.position_before(instr)
                        count = array.operands[0] if array.operands else ll.Constant(I32, 1)
                        bytes_ = int(array.allocated_type.get_abi_size(layout)) * int(getattr(count, "constant", 1))
                        b.call(local_hook, [b.bitcast(ptr, ll.PointerType(I8)), ll.Constant(I64, _bytes(ty)),
                                            ll.Constant(I32, access), ll.Constant(I32, ids[where]),
                                            b.bitcast(array, ll.PointerType(I8)), ll.Constant(I64, bytes_)])
                    continue
                if space not in (1, 3) or isinstance(ptr, ll.GlobalVariable):
                    continue
                where = _location(instr)
                if where not in ids:
                    ids[where] = len(sites)
                    sites.append(where)
                value: ll.Value = ll.Constant(ll.PointerType(I8), None)
                if isinstance(instr, (ll.StoreInstr, ll.StoreAtomicInstr)):  # the stored bytes, for the write-write check
                    key = (fn.name, str(ty))
                    if key not in spills:
                        b.position_at_start(fn.blocks[0])
                        spills[key] = b.alloca(ty)
                    b.position_before(instr)
                    b.store(instr.operands[0], spills[key])
                    value = b.bitcast(spills[key], ll.PointerType(I8))
                b.position_before(instr)
                generic = b.bitcast(b.addrspacecast(ptr, ll.PointerType(ptr.type.pointee)), ll.PointerType(I8))
                b.call(hook, [generic, ll.Constant(I64, _bytes(ty)), ll.Constant(I32, access),
                              ll.Constant(I32, ids[where]), ll.Constant(I32, space), value])
    return tuple(sites)


def lower_for_cpu(program: ir.Program, module_name: str, fast_math: bool, fma: bool, sanitize: bool = False,
                  cxx: HostCxx | None = None) -> HostCode:
    """The program as host code with its kernels' thread and block entry points; ``sanitize``:
    instrumented for memcheck (``_instrument_accesses``); ``cxx``: its externs' C++, built for
    the host (``cxx.py``: the ones it could build are called, the others refused)."""
    from ...lower.llvm import lower_program

    cxx = cxx or HostCxx()
    triple, layout = host_target()
    callable_ = frozenset(e.symbol for e in program.externs if e.call_symbol in cxx.symbols)
    lowered = lower_program(program, module_name, fast_math=fast_math, lineinfo=sanitize,
                            dialect=cpu_dialect(triple, layout), fma=fma, cpu_cxx=(callable_, cxx.refused))
    module = lowered.module
    access_sites = _instrument_accesses(module) if sanitize else ()
    modes = kernel_modes(program, cxx.syncing & callable_)
    ctx = module.globals.get(cpu_abi.CONTEXT_SYMBOL)
    if ctx is None:
        ctx = ll.GlobalVariable(module, cpu_abi.context_type(), cpu_abi.CONTEXT_SYMBOL)
        ctx.linkage = "external"
    assert isinstance(ctx, ll.GlobalVariable)
    for symbol, mode in modes.items():
        kernel = module.globals.get(symbol)
        assert isinstance(kernel, ll.Function), symbol
        kernel.linkage = "internal"  # called through its entry points only: LLVM may inline it there
        _thread_function(module, kernel)
        if mode is KernelMode.LOOP:
            _block_function(module, kernel, ctx)
    # the C++ kernels the host compiled: their entry points call the library's function, which
    # takes the parameters the GPU kernel does (docs/interop.md's ABI)
    for ext in program.extern_kernels:
        if ext.symbol not in cxx.symbols:
            continue
        from ...lower.llvm import abi_params

        kernel = ll.Function(module, ll.FunctionType(ll.VoidType(), abi_params(ext.params, kernel=True, c_abi=True)),
                             ext.symbol)
        mode = KernelMode.FIBERS if ext.symbol in cxx.syncing else KernelMode.LOOP
        modes[ext.symbol] = mode
        _thread_function(module, kernel)
        if mode is KernelMode.LOOP:
            _block_function(module, kernel, ctx)
    refused = refused_kernels(program, lowered.cpu_refused)
    refused.update(_refused_cpp_kernels(program, cxx))
    refused.update({k: v for k, v in _cooperative_with_cpp_shared(program, modes, cxx.shared_variables & callable_).items()
                    if k not in refused})
    return HostCode(str(module), modes, lowered.kept_params, lowered.cpu_shared_bytes, lowered.sync_sites,
                    access_sites, sanitize, refused, cxx)


def _cooperative_with_cpp_shared(program: ir.Program, modes: dict[str, KernelMode],
                                 shared: frozenset[str]) -> dict[str, CompileError]:
    """The cooperative kernels that reach C++ with ``__shared__`` variables: the host has one copy of
    each (``cuda_host.py``), which serves the blocks of a launch one after another, but the blocks
    of a cooperative launch run together."""
    import linecache

    if not shared:
        return {}
    by_symbol = {fn.symbol: fn for fn in program.functions}
    callees = {fn.symbol: _callees(fn) for fn in program.functions}
    calls = {symbol: c & by_symbol.keys() for symbol, c in callees.items()}
    twins = index32_twins(program)
    out: dict[str, CompileError] = {}
    for fn in program.functions:
        if not fn.is_kernel or modes.get(fn.symbol) is not KernelMode.COOPERATIVE:
            continue
        reached = min((x for s in _reachable(fn.symbol, calls) for x in callees[s] & shared), default="")
        if reached:
            error = NoCpuFormError(
                f"{fn.python_name}() is a cooperative kernel (grid.sync()) that reaches the CUDA C++ function "
                f"{reached}(), whose __shared__ variables the CPU device keeps once for all blocks: the blocks of a "
                "cooperative launch run together there", SourceLocation(fn.file, fn.line, 1,
                                                                          linecache.getline(fn.file, fn.line).rstrip()),
                f"give {reached}() a Python implementation for the CPU device (cpu= in its declaration, "
                "docs/interop.md, \"On the CPU device\"); or run this kernel on a GPU")
            out[fn.symbol] = error
            if fn.symbol in twins:
                out[twins[fn.symbol]] = error
    return out


def _refused_cpp_kernels(program: ir.Program, cxx: HostCxx) -> dict[str, CompileError]:
    """Each CUDA C++ kernel (``@extern_kernel``) without a Python implementation (``cpu=``; with one,
    the frontend compiled that as the kernel) whose C++ the host could not build: refused at its
    stub, saying why and how to give one."""
    import linecache

    out: dict[str, CompileError] = {}
    for ext in program.extern_kernels:
        if ext.symbol in cxx.symbols:
            continue
        source = linecache.getline(ext.file, ext.line).rstrip("\n")
        if ext.symbol in cxx.refused:
            what, hint = cxx.refused[ext.symbol]
            out[ext.symbol] = NoCpuFormError(f"the CPU device cannot run {what}",
                                             SourceLocation(ext.file, ext.line, 1, source), hint)
            continue
        out[ext.symbol] = NoCpuFormError(
            f"the CPU device cannot run the CUDA C++ kernel {ext.symbol} (an @extern_kernel): it has no Python "
            "implementation", SourceLocation(ext.file, ext.line, 1, source),
            f"give it one: a plain function of the stub's parameters whose body is the kernel's, named by cpu= in "
            f"the declaration, @ox.extern_kernel(\"{ext.symbol}\", sources=[...], cpu=...) (docs/interop.md, "
            "\"On the CPU device\"); or launch it on a GPU")
    return out
