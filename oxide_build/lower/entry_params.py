"""Kernel entry points declare only the parameters their code reads, decided on the LLVM module
before code generation.

A kernel is lowered with one parameter per slot of the block the runtime packs
(``oxide.abi.params``), but its code often reads fewer: a tensor's shape is not read where the
kernel's ``assert``s became launch preconditions and proved its bounds checks, a slice's length
not where a guard proved them, a scalar not where it only fed such a check, a view's length not
where the device function it is passed to never reads it. The driver copies the whole declared
block at every launch, and at a few microseconds a kernel that copy is part of the time (the
LLTM backward's index32 instance: 312 bytes declared, 216 read).

So the lowering (``ModuleLowering.lower``) removes from each kernel entry the arguments no live
instruction reads (``read_params``), once, for every backend: the NVPTX module, the NVVM IR of
libNVVM and its LTO-IR are all made from the same decision, and the manifest records the kept
positions (``KernelSpec.param_slots``, from ``LoweredProgram.kept_params``), which the launchers
pass. Live, here: an instruction with an effect (a store to memory that is not a never-read
local, a volatile load, a call of a function this module does not define or of inline assembly
marked ``sideeffect`` or clobbering memory, a terminator) and what it reads; a
call of a function the module defines reads only the arguments at the positions that function
reads (found for all functions of the module together, to a fixed point).
"""
from __future__ import annotations

from collections.abc import Iterable

from llvmlite import ir as ll
from llvmlite.ir import instructions as lli

from oxide.abi.params import TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES

__all__ = ["read_params", "drop_unread_params", "parameter_block_bytes"]

# opcodes whose only effect is their value: dead when nothing live reads it
_PURE = frozenset((
    "alloca", "load", "getelementptr", "select", "icmp", "fcmp", "phi", "freeze",
    "extractvalue", "insertvalue", "extractelement", "insertelement", "shufflevector",
    "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "fadd", "fsub", "fmul", "fdiv", "frem", "fneg",
    "shl", "lshr", "ashr", "and", "or", "xor",
    "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "ptrtoint", "inttoptr",
    "bitcast", "addrspacecast",
))


def _pure_asm(instruction: lli.Instruction) -> bool:
    """A call of inline assembly that only computes its value (no ``sideeffect``, no memory
    clobber): the NVVM dialect's opaque ``mov`` standing for ``freeze`` is one. Dead when
    nothing live reads it, as in LLVM, so that both dialects keep the same parameters."""
    callee = getattr(instruction, "callee", None)
    return (isinstance(instruction, lli.CallInstr) and isinstance(callee, ll.InlineAsm)
            and not callee.side_effect and "memory" not in callee.constraint)


class _Function:
    """One function's instructions, read once: those with an effect (the roots of liveness), the
    stores into each local, and the module's functions it calls."""

    __slots__ = ("fn", "roots", "stores", "callees")

    def __init__(self, fn: ll.Function) -> None:
        self.fn = fn
        self.roots: list[lli.Instruction] = []
        self.stores: dict[int, list[lli.Instruction]] = {}  # id(alloca) -> the stores into it
        self.callees: list[ll.Function] = []
        for block in fn.blocks:
            for instruction in block.instructions:
                opcode = instruction.opname
                if opcode == "store" and isinstance(instruction.operands[1], lli.AllocaInstr):
                    self.stores.setdefault(id(instruction.operands[1]), []).append(instruction)
                elif (opcode not in _PURE or getattr(instruction, "volatile", False)) and not _pure_asm(instruction):
                    self.roots.append(instruction)
                    if isinstance(instruction, lli.CallInstr) and isinstance(instruction.callee, ll.Function) \
                            and instruction.callee.blocks:
                        self.callees.append(instruction.callee)

    def reads(self, reads: dict[ll.Function, frozenset[int]]) -> frozenset[int]:
        """The positions of the function's arguments that a live instruction reads, given what
        each function it calls reads of its own (``reads``).

        Field by field for aggregates: a value is live at index paths (``()``: all of it), so
        that of a struct built field by field (``insertvalue``, ``insertelement``), kept in a
        local and read a field at a time (``extractvalue``), only the fields read count, as
        LLVM's SROA finds."""
        demanded: dict[int, list[tuple[int, ...]]] = {}  # value -> the paths of it that are read
        work: list[tuple[lli.Instruction, tuple[int, ...]]] = []
        instruction_type = lli.Instruction

        def mark(value: object, path: tuple[int, ...]) -> None:
            key = id(value)
            paths = demanded.get(key)
            if paths is None:
                demanded[key] = [path]
            elif any(path[:len(p)] == p for p in paths):
                return
            else:
                paths.append(path)
            if isinstance(value, instruction_type):
                work.append((value, path))

        def insert(value: lli.Instruction, aggregate: ll.Value, element: ll.Value, at: tuple[int, ...],
                   path: tuple[int, ...]) -> None:
            if path[:len(at)] == at:  # within the inserted element
                mark(element, path[len(at):])
            else:
                if at[:len(path)] == path:  # a part of it, which holds the inserted element
                    mark(element, ())
                mark(aggregate, path)

        for root in self.roots:
            mark(root, ())
        while work:
            value, path = work.pop()
            opname = value.opname
            if opname == "extractvalue":
                mark(value.operands[0], (*value.indices, *path))
            elif opname == "insertvalue":
                insert(value, value.operands[0], value.operands[1], tuple(value.indices), path)
            elif opname == "extractelement" and isinstance(value.operands[1], ll.Constant):
                mark(value.operands[0], (int(value.operands[1].constant), *path))
            elif opname == "insertelement" and isinstance(value.operands[2], ll.Constant):
                mark(value.operands[2], ())
                insert(value, value.operands[0], value.operands[1], (int(value.operands[2].constant),), path)
            elif opname == "load" and isinstance(value.operands[0], lli.AllocaInstr):
                mark(value.operands[0], path)
            elif isinstance(value, lli.AllocaInstr):  # a local that is read: what is stored into it counts
                for store in self.stores.get(id(value), ()):
                    mark(store.operands[0], path)
            elif isinstance(value, lli.PhiInstr):
                for incoming, _ in value.incomings:
                    mark(incoming, path)
            elif isinstance(value, lli.CallInstr) and value.callee in reads:
                callee_reads = reads[value.callee]
                for k, arg in enumerate(value.args):
                    if k in callee_reads:
                        mark(arg, ())
            else:
                for operand in value.operands:
                    mark(operand, ())
        return frozenset(k for k, arg in enumerate(self.fn.args) if id(arg) in demanded)


def read_params(functions: Iterable[ll.Function]) -> dict[ll.Function, frozenset[int]]:
    """function -> the positions of the arguments its code reads, for each function defined
    among ``functions`` (the module's: a call reads of its callee's arguments what the callee
    reads, so callees are solved first; functions that call each other, from "nothing read" up
    to a fixed point)."""
    summaries = {fn: _Function(fn) for fn in functions if fn.blocks}
    order: list[ll.Function] = []  # callees before their callers
    state: dict[ll.Function, int] = {}  # 1 on the path, 2 done
    recursive = False
    for start in summaries:
        if start in state:
            continue
        stack = [(start, iter(summaries[start].callees))]
        state[start] = 1
        while stack:
            fn, callees = stack[-1]
            callee = next(callees, None)
            if callee is None:
                stack.pop()
                state[fn] = 2
                order.append(fn)
            elif callee not in summaries:
                continue
            elif callee not in state:
                state[callee] = 1
                stack.append((callee, iter(summaries[callee].callees)))
            elif state[callee] == 1:
                recursive = True
    reads: dict[ll.Function, frozenset[int]] = {fn: frozenset() for fn in order}
    for fn in order:
        reads[fn] = summaries[fn].reads(reads)
    while recursive:
        recursive = False
        for fn in order:
            found = summaries[fn].reads(reads)
            if found != reads[fn]:
                reads[fn] = found
                recursive = True
    return reads


def drop_unread_params(kernels: list[ll.Function], reads: dict[ll.Function, frozenset[int]]) -> dict[str, tuple[int, ...]]:
    """Removes from each of ``kernels`` (entry points: nothing in the module calls them) the
    arguments it does not read; entry symbol -> the positions it keeps, for those that lost some."""
    kept: dict[str, tuple[int, ...]] = {}
    for fn in kernels:
        keep = tuple(sorted(reads[fn]))
        if len(keep) == len(fn.args):
            continue
        _detach(fn, [arg for k, arg in enumerate(fn.args) if k not in reads[fn]])
        args = [fn.args[k] for k in keep]
        fn.ftype = ll.FunctionType(fn.ftype.return_type, [a.type for a in args])
        fn.type = fn.ftype.as_pointer(fn.type.addrspace)
        fn.args = tuple(args)
        kept[fn.name] = keep
    return kept


def _detach(fn: ll.Function, args: list[ll.Argument]) -> None:
    """Points what still names ``args`` in ``fn`` (dead code, which LLVM removes: a store into
    a local nobody reads, a conversion nobody uses) at a zero of the argument's type instead."""
    zero = {id(arg): ll.Constant(arg.type, None) for arg in args}
    for block in fn.blocks:
        for instruction in block.instructions:
            if isinstance(instruction, lli.PhiInstr):
                instruction.incomings = [(zero.get(id(v), v), b) for v, b in instruction.incomings]
                continue
            for operand in instruction.operands:
                if id(operand) in zero:
                    instruction.replace_usage(operand, zero[id(operand)])
            # what some instructions print from (GEP's pointer and indices, insert/extractvalue's)
            for name in ("pointer", "aggregate", "value"):
                if id(getattr(instruction, name, None)) in zero:
                    setattr(instruction, name, zero[id(getattr(instruction, name))])
            if isinstance(instruction, lli.GEPInstr):
                instruction.indices = [zero.get(id(i), i) for i in instruction.indices]


_FLOAT_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8}


def _type_bytes(arg: ll.Argument) -> tuple[int, int]:
    """(size, alignment) of kernel parameter ``arg``, as PTX declares it."""
    if "byval" in arg.attributes:  # a TMA descriptor's map, in the block itself
        return TENSOR_MAP_BYTES, int(arg.attributes.align or TENSOR_MAP_ALIGN)
    ty = arg.type
    if isinstance(ty, ll.IntType):
        size = max(1, ty.width // 8)
        return size, size
    if isinstance(ty, ll.PointerType):
        return 8, 8
    size = _FLOAT_BYTES[str(ty)]
    return size, size


def parameter_block_bytes(fn: ll.Function) -> int:
    """The size of the parameter block kernel ``fn`` declares (what the driver copies per
    launch: each parameter at its alignment)."""
    size = 0
    for arg in fn.args:
        elem, align = _type_bytes(arg)
        size = -(-size // align) * align + elem
    return size
