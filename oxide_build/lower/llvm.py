"""Typed IR → LLVM IR (llvmlite.ir), in the forms of one backend's ``Dialect`` (``dialect.py``:
LLVM's NVPTX backend, or NVVM IR for libNVVM).

Views are two values everywhere: a ``ptr addrspace(1)`` to global memory and an i64 length.
Locals live in entry-block allocas that LLVM's mem2reg turns into registers. A failed bounds
check calls ``__oxide_fail``, which records the first failure in the record that
``__oxide_error_ptr`` points to (read by the runtime; layout in ``oxide.abi.error_record``) and
ends the thread.
"""
from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from llvmlite import ir as ll

from oxide.abi import error_record
from oxide.abi.views import ViewKind
from oxide.errors import CompileError, SourceLocation
from oxide.lang.types import ScalarType, f32 as F32

from ..ir import nodes as ir
from oxide.abi.params import TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES

from ..ir.ops import BinaryOp
from ..ir.types import (
    I64 as IR_I64, THREAD_INDEX_DIM, ArrayType, StructType, TensorMapType, VectorType, ThreadIndexType, TupleType, Type, ViewType, VoidType,
    as_scalar, is_int, scalar_leaves,
)
from ..passes.shared_memory import STATIC_SHARED_LIMIT  # also checked per kernel, across calls, by the pass
from .. import cpu_abi
from ..cpu_abi import NoCpuForm, NoCpuFormError
from .dialect import NVPTX, NVPTX_DATA_LAYOUT, NVPTX_TRIPLE, Dialect
from .entry_params import drop_unread_params, parameter_block_bytes, read_params
from .index32 import index32_twins
from .fp8 import cast_fp8

if TYPE_CHECKING:
    from ..intrinsics.context import LoweredView

__all__ = ["LoweredProgram", "lower_program", "module_text", "NVPTX_TRIPLE", "NVPTX_DATA_LAYOUT"]

I1, I8, I32T, I64T = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
I16T = ll.IntType(16)


class BFloatType(ll.types._BaseFloatType):  # type: ignore[name-defined,misc]
    """LLVM's ``bfloat`` (llvmlite has no such type); constants print as ``0xR`` hex."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        import struct

        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
            return "0xR7FC0"  # NaN
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BFloatType._create_instance()
BFLOAT = BFloatType()


# llvmlite does not list `readonly` among argument attributes; LLVM accepts it there
ll.values.ArgumentAttributes._known = MappingProxyType({**ll.values.ArgumentAttributes._known, "readonly": False})

TENSOR_MAP_LL = ll.ArrayType(ll.IntType(8), TENSOR_MAP_BYTES)  # a CUtensorMap, as the kernel parameter holds it


class _TensorMapAttributes(ll.values.ArgumentAttributes):  # type: ignore[misc]
    """The attributes of a TMA descriptor kernel parameter: ``byval`` of the 128-byte map,
    aligned to 64. NVVM IR (LLVM 7) writes ``byval`` without its type, LLVM 22 with it."""

    def __init__(self, typed_byval: bool) -> None:
        super().__init__(["byval"])
        self.align = TENSOR_MAP_ALIGN
        self._typed_byval = typed_byval

    def _expand(self, name: str, typ: ll.Type) -> str:
        if name == "byval" and not self._typed_byval:
            return "byval"
        return str(super()._expand(name, typ))


def scalar_ll(ty: ScalarType, in_memory: bool = False) -> ll.Type:
    if isinstance(ty, StructType):  # a record: the element of a view of structs
        return ll.LiteralStructType([scalar_ll(t, in_memory) for _, t in ty.fields])  # type: ignore[arg-type]
    if isinstance(ty, VectorType):  # the element of an array of vectors (`ox.shared.array(n, f32x4)`)
        return ll.VectorType(scalar_ll(ty.elem, in_memory), ty.lanes)
    if ty.kind == "bool":
        return I8 if in_memory else I1
    if ty.kind == "float":
        if ty.name == "bf16":
            return BFLOAT
        return {16: ll.HalfType(), 32: ll.FloatType(), 64: ll.DoubleType()}[ty.bits]
    return ll.IntType(ty.bits)


def global_ptr(elem: ScalarType) -> ll.Type:
    """A pointer to global memory. Typed: libNVVM needs typed pointers, and NVPTX's LLVM reads
    them as opaque ones (see ``module_text``)."""
    return ll.PointerType(scalar_ll(elem, True), addrspace=1)


def module_text(module: ll.Module) -> str:
    """Prints ``module``, for both backends. Pointers print typed (``float addrspace(1)*``):
    libNVVM needs that, and LLVM ≥ 17 still parses it, reading every pointer as opaque."""
    return str(module)


def value_ll(ty: Type) -> ll.Type:
    if isinstance(ty, VectorType):
        return ll.VectorType(scalar_ll(ty.elem), ty.lanes)
    if isinstance(ty, ThreadIndexType):
        return I64T
    if isinstance(ty, VoidType):
        return ll.VoidType()
    if isinstance(ty, TupleType):
        return ll.LiteralStructType([value_ll(t) for t in ty.elems])
    if isinstance(ty, StructType):
        return ll.LiteralStructType([value_ll(t) for _, t in ty.fields])
    assert isinstance(ty, ScalarType)
    return scalar_ll(ty)


SWIZZLE_ALIGNMENT = 1024  # a swizzled shared array: 8 rows of 128 bytes, the swizzle's period
# NVPTX's; local arrays are allocas (generic); another block's shared array
# (ox.cluster.map_shared) is a generic address from mapa, which both backends read and write
ADDRESS_SPACES = {"global": 1, "shared": 3, "constant": 4, "local": 0, "cluster": 0}


def array_ptr(ty: ArrayType) -> ll.Type:
    """A pointer into an array of ``ty.space``."""
    return ll.PointerType(scalar_ll(ty.elem, True), addrspace=ADDRESS_SPACES[ty.space])


def _in_range(value: float, ty: ScalarType) -> float:
    """A float constant of type ``ty`` as the conversion to ``ty`` gives it: beyond f16's largest
    finite value (rounding included), C's and PTX's round-to-nearest conversion is an infinity
    (llvmlite cannot write a half constant past it)."""
    if ty.name == "f16" and math.isfinite(value) and abs(value) >= 65520.0:
        return math.copysign(math.inf, value)
    return value


def _is_half(ty: ll.Type) -> bool:
    """f16 or bf16, or a vector of them."""
    elem = ty.element if isinstance(ty, ll.VectorType) else ty
    return isinstance(elem, (ll.HalfType, BFloatType))


def _half_bits(ty: ll.Type) -> ll.Type:
    """``i16`` for LLVM's ``half`` and ``bfloat``, ``ty`` itself otherwise."""
    return I16T if isinstance(ty, (ll.HalfType, BFloatType)) else ty


def abi_params(params: list[ir.Param], kernel: bool, c_abi: bool = False, index32: bool = False) -> list[ll.Type]:
    """Parameter types; ``c_abi`` (externs and exports) uses generic pointers, as C++ does, so
    LTO sees matching prototypes and inlines across the language boundary. ``index32``: a
    kernel's index32 instance (index32.py), which reads a tensor's shape and strides as i32: the
    low halves of the same 8-byte slots (the runtime launches it only when they fit)."""
    out: list[ll.Type] = []
    for p in params:
        ptr = (lambda e: ll.PointerType(scalar_ll(e, True))) if c_abi else global_ptr
        if isinstance(p.ty, ViewType) and p.ty.kind == ViewKind.PTR:
            out.append(ptr(p.ty.elem))
        elif isinstance(p.ty, TensorMapType):
            # a kernel takes the map itself (byval, __grid_constant__), a function its generic
            # address; both then the elements of one box (oxide.abi.params)
            out += [ll.PointerType(TENSOR_MAP_LL) if kernel else ll.PointerType(ll.IntType(8)), I64T]
        elif isinstance(p.ty, ViewType) and p.ty.is_tensor:
            out += [ptr(p.ty.elem)] + [I32T if kernel and index32 else I64T] * (2 * p.ty.ndim)
        elif isinstance(p.ty, ViewType):
            out += [ptr(p.ty.elem), I64T]
        elif isinstance(p.ty, ArrayType):  # an array passed on to a device function
            out += [array_ptr(p.ty), I64T]
        elif isinstance(p.ty, ScalarType) and p.ty.kind == "bool" and kernel:
            out.append(I8)
        elif isinstance(p.ty, (StructType, VectorType)) and kernel:  # one parameter per scalar (oxide.abi.params)
            out += [I8 if leaf.kind == "bool" else value_ll(leaf) for _, leaf in scalar_leaves(p.ty)]
        else:
            out.append(value_ll(p.ty))
    return out


@dataclass
class _View:
    ptr: ll.Value
    length: ll.Value
    elem: ScalarType
    shape: list[ll.Value] | None = None  # tensors
    strides: list[ll.Value] | None = None
    read_only: bool = False  # a Slice/Tensor parameter: nothing writes it during the kernel
    # a register fragment of 16-bit elements: its elements are read and written as halves of
    # 32-bit words, so that LLVM keeps each pair packed in one register (the form mma and wgmma
    # read) instead of re-packing the halves where the instruction reads them
    packed: bool = False
    # an index32 kernel's tensor parameter: its shape then strides as the i32 parameters they are
    dims32: list[ll.Value] | None = None


class _VolatileLoad(ll.LoadInstr):  # type: ignore[misc]
    """``load volatile`` (llvmlite prints no ``volatile``)."""

    volatile = True  # an effect: its address is read even when its value is not (entry_params.py)

    def descr(self, buf: list[str]) -> None:
        text: list[str] = []
        super().descr(text)
        buf.append("".join(text).replace("load ", "load volatile ", 1))


class _VolatileStore(ll.StoreInstr):  # type: ignore[misc]
    """``store volatile``."""

    volatile = True

    def descr(self, buf: list[str]) -> None:
        text: list[str] = []
        super().descr(text)
        buf.append("".join(text).replace("store ", "store volatile ", 1))


@dataclass
class _Loop:
    cond_block: ll.Block
    step_block: ll.Block
    exit_block: ll.Block


def _has_swizzled_dynamic_shared(program: ir.Program) -> bool:
    """Whether a function of ``program`` declares a swizzled dynamic shared array
    (``ox.shared.dynamic(T, swizzle=...)``), whose start must keep the swizzle's period."""
    return any(isinstance(s, ir.ArrayDecl) and isinstance(s.ty, ArrayType) and s.ty.space == "shared"
               and s.ty.size is None and bool(s.ty.swizzle)
               for fn in program.functions for s in ir.statements(fn.body))


class ModuleLowering:
    def __init__(self, program: ir.Program, module_name: str, fast_math: bool = False, lineinfo: bool = False,
                 libnvvm: bool = False, dialect: Dialect = NVPTX, fma: bool = True) -> None:
        self.program = program
        self.fma = fma  # mark + - * `contract` (CompileOptions.fma, passes/fma.py)
        # libNVVM compiles this module (too): the intrinsics it lacks (llvm.nvvm.mma/ldmatrix/
        # cp.async) lower to inline PTX instead
        self.libnvvm = libnvvm or dialect.is_nvvm
        self.dialect = dialect
        self.fast_math = fast_math
        self.lineinfo = lineinfo
        self._di_unit: ll.DIValue | None = None
        self._di_files: dict[str, ll.DIValue] = {}
        self._dynamic_smem: ll.GlobalVariable | None = None
        self.c_abi: set[str] = set()  # callees that take generic pointers
        self.extern_params: dict[str, list[ir.Param]] = {}
        self.half_shims: set[str] = set()  # externs called through their shim (16-bit floats as i16)
        self._shared_count = 0
        self.module = ll.Module(name=module_name)
        self.module.triple = dialect.triple
        self.module.data_layout = dialect.data_layout
        self.functions: dict[str, ll.Function] = {}
        # kernel -> the LLVM arguments of its TMA descriptors (``grid_constant``)
        self.grid_constants: dict[ll.Function, list[ll.Argument]] = {}
        self._fail: ll.Function | None = None
        self._report: ll.Function | None = None
        self._error_globals: tuple[ll.GlobalVariable, ll.GlobalVariable] | None = None
        self._intrinsics: dict[str, ll.Function] = {}
        self.arrays: dict[str, ll.GlobalVariable] = {}  # module-level constant/global memory
        # symbol -> its index32 instance's (index32.py): what an index32 function calls instead
        self.index32_twins = index32_twins(program)
        self._pad_static_shared = _has_swizzled_dynamic_shared(program)
        # kernel entry symbol -> the parameter positions it keeps, for those whose code does not
        # read every one (entry_params.py); the bytes of each entry's parameter block
        self.kept_params: dict[str, tuple[int, ...]] = {}
        self.param_bytes: dict[str, int] = {}
        # function -> its value at every parameter position of abi_params (declare)
        self.entry_args: dict[ll.Function, list[ll.Value]] = {}
        # host code for the CPU device (dialect.cpu_dialect): its static shared arrays are offsets
        # in each block's shared segment (the module's arrays side by side, then the dynamic one),
        # and each barrier call site gets an id its synccheck messages name
        self.cpu = dialect.is_cpu
        self.cpu_shared_bytes = 0
        self.cpu_refused: dict[str, CompileError] = {}  # symbol -> why the CPU device cannot run it
        # the externs whose C++ the host compiled (called as on the GPU), and why the others'
        # cannot run (symbol -> NoCpuForm's what and hint): backends/cpu/cxx.py
        self.cpu_cxx_callable: frozenset[str] = frozenset()
        self.cpu_cxx_refused: dict[str, tuple[str, str]] = {}
        self.sync_sites: list[tuple[str, int, int]] = []  # id -> (file, line, col)
        self._sync_site_ids: dict[tuple[str, int, int], int] = {}

    # ---- host code for the CPU device ------------------------------------------------------

    def cpu_context(self) -> ll.GlobalVariable:
        """The scheduler's thread context (``cpu_abi``), external: the JIT resolves it."""
        g = self.module.globals.get(cpu_abi.CONTEXT_SYMBOL)
        if g is None:
            g = ll.GlobalVariable(self.module, cpu_abi.context_type(), cpu_abi.CONTEXT_SYMBOL)
            g.linkage = "external"
        assert isinstance(g, ll.GlobalVariable)
        return g

    def cpu_runtime(self, name: str) -> ll.Function:
        """The declaration of one of the CPU scheduler's functions (``cpu_abi.RUNTIME_FUNCTIONS``)."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ll.Function(self.module, cpu_abi.runtime_function_type(name), name)
            if name in ("oxide_cpu_exit_thread", "oxide_cpu_trap"):
                fn.attributes.add("noreturn")
        assert isinstance(fn, ll.Function)
        return fn

    def cpu_stub(self, llfn: ll.Function) -> None:
        """``llfn``'s body replaced by a trap (a function the CPU device refuses; never run)."""
        llfn.blocks.clear()
        b = ll.IRBuilder(llfn.append_basic_block("refused"))
        b.call(self.cpu_runtime("oxide_cpu_trap"), [])
        b.unreachable()

    def sync_site(self, file: str, line: int, col: int) -> int:
        """The id of the barrier or warp operation at ``file:line:col`` (the same source place
        gets the same id in every instance of its function)."""
        key = (file, line, col)
        if key not in self._sync_site_ids:
            self._sync_site_ids[key] = len(self.sync_sites)
            self.sync_sites.append(key)
        return self._sync_site_ids[key]

    def cpu_static_shared(self, ty: ArrayType) -> int:
        """The offset of a new static shared array in each block's shared segment."""
        assert ty.size is not None
        align = SWIZZLE_ALIGNMENT if ty.swizzle else 16
        offset = -(-self.cpu_shared_bytes // align) * align
        self.cpu_shared_bytes = offset + ty.size * ty.elem.itemsize
        return offset

    def declare(self, fn: ir.Function, symbol: str, index32: bool) -> ll.Function:
        types = abi_params(fn.params, fn.is_kernel, c_abi=fn.export, index32=index32)
        fnty = ll.FunctionType(value_ll(fn.ret), types)
        llfn = ll.Function(self.module, fnty, symbol)
        if not fn.is_kernel and (not fn.export or index32):  # C++ calls the function as written
            llfn.linkage = "internal"
        self.entry_args[llfn] = list(llfn.args)
        if fn.is_kernel:
            # A read-only view is never written during the kernel: the runtime refuses a
            # launch where it overlaps a writable view. So its loads may use the read-only
            # data cache (ld.global.nc), as `const T* __restrict__` does in CUDA C++.
            position = 0
            for p in fn.params:
                arg = self.entry_args[llfn][position] if position < len(types) else None
                if isinstance(arg, ll.Argument):
                    if isinstance(p.ty, ViewType) and not p.ty.writable:
                        arg.add_attribute("noalias")
                        arg.add_attribute("readonly")
                    if isinstance(p.ty, TensorMapType):
                        arg.attributes = _TensorMapAttributes(typed_byval=not self.dialect.is_nvvm)
                        self.grid_constants.setdefault(llfn, []).append(arg)
                position += len(abi_params([p], True, index32=index32))
        self.functions[symbol] = llfn
        return llfn

    def lower(self) -> ll.Module:
        # (function, its LLVM function, index32): each function as written, then the index32
        # instances (index32.py) of those that get one
        instances = [(fn, self.declare(fn, fn.symbol, False), False) for fn in self.program.functions]
        by_symbol = {fn.symbol: fn for fn in self.program.functions}
        instances += [(by_symbol[symbol], self.declare(by_symbol[symbol], twin, True), True)
                      for symbol, twin in self.index32_twins.items()]
        for decl in self.program.arrays:
            self.module_array(decl)
        for ext in self.program.externs:
            ret, params = value_ll(ext.ret), abi_params(ext.params, kernel=False, c_abi=True)
            if ext.passes_halves:  # through the shim that takes the bits (ir.ExternFunction.passes_halves)
                ret, params = _half_bits(ret), [_half_bits(t) for t in params]
                self.half_shims.add(ext.symbol)
            fnty = ll.FunctionType(ret, params)
            self.c_abi.add(ext.symbol)
            self.extern_params[ext.symbol] = ext.params
            if self.cpu and ext.symbol not in self.cpu_cxx_callable:
                continue  # never called: a call of it is refused (FunctionLowering.call)
            self.functions[ext.symbol] = ll.Function(self.module, fnty, ext.call_symbol)
        kernels = []
        for fn, llfn, index32 in instances:
            lowering = FunctionLowering(self, fn, llfn, index32)
            try:
                try:
                    lowering.lower()
                except NoCpuForm as exc:
                    line, col = lowering.position
                    raise NoCpuFormError(
                        f"{fn.python_name}() uses {exc.what}, which has no CPU form: the CPU device cannot run it",
                        SourceLocation(fn.file, line, col),
                        exc.hint or "run this kernel on a GPU, or keep this construct out of the kernels the CPU "
                        "device runs") from None
            except NoCpuFormError as refusal:
                if not self.cpu:
                    raise
                # the CPU device: this function only is refused (cpu_refused; the kernels that
                # reach it are refused at launch), its body a trap, the others lowered
                self.cpu_refused[fn.symbol] = refusal
                self.cpu_stub(llfn)
            except CompileError:
                raise
            except Exception as exc:
                # the frontend only builds IR this lowering accepts: a failure here is a compiler
                # bug, reported at the statement it met (not as a traceback from our internals)
                line, col = lowering.position
                raise CompileError(
                    f"internal compiler error while lowering {fn.python_name}(): {type(exc).__name__}: {exc}",
                    SourceLocation(fn.file, line, col),
                    "please report this with the function's source; rewriting the statement may avoid it",
                ) from exc
            if fn.is_kernel:
                kernels.append(llfn)
        # each kernel entry declares only the parameters its code reads (entry_params.py)
        self.kept_params = drop_unread_params(kernels, read_params(self.module.functions))
        self.param_bytes = {k.name: parameter_block_bytes(k) for k in kernels}
        if kernels and not self.cpu:
            annotations = self.module.add_named_metadata("nvvm.annotations")
            for k in kernels:
                annotations.add(self.module.add_metadata([k, ll.MetaDataString(self.module, "kernel"), ll.Constant(I32T, 1)]))
            for fn, llfn, _ in instances:
                if fn.is_kernel and fn.launch_bounds:
                    annotations.add(self.module.add_metadata([llfn, ll.MetaDataString(self.module, "maxntidx"), ll.Constant(I32T, fn.launch_bounds)]))
                if fn.is_kernel and fn.max_registers:
                    annotations.add(self.module.add_metadata([llfn, ll.MetaDataString(self.module, "maxnreg"), ll.Constant(I32T, fn.max_registers)]))
                maps = [k for k, arg in enumerate(llfn.args) if arg in self.grid_constants.get(llfn, ())]
                if maps:
                    # __grid_constant__: the kernel reads the map where the driver put it
                    # (cvta.param), rather than from a local copy TMA cannot use; both
                    # libNVVM and LLVM 22 read this form (1-based argument positions)
                    positions = self.module.add_metadata([ll.Constant(I32T, k + 1) for k in maps])
                    annotations.add(self.module.add_metadata([llfn, ll.MetaDataString(self.module, "grid_constant"), positions]))
        if self.dialect.nvvm_ir_version is not None:
            self.finish_nvvm(self.dialect.nvvm_ir_version)
        if self.cpu:
            offset = self.module.globals.get("__oxide_cpu_dynamic_shared_offset")
            self.cpu_shared_bytes = -(-self.cpu_shared_bytes // SWIZZLE_ALIGNMENT) * SWIZZLE_ALIGNMENT
            if isinstance(offset, ll.GlobalVariable):
                offset.initializer = ll.Constant(I64T, self.cpu_shared_bytes)
        return self.module

    def finish_nvvm(self, version: tuple[int, int, int, int]) -> None:
        """What libNVVM needs besides the code: every kernel, exported function and externally
        visible global (the runtime's ``__oxide_error_ptr``, ``__oxide_module_id``) in
        ``@llvm.used`` (with ``-gen-lto`` the LTO link otherwise drops them, or folds the loads
        of a global to its initializer), and the NVVM IR version the module follows."""
        i8p = ll.PointerType(I8)
        entries: list[ll.Constant] = []
        values = list(self.module.global_values)
        for fn in values:
            if isinstance(fn, ll.Function) and not fn.is_declaration and fn.linkage not in ("internal", "private"):
                entries.append(fn.bitcast(i8p))
        for g in values:
            if (isinstance(g, ll.GlobalVariable) and g.initializer is not None and not g.name.startswith("llvm.")
                    and g.linkage not in ("internal", "private", "external", "extern_weak")):
                cast = "addrspacecast" if g.type.addrspace != 0 else "bitcast"
                entries.append(ll.FormattedConstant(i8p, f"{cast} ({g.type} {g.get_reference()} to {i8p})"))
        if entries:
            used = ll.GlobalVariable(self.module, ll.ArrayType(i8p, len(entries)), "llvm.used")
            used.linkage = "appending"
            used.section = "llvm.metadata"
            used.initializer = ll.Constant(ll.ArrayType(i8p, len(entries)), entries)
        self.module.add_named_metadata("nvvmir.version", [ll.Constant(I32T, v) for v in version])

    def subprogram(self, fn: ir.Function, llfn: ll.Function) -> ll.DIValue | None:
        """Debug info for line tables only (``.loc`` in PTX), so profilers show Python lines."""
        if not self.lineinfo:
            return None
        m = self.module
        if self._di_unit is None:
            first = m.add_debug_info("DIFile", _di_file_fields(fn.file))
            self._di_unit = m.add_debug_info("DICompileUnit", {
                "language": ll.DIToken("DW_LANG_Python"), "file": first, "producer": "oxide",
                "runtimeVersion": 0, "isOptimized": True, "emissionKind": ll.DIToken("DebugDirectivesOnly"),
            }, is_distinct=True)
            m.add_named_metadata("llvm.dbg.cu", self._di_unit)
            # behaviour 1 (error on mismatch) for the debug info version, as NVRTC's LTO-IR has it:
            # nvJitLink refuses to link a flag whose behaviours differ between modules
            for behaviour, key, value in ((1, "Debug Info Version", 3), (2, "Dwarf Version", 4)):
                m.add_named_metadata("llvm.module.flags", m.add_metadata([ll.Constant(I32T, behaviour), key, ll.Constant(I32T, value)]))
        if fn.file not in self._di_files:
            self._di_files[fn.file] = m.add_debug_info("DIFile", _di_file_fields(fn.file))
        difile = self._di_files[fn.file]
        sp = m.add_debug_info("DISubprogram", {
            # the instance's own name: an index32 twin with the same fields would get the same
            # (uniqued) subprogram, which the verifier refuses ("attached to more than one function")
            "name": fn.python_name, "linkageName": llfn.name, "file": difile, "line": fn.line,
            "type": m.add_debug_info("DISubroutineType", {"types": m.add_metadata([])}),
            "scopeLine": fn.line, "unit": self._di_unit,
            **({"isDefinition": True, "isOptimized": True} if self.dialect.is_nvvm  # LLVM 7 spells the flags as fields
               else {"spFlags": ll.DIToken("DISPFlagDefinition | DISPFlagOptimized")}),
        }, is_distinct=True)
        llfn.set_metadata("dbg", sp)
        return sp

    def module_array(self, decl: ir.ModuleArrayDecl) -> None:
        """A module-level array: an externally visible global of its address space (the host
        finds it by name), a ``global`` rather than a ``constant`` even in constant memory, so
        that nothing folds loads to the initial values the host may overwrite."""
        ty = decl.ty
        assert isinstance(ty, ArrayType) and ty.size is not None
        elem = scalar_ll(ty.elem, True)
        arr = ll.ArrayType(elem, ty.size)
        g = ll.GlobalVariable(self.module, arr, decl.symbol, addrspace=ADDRESS_SPACES[ty.space])
        if decl.values is None:
            g.initializer = ll.Constant(arr, None)
        else:
            g.initializer = ll.Constant(arr, [ll.Constant(elem, float(v) if ty.elem.kind == "float" else int(v))
                                               for v in decl.values])
        g.align = max(16, ty.elem.itemsize)
        self.arrays[decl.symbol] = g

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        if self.cpu and (name.startswith(("llvm.nvvm.", "__nv_")) or name == "vprintf"):
            raise NoCpuForm(name)
        if name not in self._intrinsics:
            self._intrinsics[name] = ll.Function(self.module, ll.FunctionType(ret, args), name)
        return self._intrinsics[name]

    def shared_array(self, ty: ArrayType, hint: str) -> ll.Value:
        elem = scalar_ll(ty.elem, True)
        if ty.size is None:
            if self._dynamic_smem is None:
                arr = ll.ArrayType(ll.IntType(8), 0)
                self._dynamic_smem = ll.GlobalVariable(self.module, arr, "__oxide_dynamic_shared", addrspace=3)
                self._dynamic_smem.linkage = "external"
                self._dynamic_smem.align = 16
            if ty.swizzle:  # a swizzled tile: the hardware swizzles address bits 4-9
                self._dynamic_smem.align = SWIZZLE_ALIGNMENT
            return self._dynamic_smem
        self._shared_count += 1
        count = ty.size
        if self._pad_static_shared:
            # The driver places dynamic shared memory right after a block's static shared
            # memory, 16-byte aligned whatever the alignment its declaration asks for (CCCL and
            # others measured this): a swizzled dynamic array after 64 bytes of mbarriers starts
            # 64 bytes off its 1024-byte period, and TMA faults (misaligned address) or wgmma
            # reads the tile unswizzled. In a module with one, every static shared array is
            # therefore a whole number of 1024-byte periods, 1024-aligned, so the static
            # segment, and the dynamic one after it, keep the period.
            step = SWIZZLE_ALIGNMENT // math.gcd(SWIZZLE_ALIGNMENT, ty.elem.itemsize)
            count = -(-ty.size // step) * step
        arr = ll.ArrayType(elem, count)
        g = ll.GlobalVariable(self.module, arr, f"__oxide_shared.{hint}.{self._shared_count}", addrspace=3)
        g.linkage = "internal"
        g.initializer = ll.Constant(arr, ll.Undefined)
        g.align = SWIZZLE_ALIGNMENT if ty.swizzle or self._pad_static_shared else 16
        return g

    def fail_function(self, ends_thread: bool = True) -> ll.Function:
        """``__oxide_fail(site, index, length)``: record the first failure, then end the thread.
        ``ends_thread`` False: ``__oxide_report``, which records and returns, for a check whose
        thread must go on (a TMA copy's, whose barrier others wait on: ``intrinsics/tma.py``).

        The record lives in host-mapped memory whose device address the runtime stores in
        ``__oxide_error_ptr`` when it loads the module, together with ``__oxide_module_id``;
        so the host sees a failure without synchronising. Layout, i64 each: flag (0 → 1 by
        the first failing thread, 2 once the other fields are written), module id, site id,
        index, length. With no record set up,
        the thread traps rather than fail silently.
        """
        if ends_thread and self._fail is not None:
            return self._fail
        if not ends_thread and self._report is not None:
            return self._report
        rec_ptr_ty = ll.PointerType(I64T)  # generic address of the host-mapped record
        if self._error_globals is None:
            err_ptr = ll.GlobalVariable(self.module, rec_ptr_ty, error_record.ERROR_PTR_SYMBOL, addrspace=1)
            err_ptr.initializer = ll.Constant(rec_ptr_ty, None)
            err_ptr.align = 8
            mod_id = ll.GlobalVariable(self.module, I64T, error_record.MODULE_ID_SYMBOL, addrspace=1)
            mod_id.initializer = ll.Constant(I64T, 0)
            mod_id.align = 8
            self._error_globals = (err_ptr, mod_id)
        err_ptr, mod_id = self._error_globals
        name = error_record.FAIL_FUNCTION if ends_thread else "__oxide_report"
        fn = ll.Function(self.module, ll.FunctionType(ll.VoidType(), [I64T, I64T, I64T]), name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")  # a call costs the kernel ~12 registers of ABI
        fn.attributes.add("cold")
        if ends_thread:
            fn.attributes.add("noreturn")
        entry = fn.append_basic_block("entry")
        no_record = fn.append_basic_block("no_record")
        claim = fn.append_basic_block("claim")
        record = fn.append_basic_block("record")
        done = fn.append_basic_block("done")
        b = ll.IRBuilder(entry)
        rec = b.load(err_ptr, align=8)
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(rec, I64T), ll.Constant(I64T, 0)), no_record, claim)
        b.position_at_end(no_record)
        if self.cpu:
            b.call(self.cpu_runtime("oxide_cpu_trap"), [])
        else:
            b.asm(ll.FunctionType(ll.VoidType(), []), "trap;", "", [], side_effect=True)
        b.unreachable()
        b.position_at_end(claim)
        pair = b.cmpxchg(rec, ll.Constant(I64T, 0), ll.Constant(I64T, error_record.FLAG_CLAIMED), "monotonic", "monotonic")
        old = b.extract_value(pair, 0)
        b.cbranch(b.icmp_unsigned("==", old, ll.Constant(I64T, 0)), record, done)
        b.position_at_end(record)
        values = [b.load(mod_id, align=8), *fn.args]
        for i, value in enumerate(values, start=error_record.MODULE_ID):  # then site id, index, length
            b.store(value, b.gep(rec, [ll.Constant(I32T, i)]), align=8)

        def fence() -> None:
            if self.cpu:
                b.fence("seq_cst")
            else:
                b.call(self.intrinsic("llvm.nvvm.membar.sys", ll.VoidType(), []), [])

        fence()
        published = b.store(ll.Constant(I64T, error_record.FLAG_PUBLISHED), rec, align=8)
        published.volatile = True
        fence()
        b.branch(done)
        b.position_at_end(done)
        if not ends_thread:
            b.ret_void()
            self._report = fn
            return fn
        if self.cpu:  # the scheduler ends the thread (backends/cpu/_fibers.c)
            b.call(self.cpu_runtime("oxide_cpu_exit_thread"), [])
        else:
            b.asm(ll.FunctionType(ll.VoidType(), []), "exit;", "", [], side_effect=True)
        b.unreachable()
        self._fail = fn
        return fn


class FunctionLowering:
    def __init__(self, parent: ModuleLowering, fn: ir.Function, llfn: ll.Function, index32: bool = False) -> None:
        self.parent = parent
        self.fn = fn
        self.llfn = llfn
        # the index32 instance (index32.py): tensor offsets computed modulo 2**32, which the
        # runtime launches only when every tensor argument's span, extents and strides fit i32
        self.index32 = index32
        self.entry = llfn.append_basic_block("entry")
        self.b = ll.IRBuilder(self.entry)
        self.slots: dict[str, ll.Value] = {}
        self.views: dict[str, _View] = {}
        # TMA descriptors: the map's generic address (i8*) and the elements of one box (i64)
        self.tensor_maps: dict[str, tuple[ll.Value, ll.Value]] = {}
        # locals that hold a view (``data = a if c else b``, ``row = x[k:]``): pointer and length
        self.view_slots: dict[str, tuple[ll.Value, ll.Value]] = {}
        self.loops: list[_Loop] = []
        self.block_dims: dict[str, ll.Value] | None = None  # ntid.x/y/z, read first (lower())
        self.di_scope = parent.subprogram(fn, llfn)
        self.position = (fn.line, 1)  # the statement being lowered, for internal errors
        self.shared_bytes = 0  # of the static shared arrays declared so far
        self.locate(fn.line, 1)

    # ---- what the lowering of an intrinsic asks of the module (intrinsics/context.py) ------

    @property
    def module(self) -> ll.Module:
        return self.parent.module

    @property
    def libnvvm(self) -> bool:
        return self.parent.libnvvm

    @property
    def nvvm_dialect(self) -> bool:
        return self.parent.dialect.is_nvvm

    @property
    def fast_math(self) -> bool:
        return self.parent.fast_math

    @property
    def cpu(self) -> bool:
        return self.parent.cpu

    def cpu_runtime(self, name: str) -> ll.Function:
        return self.parent.cpu_runtime(name)

    def sync_site(self, loc: ir.Loc) -> ll.Value:
        return ll.Constant(I32T, self.parent.sync_site(self.fn.file, loc.line, loc.col))

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        return self.parent.intrinsic(name, ret, args)

    def fail_function(self, ends_thread: bool = True) -> ll.Function:
        return self.parent.fail_function(ends_thread)

    def locate(self, line: int, col: int) -> None:
        self.position = (line, col)
        if self.di_scope is not None:
            self.b.debug_metadata = self.parent.module.add_debug_info(
                "DILocation", {"line": line, "column": col, "scope": self.di_scope})

    def lower(self) -> None:
        # block.dim first: ptxas then keeps it in a uniform register (ULDC) and reads block.idx
        # with S2R, as for nvcc's code; read the other way round it picks S2UR + a per-thread
        # LDC (measured: the 5-point stencil runs 2% slower). Unused reads are removed by LLVM.
        self.block_dims = {axis: self.sreg(f"ntid.{axis}") for axis in "xyz"}
        args = iter(self.parent.entry_args[self.llfn])
        for p in self.fn.params:
            if isinstance(p.ty, TensorMapType):
                address, box = next(args), next(args)
                address.name, box.name = f"{p.name}.map", f"{p.name}.box"
                if self.fn.is_kernel:
                    address = self.b.bitcast(address, ll.PointerType(I8))
                self.tensor_maps[p.name] = (address, box)
            elif isinstance(p.ty, ViewType) and p.ty.is_tensor:
                ptr = next(args)
                ptr.name = f"{p.name}.ptr"
                if self.fn.export:
                    ptr = self.b.addrspacecast(ptr, global_ptr(p.ty.elem))
                shape: list[ll.Value] = [next(args) for _ in range(p.ty.ndim)]
                strides: list[ll.Value] = [next(args) for _ in range(p.ty.ndim)]
                for k, (d, st) in enumerate(zip(shape, strides)):
                    d.name, st.name = f"{p.name}.shape{k}", f"{p.name}.stride{k}"
                dims32 = None
                if self.index32 and self.fn.is_kernel:  # i32 parameters (abi_params), exact as i64
                    # the runtime launches this instance only on tensors whose last axis is
                    # contiguous or of one element (index32.h): its stride is 1, a constant, so a
                    # loop along a row steps its address by a constant
                    strides[-1] = ll.Constant(I32T, 1)
                    dims32 = shape + strides
                    shape, strides = [self.b.sext(d, I64T) for d in shape], [self.b.sext(d, I64T) for d in strides[:-1]]
                    strides.append(ll.Constant(I64T, 1))
                self.views[p.name] = _View(ptr, shape[0], p.ty.elem, shape, strides, read_only=not p.ty.writable,
                                           dims32=dims32)
            elif isinstance(p.ty, ViewType):
                ptr, length = next(args), next(args)
                ptr.name, length.name = f"{p.name}.ptr", f"{p.name}.len"
                if self.fn.export:  # C callers pass generic pointers to global memory
                    ptr = self.b.addrspacecast(ptr, global_ptr(p.ty.elem))
                self.views[p.name] = _View(ptr, length, p.ty.elem, read_only=not p.ty.writable)
            elif isinstance(p.ty, ArrayType):
                ptr, length = next(args), next(args)
                ptr.name, length.name = f"{p.name}.ptr", f"{p.name}.len"
                if p.ty.size is not None:  # a whole array of a known shape
                    length = ll.Constant(I64T, p.ty.size)
                self.views[p.name] = _View(ptr, length, p.ty.elem)
            elif self.fn.is_kernel and isinstance(p.ty, (StructType, VectorType)):
                self.slot(p.name, p.ty)
                self.b.store(self.assemble_param(p.ty, args, p.name), self.slots[p.name])
            else:
                value = next(args)
                value.name = p.name
                if self.fn.is_kernel and isinstance(p.ty, ScalarType) and p.ty.kind == "bool":
                    value = self.b.icmp_unsigned("!=", value, ll.Constant(I8, 0))
                self.slot(p.name, p.ty)
                self.b.store(value, self.slots[p.name])
        for name, ty in self.fn.locals.items():
            if name not in self.slots and not isinstance(ty, (ViewType, ArrayType, TensorMapType)):
                self.slot(name, ty)
                # a local read on a path that never assigned it is 0, not undef (which would let
                # LLVM pick any value, also past a bounds check)
                self.b.store(ll.Constant(value_ll(ty), None), self.slots[name])
        body = self.llfn.append_basic_block("body")
        self.b.branch(body)
        self.b.position_at_end(body)
        self.stmts(self.fn.body)
        if not self.b.block.is_terminated:
            if isinstance(self.fn.ret, VoidType):
                self.b.ret_void()
            else:
                self.b.unreachable()  # the frontend guarantees a return on value paths; see verifier

    def assemble_param(self, ty: Type, args: Iterator[ll.Argument], name: str) -> ll.Value:
        """A struct or vector kernel parameter, from the scalar parameters it is passed as."""
        if isinstance(ty, ScalarType):
            arg = next(args)
            arg.name = name
            return self.b.icmp_unsigned("!=", arg, ll.Constant(I8, 0)) if ty.kind == "bool" else arg
        value: ll.Value = ll.Constant(value_ll(ty), ll.Undefined)
        if isinstance(ty, VectorType):
            for k in range(ty.lanes):
                value = self.b.insert_element(value, self.assemble_param(ty.elem, args, f"{name}.{k}"), ll.Constant(I32T, k))
            return value
        assert isinstance(ty, StructType)
        for k, (field, field_ty) in enumerate(ty.fields):
            value = self.b.insert_value(value, self.assemble_param(field_ty, args, f"{name}.{field}"), k)
        return value

    def elem_type(self, elem: ScalarType) -> ll.Type:
        return scalar_ll(elem, True)

    def declare_array(self, s: ir.ArrayDecl) -> None:
        ty = s.ty
        assert isinstance(ty, ArrayType)
        elem = scalar_ll(ty.elem, True)
        zero = ll.Constant(ll.IntType(32), 0)
        if ty.space == "shared" and ty.size is not None:
            self.shared_bytes += ty.size * ty.elem.itemsize
            if self.shared_bytes > STATIC_SHARED_LIMIT:
                raise CompileError(
                    f"the shared arrays of {self.fn.python_name}() take {self.shared_bytes} bytes with {s.name!r}; "
                    f"static shared memory holds {STATIC_SHARED_LIMIT} bytes (48 KiB) per block",
                    SourceLocation(self.fn.file, s.loc.line, s.loc.col),
                    "use smaller tiles, or ox.shared.dynamic(...) with the size given at launch")
        # the array lives for the whole call, and a declaration in a loop or a static_range
        # body is one array (lowered once, used from every copy of the body): its pointer is
        # made in the entry block, which dominates every use
        if ty.space == "shared" and self.parent.cpu:
            # a block's shared segment (the scheduler's context points at the running block's):
            # the static arrays at their offsets, the dynamic one after all of the module's
            offset = self.parent.cpu_static_shared(ty) if ty.size is not None else -1
            with self.b.goto_block(self.entry):
                base = self.cpu_context_field(cpu_abi.SHARED_FIELD, ll.PointerType(I8), invariant=True)
                if offset < 0:
                    at: ll.Value = self.b.gep(base, [self.cpu_dynamic_shared_offset()])
                else:
                    at = self.b.gep(base, [ll.Constant(I64T, offset)])
                ptr = self.b.addrspacecast(self.b.bitcast(at, ll.PointerType(elem)), ll.PointerType(elem, 3))
            length: ll.Value = ll.Constant(I64T, (1 << 62) if ty.size is None else ty.size)
        elif ty.space == "shared":
            g = self.parent.shared_array(ty, f"{self.fn.symbol}.{s.name}")
            with self.b.goto_block(self.entry):
                if ty.size is None:
                    ptr = self.b.bitcast(g, ll.PointerType(elem, 3))
                    length = ll.Constant(I64T, (1 << 62))
                else:
                    ptr = self.b.gep(g, [zero, zero], inbounds=True)
                    length = ll.Constant(I64T, ty.size)
        else:
            assert ty.size is not None
            with self.b.goto_block(self.entry):
                arr = self.b.alloca(ll.ArrayType(elem, ty.size), name=s.name)
                arr.align = 16
                ptr = self.b.gep(arr, [zero, zero], inbounds=True)
            length = ll.Constant(I64T, ty.size)
        packed = ty.space == "local" and ty.fragment is not None and ty.elem.bits == 16 and ty.size is not None \
            and ty.size % 2 == 0
        self.views[s.name] = _View(ptr, length, ty.elem, packed=packed)

    def slot(self, name: str, ty: Type) -> None:
        with self.b.goto_block(self.entry):
            self.slots[name] = self.b.alloca(value_ll(ty), name=name)

    # ---- statements ---------------------------------------------------------------------

    def stmts(self, stmts: list[ir.Stmt]) -> None:
        for s in stmts:
            if self.b.block.is_terminated:
                return  # code after return/break/continue is unreachable
            self.stmt(s)

    def stmt(self, s: ir.Stmt) -> None:
        b = self.b
        self.locate(s.loc.line, s.loc.col)
        if isinstance(s, ir.Assign):
            if isinstance(s.value.ty, (ViewType, ArrayType)):
                self.assign_view(s.name, s.value)
                return
            b.store(self.expr(s.value), self.slots[s.name])
        elif isinstance(s, ir.Store):
            view = self.view(s.view)
            index = self.index(s.index)
            value = self.expr(s.value)
            if view.elem.kind == "bool":
                value = b.zext(value, I8)
            if s.check_site is not None:
                self.bounds_check(index, view.length, s.check_site)
            if view.packed:
                self.store_half(view, index, value)
                return
            b.store(value, self.element_address(view, index), align=_alignment(view.elem))
        elif isinstance(s, ir.If) and not s.then:
            # one branch past the body when the test holds, the body the fall-through: the
            # canonical form of an `if` without `else` (passes/canonicalize.py)
            body_bb = self.llfn.append_basic_block("then")
            merge = self.llfn.append_basic_block("endif")
            b.cbranch(self.expr(s.cond), merge, body_bb)
            b.position_at_end(body_bb)
            self.stmts(s.orelse)
            if not b.block.is_terminated:
                b.branch(merge)
            b.position_at_end(merge)
        elif isinstance(s, ir.If):
            then_bb = self.llfn.append_basic_block("then")
            else_bb = self.llfn.append_basic_block("else") if s.orelse else None
            merge = self.llfn.append_basic_block("endif")
            branch = b.cbranch(self.expr(s.cond), then_bb, else_bb or merge)
            if s.orelse_fails:
                self.branch_weights(branch, [1 << 20, 1])
            b.position_at_end(then_bb)
            self.stmts(s.then)
            if not b.block.is_terminated and (s.launch_versioned or s.check_versioned) and not s.orelse_fails \
                    and not self.parent.dialect.is_nvvm:  # LLVM 7 (libNVVM) has no llvm.sideeffect
                # the fast copy ends in an instruction the checked copy has not: LLVM's SimplifyCFG
                # would else sink the instructions both end with into the code after them, and
                # the fast copy's last loads would sit behind a branch, apart from those before
                b.call(self.intrinsic("llvm.sideeffect", ll.VoidType(), []), [])
            if not b.block.is_terminated:
                b.branch(merge)
            if else_bb is not None:
                b.position_at_end(else_bb)
                self.stmts(s.orelse)
                if not b.block.is_terminated and s.orelse_fails:
                    self.trap()  # never reached: a check of the branch failed and ended the thread
                elif not b.block.is_terminated:
                    b.branch(merge)
            b.position_at_end(merge)
        elif isinstance(s, ir.While):
            cond_bb = self.llfn.append_basic_block("loop.cond")
            body_bb = self.llfn.append_basic_block("loop.body")
            step_bb = self.llfn.append_basic_block("loop.step")
            exit_bb = self.llfn.append_basic_block("loop.exit")
            b.branch(cond_bb)
            b.position_at_end(cond_bb)
            b.cbranch(self.expr(s.cond), body_bb, exit_bb)
            b.position_at_end(body_bb)
            self.loops.append(_Loop(cond_bb, step_bb, exit_bb))
            self.stmts(s.body)
            self.loops.pop()
            if not b.block.is_terminated:
                b.branch(step_bb)
            b.position_at_end(step_bb)
            self.stmts(s.step)
            backedge = b.branch(cond_bb)
            if s.unroll is not None:
                backedge.set_metadata("llvm.loop", self.loop_metadata(s.unroll))
            b.position_at_end(exit_bb)
        elif isinstance(s, ir.Return):
            if s.value is None:
                b.ret_void()
            else:
                value = self.expr(s.value)
                b.ret(value)
        elif isinstance(s, ir.ExprStmt):
            self.expr(s.value)
        elif isinstance(s, ir.ArrayDecl):
            self.declare_array(s)
        elif isinstance(s, ir.Check):
            cond = self.expr(s.cond)
            fail_bb = self.llfn.append_basic_block("assert.fail")
            cont_bb = self.llfn.append_basic_block("assert.ok")
            self.branch_weights(b.cbranch(cond, cont_bb, fail_bb), [1 << 20, 1])
            b.position_at_end(fail_bb)
            b.call(self.parent.fail_function(), [ll.Constant(I64T, s.site), ll.Constant(I64T, 0), ll.Constant(I64T, 0)])
            b.unreachable()
            b.position_at_end(cont_bb)
        elif isinstance(s, ir.Block):  # a scope only the passes read (bounds elimination splices it)
            self.stmts(s.body)
        elif isinstance(s, ir.Break):
            b.branch(self.loops[-1].exit_block)
        elif isinstance(s, ir.Continue):
            b.branch(self.loops[-1].step_block)
        else:  # pragma: no cover - the IR is closed
            raise TypeError(f"cannot lower {type(s).__name__}")

    def bounds_check(self, index: ll.Value, length: ll.Value, site: int) -> None:
        """``index < length``, or the failure path: record the site, index and length for the
        host, then end the thread. The failure path is inlined (a call would cost the kernel
        a dozen registers of call ABI) and marked cold; a check whose operands do not change
        in a loop is hoisted out of it with its branch."""
        b = self.b
        ok = b.icmp_unsigned("<", index, length)
        fail_bb = self.llfn.append_basic_block("oob")
        cont_bb = self.llfn.append_basic_block("inbounds")
        self.branch_weights(b.cbranch(ok, cont_bb, fail_bb), [1 << 20, 1])
        b.position_at_end(fail_bb)
        b.call(self.parent.fail_function(), [ll.Constant(I64T, site), index, length])
        b.unreachable()
        b.position_at_end(cont_bb)

    def trap(self) -> None:
        """A trap that ends the block: where the compiler knows no thread arrives."""
        b = self.b
        if self.cpu:
            b.call(self.cpu_runtime("oxide_cpu_trap"), [])
        else:
            b.asm(ll.FunctionType(ll.VoidType(), []), "trap;", "", [], side_effect=True)
        b.unreachable()

    # ---- the forms that differ between the dialects (dialect.py) ---------------------------

    def branch_weights(self, branch: ll.Instruction, weights: list[int]) -> None:
        if self.parent.dialect.branch_weights:
            branch.set_weights(weights)

    def fneg(self, value: ll.Value) -> ll.Value:
        """``-value`` of a float: LLVM 7 (libNVVM) has no ``fneg``, its form is ``fsub -0.0, x``."""
        if self.parent.dialect.is_nvvm:
            ty = value.type
            zero = (ll.Constant(ty, [ll.Constant(ty.element, -0.0)] * ty.count) if isinstance(ty, ll.VectorType)
                    else ll.Constant(ty, -0.0))
            return self.b.fsub(zero, value)
        return self.b.fneg(value)

    def freeze(self, value: ll.Value) -> ll.Value:
        """``freeze value`` (it keeps LLVM's instcombine from taking apart what it freezes); LLVM 7
        (libNVVM) has no ``freeze``: the value itself."""
        if self.parent.dialect.is_nvvm:
            return value
        frozen = ll.instructions.Instruction(self.b.block, value.type, "freeze", [value])
        self.b._insert(frozen)
        return frozen

    def volatile_load(self, ptr: ll.Value, ty: ll.Type, align: int) -> ll.Value:
        """``load volatile ty, ptr``: a read that reaches memory every time (a poll)."""
        load = _VolatileLoad(self.b.block, ptr, typ=ty)
        load.align = align
        self.b._insert(load)
        return load

    def volatile_store(self, value: ll.Value, ptr: ll.Value, align: int) -> None:
        store = _VolatileStore(self.b.block, value, ptr)
        store.align = align
        self.b._insert(store)

    def element_address(self, view: LoweredView, index: ll.Value) -> ll.Value:
        return self.b.gep(view.ptr, [index], source_etype=scalar_ll(view.elem, True))

    def _half_word(self, view: _View, index: ll.Value) -> tuple[ll.Value, ll.Value, ll.VectorType]:
        """The pair (a ``<2 x T>`` in memory, one 32-bit register) holding 16-bit element
        ``index`` of a packed fragment, and the element's lane in it."""
        b = self.b
        pair_t = ll.VectorType(scalar_ll(view.elem, True), 2)
        pairs = b.bitcast(view.ptr, ll.PointerType(pair_t, view.ptr.type.addrspace))
        pair = b.gep(pairs, [b.lshr(index, ll.Constant(index.type, 1))], source_etype=pair_t)
        lane = b.trunc(b.and_(index, ll.Constant(index.type, 1)), I32T)
        return pair, lane, pair_t

    def store_half(self, view: _View, index: ll.Value, value: ll.Value) -> None:
        """Writes the element as a lane of its pair: two conversions written to one pair become
        one packed conversion (cvt.rn.bf16x2.f32)."""
        b = self.b
        pair, lane, pair_t = self._half_word(view, index)
        b.store(b.insert_element(b.load(pair, typ=pair_t), value, lane), pair)

    def load_half(self, view: _View, index: ll.Value) -> ll.Value:
        b = self.b
        pair, lane, pair_t = self._half_word(view, index)
        return b.extract_element(b.load(pair, typ=pair_t), lane)

    def mark_invariant(self, load: ll.Instruction, view: LoweredView) -> None:
        """Loads of read-only views are invariant for the kernel (the runtime refuses aliasing
        with written views), so they go through the read-only data cache (ld.global.nc)."""
        if view.read_only and self.fn.is_kernel:
            load.set_metadata("invariant.load", self.parent.module.add_metadata([]))

    @staticmethod
    def is_global(view: _View) -> bool:
        return isinstance(view.ptr.type, ll.PointerType) and view.ptr.type.addrspace == 1

    # ---- expressions --------------------------------------------------------------------

    def view(self, e: ir.Expr) -> _View:
        """The pointer and length of a view-valued expression: a parameter, an array, a local
        holding a view, a slice, or a choice between views."""
        ty = e.ty
        assert isinstance(ty, (ViewType, ArrayType))
        if isinstance(e, ir.Var):
            if e.name in self.views:
                return self.views[e.name]
            ptr_slot, len_slot = self.view_slots[e.name]
            return _View(self.b.load(ptr_slot, typ=self.view_ptr_type(ty)), self.b.load(len_slot, typ=I64T), ty.elem)
        if isinstance(e, ir.ViewSlice):
            return self.view_slice(e)
        if isinstance(e, ir.ModuleArray):
            assert isinstance(ty, ArrayType) and ty.size is not None
            zero = ll.Constant(I32T, 0)
            ptr = self.b.gep(self.parent.arrays[e.symbol], [zero, zero], inbounds=True)
            return _View(ptr, ll.Constant(I64T, ty.size), ty.elem)
        if isinstance(e, ir.Select):
            return self.view_select(e)
        if isinstance(e, ir.NullView):  # None for an optional view: no memory, every extent 0
            assert isinstance(ty, ViewType)
            zero = ll.Constant(I64T, 0)
            dims = [zero] * ty.ndim if ty.is_tensor else None
            return _View(ll.Constant(self.view_ptr_type(ty), None), zero, ty.elem, dims, dims and list(dims))
        if isinstance(e, ir.Intrinsic) and e.args and isinstance(e.args[0].ty, ArrayType):
            # a view an intrinsic maps from another (ox.cluster.map_shared: the same array of
            # another block): its pointer from the intrinsic, the length of the view it maps
            return _View(self.expr(e), self.view(e.args[0]).length, ty.elem)
        raise TypeError(f"cannot lower a view given by {type(e).__name__}")

    @staticmethod
    def view_ptr_type(ty: ViewType | ArrayType) -> ll.Type:
        return array_ptr(ty) if isinstance(ty, ArrayType) else global_ptr(ty.elem)

    def assign_view(self, name: str, value: ir.Expr) -> None:
        ty = value.ty
        assert isinstance(ty, (ViewType, ArrayType))
        if name not in self.view_slots:
            with self.b.goto_block(self.entry):
                ptr_slot = self.b.alloca(self.view_ptr_type(ty), name=f"{name}.ptr")
                len_slot = self.b.alloca(I64T, name=f"{name}.len")
                # never read before an assignment (the frontend sees to that); a null view of
                # length 0 keeps even a wrong read checked rather than undefined
                self.b.store(ll.Constant(self.view_ptr_type(ty), None), ptr_slot)
                self.b.store(ll.Constant(I64T, 0), len_slot)
            self.view_slots[name] = (ptr_slot, len_slot)
        view = self.view(value)
        ptr_slot, len_slot = self.view_slots[name]
        self.b.store(view.ptr, ptr_slot)
        self.b.store(view.length, len_slot)

    def view_slice(self, e: ir.ViewSlice) -> _View:
        """``x[start:stop]``: the pointer moves by ``start`` elements, the length is
        ``stop - start``; checked (when not proven) that ``0 <= start <= stop <= len(x)``,
        as unsigned comparisons (a negative value reads as a huge one)."""
        b = self.b
        base = self.view(e.view)
        start = self.index(e.start)
        stop = self.index(e.stop) if e.stop is not None else base.length
        if e.check_site is not None:
            # x[k:] checks k <= len(x) (its stop is the length); x[a:b] both comparisons
            ok = b.and_(b.icmp_unsigned("<=", stop, base.length), b.icmp_unsigned("<=", start, stop))
            fail_bb = self.llfn.append_basic_block("slice.bad")
            cont_bb = self.llfn.append_basic_block("slice.ok")
            self.branch_weights(b.cbranch(ok, cont_bb, fail_bb), [1 << 20, 1])
            b.position_at_end(fail_bb)
            reported = start if e.stop is None else b.select(b.icmp_unsigned("<=", stop, base.length), start, stop)
            b.call(self.parent.fail_function(), [ll.Constant(I64T, e.check_site), reported, base.length])
            b.unreachable()
            b.position_at_end(cont_bb)
        ptr = self.element_address(base, start)
        return _View(ptr, b.sub(stop, start), base.elem, read_only=base.read_only)

    def view_select(self, e: ir.Select) -> _View:
        """``a if c else b`` of views: only the chosen side is evaluated (a slice may check)."""
        b = self.b
        cond = self.expr(e.cond)
        ty = e.ty
        assert isinstance(ty, (ViewType, ArrayType))
        if isinstance(e.if_true, ir.Var) and isinstance(e.if_false, ir.Var):
            t, f = self.view(e.if_true), self.view(e.if_false)
            return _View(b.select(cond, t.ptr, f.ptr), b.select(cond, t.length, f.length), ty.elem,
                         read_only=t.read_only and f.read_only)
        ptr_slot, len_slot = self.temp(self.view_ptr_type(ty)), self.temp(I64T)
        then_bb = self.llfn.append_basic_block("viewsel.then")
        else_bb = self.llfn.append_basic_block("viewsel.else")
        end_bb = self.llfn.append_basic_block("viewsel.end")
        b.cbranch(cond, then_bb, else_bb)
        for block, side in ((then_bb, e.if_true), (else_bb, e.if_false)):
            b.position_at_end(block)
            v = self.view(side)
            b.store(v.ptr, ptr_slot)
            b.store(v.length, len_slot)
            b.branch(end_bb)
        b.position_at_end(end_bb)
        return _View(b.load(ptr_slot, typ=self.view_ptr_type(ty)), b.load(len_slot, typ=I64T), ty.elem)

    def index(self, e: ir.Expr) -> ll.Value:
        if self.index32 and isinstance(e, ir.Intrinsic) and e.name == "flat_index" and _has_stride(e.args[0]):
            # a tensor element's offset: exact modulo 2**32 for an element in bounds of a tensor
            # the runtime let this instance take (index32.py); its terms are then at most the
            # offset in size, so the products and sums have no signed overflow
            rest, unit = self.split_unit_term(e.args[0])
            if unit is None:
                return self.b.sext(self.opaque_i32(self.narrow_offset(e.args[0], top=True)), I64T)
            # the term of an axis of stride 1 is its index itself, exact in i64 (an element in
            # bounds): added in i64 after the sign extension of the others, a loop along that
            # axis steps the address by a constant, as a raw pointer's loop does
            last = self.index(unit)
            if rest is None:
                return last
            head = self.b.sext(self.opaque_i32(self.narrow_offset(rest, top=True)), I64T)
            return self.b.add(head, last, flags=["nsw"])
        value = self.expr(e)
        scalar = as_scalar(e.ty)
        assert scalar is not None
        if scalar.bits < 64:
            value = self.b.sext(value, I64T) if scalar.kind == "int" else self.b.zext(value, I64T)
        return value

    def split_unit_term(self, e: ir.Expr) -> tuple[ir.Expr | None, ir.Expr | None]:
        """``e``, a sum ``Σ index·stride``, as (the sum of the other terms, the index of the last
        term whose stride is the constant 1: a contiguous last axis of an index32 instance's
        tensor); (e, None) when no term's stride is 1."""
        terms: list[ir.Expr] = []
        stack = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, ir.BinOp) and x.op == "+":
                stack += [x.right, x.left]
            else:
                terms.append(x)
        for k in range(len(terms) - 1, -1, -1):
            t = terms[k]
            if isinstance(t, ir.BinOp) and t.op == "*" and isinstance(t.right, ir.ViewDim) and t.right.which == "stride":
                strides = self.view(t.right.view).strides  # i64; the constant 1 where index32 knows it
                stride = strides[t.right.axis] if strides is not None else None
                if isinstance(stride, ll.Constant) and stride.constant == 1:
                    others = terms[:k] + terms[k + 1:]
                    rest: ir.Expr | None = None
                    for o in others:
                        rest = o if rest is None else ir.BinOp(BinaryOp.ADD, rest, o, IR_I64, o.loc)
                    return rest, t.left
        return e, None

    def opaque_i32(self, value: ll.Value) -> ll.Value:
        """``value``, hidden from InstCombine, which would otherwise rewrite the sign-extension
        of 32-bit arithmetic over truncated i64 values back into i64 arithmetic and a
        shift pair: ``freeze`` (NVPTX), a ``mov.b32`` that ptxas removes (libNVVM's LLVM 7)."""
        if not self.parent.dialect.is_nvvm:
            return self.freeze(value)
        mov = ll.InlineAsm(ll.FunctionType(I32T, [I32T]), "mov.b32 $0, $1;", "=r,r", side_effect=False)
        return self.b.call(mov, [value])

    def narrow_offset(self, e: ir.Expr, top: bool = False) -> ll.Value:
        """The i64 expression ``e`` modulo 2**32, as i32: sums, differences and products are
        computed on their operands modulo 2**32 (what the i64 ones leave in the low 32 bits),
        a tensor's shape and stride are their low halves, anything else is computed as written
        and truncated (a checked index is checked at full width). ``top``: ``e`` is the
        offset's ``Σ index·stride`` itself (nsw holds there, index32.py), not a term's index."""
        b = self.b
        if isinstance(e, ir.Const):
            return ll.Constant(I32T, int(e.value) & 0xFFFFFFFF)
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*") and is_int(e.ty):
            left = self.narrow_offset(e.left, top and e.op == "+")
            right = self.narrow_offset(e.right, top and e.op == "+")
            flags = ["nsw"] if top else []
            return b.add(left, right, flags=flags) if e.op == "+" else b.sub(left, right) if e.op == "-" \
                else b.mul(left, right, flags=flags)
        if isinstance(e, ir.ViewDim):
            v = self.view(e.view)
            assert v.shape is not None and v.strides is not None
            if v.dims32 is not None:
                return v.dims32[e.axis + (len(v.shape) if e.which == "stride" else 0)]
            return b.trunc((v.shape if e.which == "shape" else v.strides)[e.axis], I32T)
        if isinstance(e, ir.Cast) and is_int(e.ty):
            src = e.operand.ty
            if isinstance(src, ThreadIndexType) or (is_int(src) and as_scalar(src).bits == 64):  # type: ignore[union-attr]
                return self.narrow_offset(e.operand)
        if isinstance(e, ir.ThreadIndex1D):
            dim = THREAD_INDEX_DIM[e.ty.axis if isinstance(e.ty, ThreadIndexType) else "1d"]
            return b.add(b.mul(self.sreg(f"ctaid.{dim}"), self.sreg(f"ntid.{dim}")), self.sreg(f"tid.{dim}"))
        value = self.expr(e)
        bits = value.type.width if isinstance(value.type, ll.IntType) else 64
        if bits > 32:
            return b.trunc(value, I32T)
        if bits < 32:
            scalar = as_scalar(e.ty)
            return b.sext(value, I32T) if scalar is not None and scalar.kind == "int" else b.zext(value, I32T)
        return value

    def expr(self, e: ir.Expr) -> ll.Value:
        b = self.b
        if isinstance(e, ir.Const):
            t = scalar_ll(e.ty)
            if e.ty.kind == "float":
                return ll.Constant(t, _in_range(float(e.value), e.ty))
            if e.ty.kind == "bool":
                return ll.Constant(I1, int(bool(e.value)))
            return ll.Constant(t, int(e.value) & ((1 << e.ty.bits) - 1))
        if isinstance(e, ir.Var):
            if e.name in self.views:
                raise TypeError("a view is not a value")
            return b.load(self.slots[e.name], typ=value_ll(e.ty))
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.Compare):
            l, r = self.expr(e.left), self.expr(e.right)
            t = e.operand_ty
            if t.kind == "float":
                op = {"==": "==", "!=": "!="}.get(e.op, e.op)
                return b.fcmp_unordered(op, l, r) if e.op == "!=" else b.fcmp_ordered(op, l, r)
            if t.kind == "int":
                return b.icmp_signed(e.op, l, r)
            return b.icmp_unsigned(e.op, l, r)
        if isinstance(e, ir.BoolOp):
            return self.boolop(e)
        if isinstance(e, ir.Not):
            return b.xor(self.expr(e.operand), ll.Constant(I1, 1))
        if isinstance(e, ir.Neg):
            v = self.expr(e.operand)
            if isinstance(e.ty, VectorType) and e.ty.kind != "float":
                return b.sub(ll.Constant(v.type, None), v)  # llvmlite's neg builds a scalar 0
            return self.fneg(v) if e.ty.kind == "float" else b.neg(v)
        if isinstance(e, ir.Cast):
            if e.nonneg and is_int(e.operand.ty) and is_int(e.ty):
                src = as_scalar(e.operand.ty)
                if src is not None and e.ty.bits > src.bits:
                    return self.b.zext(self.expr(e.operand), scalar_ll(e.ty))
            return self.cast(self.expr(e.operand), e.operand.ty, e.ty)
        if isinstance(e, ir.Call):
            return self.call(e)
        if isinstance(e, ir.ViewLen):
            return self.view(e.view).length
        if isinstance(e, ir.ViewDim):
            v = self.view(e.view)
            assert v.shape is not None and v.strides is not None
            return (v.shape if e.which == "shape" else v.strides)[e.axis]
        if isinstance(e, ir.ViewLoad):
            view = self.view(e.view)
            index = self.index(e.index)
            elem_t = scalar_ll(view.elem, True)
            if e.check_site is not None:
                self.bounds_check(index, view.length, e.check_site)
            if view.packed:
                return self.load_half(view, index)
            value = b.load(self.element_address(view, index), typ=elem_t, align=_alignment(view.elem))
            self.mark_invariant(value, view)
            if view.elem.kind == "bool":
                value = b.icmp_unsigned("!=", value, ll.Constant(I8, 0))
            return value
        if isinstance(e, ir.ThreadIndex1D):
            dim = THREAD_INDEX_DIM[e.ty.axis if isinstance(e.ty, ThreadIndexType) else "1d"]
            tid = b.zext(self.sreg(f"tid.{dim}"), I64T)
            ctaid = b.zext(self.sreg(f"ctaid.{dim}"), I64T)
            ntid = b.zext(self.sreg(f"ntid.{dim}"), I64T)
            return b.add(b.mul(ctaid, ntid, flags=["nuw", "nsw"]), tid, flags=["nuw", "nsw"])
        if isinstance(e, ir.SpecialReg):
            return self.sreg(e.name)
        if isinstance(e, ir.Select):
            cond = self.expr(e.cond)
            if ir.is_pure(e.if_true) and ir.is_pure(e.if_false):
                return b.select(cond, self.expr(e.if_true), self.expr(e.if_false))
            # a side that reads memory or calls runs only when chosen, as in Python
            result = self.temp(value_ll(e.ty))
            then_bb = self.llfn.append_basic_block("ifexp.then")
            else_bb = self.llfn.append_basic_block("ifexp.else")
            end_bb = self.llfn.append_basic_block("ifexp.end")
            b.cbranch(cond, then_bb, else_bb)
            for block, side in ((then_bb, e.if_true), (else_bb, e.if_false)):
                b.position_at_end(block)
                b.store(self.expr(side), result)
                b.branch(end_bb)
            b.position_at_end(end_bb)
            return b.load(result, typ=value_ll(e.ty))
        if isinstance(e, ir.Intrinsic):
            from .intrinsics import lower_intrinsic

            return lower_intrinsic(self, e)
        if isinstance(e, ir.MakeTuple):
            packed: ll.Value = ll.Constant(value_ll(e.ty), None)
            for i, v in enumerate(e.values):
                packed = b.insert_value(packed, self.expr(v), i)
            return packed
        if isinstance(e, ir.TupleGet):
            return b.extract_value(self.expr(e.value), e.index)
        if isinstance(e, ir.MakeVector):
            vec: ll.Value = ll.Constant(value_ll(e.ty), None)
            for lane, v in enumerate(e.values):
                vec = b.insert_element(vec, self.expr(v), ll.Constant(I32T, lane))
            return vec
        if isinstance(e, ir.VectorGet):
            return b.extract_element(self.expr(e.value), ll.Constant(I32T, e.lane))
        if isinstance(e, ir.TupleSet):
            return b.insert_value(self.expr(e.value), self.expr(e.element), e.index)
        if isinstance(e, ir.VectorSet):
            return b.insert_element(self.expr(e.value), self.expr(e.element), ll.Constant(I32T, e.lane))
        raise TypeError(f"cannot lower {type(e).__name__}")

    def sreg(self, name: str) -> ll.Value:
        if self.block_dims is not None and name.startswith("ntid."):
            return self.block_dims[name[-1]]
        if self.parent.cpu:
            return self.cpu_sreg(name)
        fn = self.parent.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", I32T, [])
        return self.b.call(fn, [])

    def cpu_context_field(self, field: int, ty: ll.Type, axis: int | None = None, invariant: bool = False) -> ll.Value:
        """A field of the CPU scheduler's thread context. ``invariant``: one the thread never
        sees change (its block, the launch's shape, its shared segment), which LLVM may hoist."""
        zero = ll.Constant(I32T, 0)
        indices = [zero, ll.Constant(I32T, field)] + ([] if axis is None else [ll.Constant(I32T, axis)])
        load = self.b.load(self.b.gep(self.parent.cpu_context(), indices, inbounds=True), typ=ty)
        if invariant:
            load.set_metadata("invariant.load", self.parent.module.add_metadata([]))
        return load

    def cpu_sreg(self, name: str) -> ll.Value:
        """A special register on the CPU device: the thread context's field, or the lane (the
        linear thread index modulo 32, as the GPU numbers lanes)."""
        register, _, axis = name.partition(".")
        if register in cpu_abi.SPECIAL_REGISTER_FIELDS and axis in ("x", "y", "z"):
            return self.cpu_context_field(cpu_abi.SPECIAL_REGISTER_FIELDS[register], I32T, "xyz".index(axis),
                                          invariant=register != "tid")
        if name == "laneid":
            b = self.b
            linear = b.add(self.sreg("tid.x"), b.mul(self.sreg("ntid.x"),
                                                     b.add(self.sreg("tid.y"), b.mul(self.sreg("ntid.y"), self.sreg("tid.z")))))
            return b.and_(linear, ll.Constant(I32T, 31))
        raise NoCpuForm(f"the special register %{name}")

    def cpu_dynamic_shared_offset(self) -> ll.Value:
        """Where the dynamic shared array starts in a block's segment: after the module's static
        arrays, whose total is known once the module is lowered (a global the backend sets)."""
        g = self.parent.module.globals.get("__oxide_cpu_dynamic_shared_offset")
        if g is None:
            g = ll.GlobalVariable(self.parent.module, I64T, "__oxide_cpu_dynamic_shared_offset")
            g.global_constant = True
            g.linkage = "internal"
        load = self.b.load(g, typ=I64T)
        return load

    def call(self, e: ir.Call) -> ll.Value:
        if (self.parent.cpu and e.symbol in self.parent.c_abi and e.symbol in self.parent.extern_params
                and e.symbol not in self.parent.cpu_cxx_callable):
            refusal = self.parent.cpu_cxx_refused.get(e.symbol)
            if refusal is not None:  # its C++ cannot be built for the host (backends/cpu/cxx.py)
                raise NoCpuForm(*refusal)
            stub = next((x for x in self.parent.program.externs if x.symbol == e.symbol), None)
            where = f", declared at {Path(stub.file).name}:{stub.line}" if stub is not None else ""
            raise NoCpuForm(f"the CUDA C++ function {e.symbol}() (an @extern{where})",
                            f"give {e.symbol}() a Python implementation for the CPU device: a device function of "
                            f"its signature, named by cpu= in its declaration, @ox.extern(\"{e.symbol}\", "
                            "sources=[...], cpu=...) (docs/interop.md, \"On the CPU device\"); or run this kernel "
                            "on a GPU")
        if e.symbol == "llvm.nvvm.barrier0" and self.parent.cpu:
            return self.b.call(self.parent.cpu_runtime("oxide_cpu_barrier"), [self.sync_site(e.loc)])
        if e.symbol == "llvm.nvvm.barrier0":
            fn = self.parent.intrinsic("llvm.nvvm.barrier0", ll.VoidType(), [])
            fn.attributes.add("convergent")
            return self.b.call(fn, [])
        callee = self.parent.functions[self.parent.index32_twins.get(e.symbol, e.symbol) if self.index32 else e.symbol]
        generic = e.symbol in self.parent.c_abi
        params = self.parent.extern_params.get(e.symbol)
        args: list[ll.Value] = []
        for position, a in enumerate(e.args):
            if isinstance(a.ty, TensorMapType):
                args += list(self.tensor_map(a))
            elif isinstance(a.ty, ArrayType):
                v = self.view(a)
                args += [v.ptr, v.length]
            elif isinstance(a.ty, ViewType):
                v = self.view(a)
                ptr = self.b.addrspacecast(v.ptr, ll.PointerType(scalar_ll(v.elem, True))) if generic else v.ptr
                pty = params[position].ty if params is not None else None
                if isinstance(pty, ViewType) and pty.kind == ViewKind.PTR:
                    args.append(ptr)
                elif a.ty.is_tensor:
                    assert v.shape is not None and v.strides is not None
                    args += [ptr, *v.shape, *v.strides]
                else:
                    args += [ptr, v.length]
            else:
                args.append(self.expr(a))
        if e.symbol in self.parent.half_shims:
            args = [self.b.bitcast(a, I16T) if _half_bits(a.type) is not a.type else a for a in args]
            result = self.b.call(callee, args)
            ret = value_ll(e.ty)
            return self.b.bitcast(result, ret) if _half_bits(ret) is not ret else result
        return self.b.call(callee, args)

    def tensor_map(self, e: ir.Expr) -> tuple[ll.Value, ll.Value]:
        """A TMA descriptor's generic address (i8*) and the elements of one of its boxes."""
        assert isinstance(e, ir.Var) and e.name in self.tensor_maps, "a TMA descriptor is a parameter"
        return self.tensor_maps[e.name]

    def boolop(self, e: ir.BoolOp) -> ll.Value:
        b = self.b
        result = self.temp(I1)  # the value so far, in a slot that mem2reg turns into a phi
        end = self.llfn.append_basic_block(f"{e.op}.end")
        for i, v in enumerate(e.values):
            value = self.expr(v)
            b.store(value, result)
            if i == len(e.values) - 1:
                b.branch(end)
            else:
                nxt = self.llfn.append_basic_block(f"{e.op}.next")
                if e.op == "and":
                    b.cbranch(value, nxt, end)
                else:
                    b.cbranch(value, end, nxt)
                b.position_at_end(nxt)
        b.position_at_end(end)
        return b.load(result, typ=I1)

    def _cpu_half_contraction(self, op: str, l: ll.Value, r: ll.Value) -> ll.Value | None:
        """The CPU device: ``a * b + c`` (and ``c + a * b``, ``a * b - c``, ``c - a * b``) of f16/bf16
        scalars or vectors, the product lowered just before with ``contract``, as one fused
        multiply-add rounded once, as the GPU's NVPTX backend contracts them (``fma.rn.f16x2``,
        ``HFMA2``). x86 has no half fma (LLVM would round the product first); None where no
        operand is such a product."""
        def product(v: ll.Value) -> bool:
            return (isinstance(v, ll.Instruction) and v.opname == "fmul" and v.type == l.type
                    and bool({"contract", "fast"} & set(getattr(v, "flags", ()))))

        if product(r):
            a, b_, c = r.operands[0], r.operands[1], l  # c + a * b, c - a * b = fma(-a, b, c)
            if op == "-":
                a = self.fneg(a)
        elif product(l):
            a, b_, c = l.operands[0], l.operands[1], r  # a * b + c, a * b - c = fma(a, b, -c)
            if op == "-":
                c = self.fneg(c)
        else:
            return None
        if not isinstance(l.type, ll.VectorType):
            return self._cpu_half_fma(a, b_, c)
        out: ll.Value = ll.Constant(l.type, None)
        for k in range(l.type.count):
            lane = ll.Constant(I32T, k)
            x, y, z = (self.b.extract_element(v, lane) for v in (a, b_, c))
            out = self.b.insert_element(out, self._cpu_half_fma(x, y, z), lane)
        return out

    def _cpu_half_fma(self, a: ll.Value, b_: ll.Value, c: ll.Value) -> ll.Value:
        """fma(a, b, c) of f16/bf16 scalars, rounded once: the product is exact in f64 (at most
        22 bits), the sum is rounded to odd in f64 (Two-Sum gives its error; an inexact even
        result moves one place toward the exact value), and rounding that to the half type
        is the correctly rounded fma (53 >= 11 + 2 bits)."""
        b = self.b
        f64, i64 = ll.DoubleType(), ll.IntType(64)
        x, y, z = (b.fpext(v, f64) for v in (a, b_, c))
        prod = b.fmul(x, y)
        total = b.fadd(prod, z)
        back = b.fsub(total, prod)
        err = b.fadd(b.fsub(prod, b.fsub(total, back)), b.fsub(z, back))
        bits = b.bitcast(total, i64)
        even = b.icmp_unsigned("==", b.and_(bits, ll.Constant(i64, 1)), ll.Constant(i64, 0))
        inexact = b.fcmp_unordered("!=", err, ll.Constant(f64, 0.0))
        finite = b.fcmp_ordered("<", b.call(self.parent.intrinsic("llvm.fabs.f64", f64, [f64]), [total]),
                                ll.Constant(f64, float("inf")))
        away = b.icmp_unsigned("==", b.fcmp_ordered(">", err, ll.Constant(f64, 0.0)),
                               b.fcmp_ordered(">", total, ll.Constant(f64, 0.0)))
        moved = b.select(away, b.add(bits, ll.Constant(i64, 1)), b.sub(bits, ll.Constant(i64, 1)))
        odd = b.select(b.and_(b.and_(even, inexact), finite), moved, bits)
        return b.fptrunc(b.bitcast(odd, f64), a.type)

    def temp(self, ty: ll.Type) -> ll.Value:
        with self.b.goto_block(self.entry):
            return self.b.alloca(ty)

    def binop(self, e: ir.BinOp) -> ll.Value:
        b = self.b
        l, r = self.expr(e.left), self.expr(e.right)
        t = e.ty
        if t.kind == "float":
            # `contract`: LLVM may fuse what passes/fma.py could not see (across statements)
            flags = ["fast"] if self.parent.fast_math else ["contract"] if self.parent.fma else []
            if self.parent.cpu and flags and e.op in ("+", "-") and _is_half(l.type):
                fused = self._cpu_half_contraction(e.op, l, r)
                if fused is not None:
                    return fused
            if e.op == "+":
                return b.fadd(l, r, flags=flags)
            if e.op == "-":
                return b.fsub(l, r, flags=flags)
            if e.op == "*":
                return b.fmul(l, r, flags=flags)
            if e.op == "/":
                return b.fdiv(l, r, flags=["fast"] if self.parent.fast_math else [])
            if e.op == "//":
                if t.bits < 32:  # f16/bf16 divide and floor in f32 (one llvm.floor per type name)
                    f32 = ll.FloatType()
                    floor = self.parent.intrinsic("llvm.floor.f32", f32, [f32])
                    return b.fptrunc(b.call(floor, [b.fdiv(b.fpext(l, f32), b.fpext(r, f32))]), l.type)
                floor = self.parent.intrinsic(f"llvm.floor.{'f32' if t.bits == 32 else 'f64'}", l.type, [l.type])
                return b.call(floor, [b.fdiv(l, r)])
            if e.op == "%":
                rem = b.frem(l, r)
                zero = ll.Constant(l.type, 0.0)
                fix = b.and_(b.fcmp_ordered("!=", rem, zero),
                             b.xor(b.fcmp_ordered("<", rem, zero), b.fcmp_ordered("<", r, zero)))
                return b.select(fix, b.fadd(rem, r), rem)
        signed = t.kind == "int"
        simple: dict[str, Callable[[ll.Value, ll.Value], ll.Value]] = {
            "+": b.add, "-": b.sub, "*": b.mul, "&": b.and_, "|": b.or_, "^": b.xor,
        }
        if e.no_wrap and e.op in ("+", "-", "*"):  # proven exact where it stands (bounds elimination), as C's int is
            exact = {"+": b.add, "-": b.sub, "*": b.mul}[e.op]
            return exact(l, r, flags=["nsw" if signed else "nuw"])
        if e.op in simple:
            return simple[e.op](l, r)
        if e.op in ("<<", ">>"):
            return self.shift(e.op, l, r, signed)
        if e.operands_nonneg:  # both >= 0 (bounds elimination proved it): floor = truncation
            return self.int_division(e.op, l, r, False, divisor_nonzero=e.divisor_positive)
        return self.int_division(e.op, l, r, signed)

    def shift(self, op: str, l: ll.Value, r: ll.Value, signed: bool) -> ll.Value:
        """A shift by an amount of width or more (or negative, read as unsigned) is what Python
        gives before wrapping: 0, or -1 for ``>>`` of a negative signed value. LLVM's shift
        would be poison there; PTX's ``shl``/``shr`` clamp the amount the same way, so the
        NVPTX backend folds the guard into the one instruction."""
        b = self.b
        width = l.type.width
        if isinstance(r, ll.Constant) and 0 <= int(r.constant) < width:
            return b.shl(l, r) if op == "<<" else b.ashr(l, r) if signed else b.lshr(l, r)
        in_range = b.icmp_unsigned("<", r, ll.Constant(r.type, width))
        if width == 64:
            # PTX's 64-bit shifts take a u32 amount, and LLVM folds the guard below into the
            # shift, truncating an amount such as 2**32 or -2**63 to one in range. Clamp it to 64
            # in 32 bits first: truncating that is harmless, and PTX shifts by 64 as Python does.
            clamped = b.trunc(b.select(in_range, r, ll.Constant(r.type, width)), ll.IntType(32))
            in_range = b.icmp_unsigned("<", clamped, ll.Constant(ll.IntType(32), width))
            r = b.zext(clamped, r.type)
        if op == ">>" and signed:
            return b.select(in_range, b.ashr(l, r), b.ashr(l, ll.Constant(l.type, width - 1)))
        shifted = b.shl(l, r) if op == "<<" else b.lshr(l, r)
        return b.select(in_range, shifted, ll.Constant(l.type, 0))

    def int_division(self, op: str, l: ll.Value, r: ll.Value, signed: bool, divisor_nonzero: bool = False) -> ll.Value:
        """``//`` and ``%`` of integers. Python semantics: the quotient rounds toward -inf, the
        remainder takes the divisor's sign. Defined everywhere (LLVM's division is undefined
        behaviour for these): ``x // 0 == 0`` and ``x % 0 == x``; ``MIN // -1`` wraps to MIN
        and ``MIN % -1 == 0``. A constant divisor other than 0 and -1 needs no guard, nor one
        proven non-zero (``divisor_nonzero``, with ``signed`` False: both operands proven >= 0)."""
        b = self.b
        mask = (1 << l.type.width) - 1
        guarded = not divisor_nonzero and not (
            isinstance(r, ll.Constant) and int(r.constant) & mask not in (0, mask if signed else 0))
        zero = ll.Constant(l.type, 0)
        if signed and guarded:
            return floor_division(b, op, l, r)
        divisor_zero: ll.Value | None = None
        if guarded:
            divisor_zero = b.icmp_unsigned("==", r, zero)
            r = b.select(divisor_zero, ll.Constant(l.type, 1), r)
        if not signed:
            result = b.udiv(l, r) if op == "//" else b.urem(l, r)
        else:
            q, rem = b.sdiv(l, r), b.srem(l, r)
            adjust = b.and_(b.icmp_signed("!=", rem, zero), b.icmp_signed("<", b.xor(rem, r), zero))
            if op == "//":
                result = b.select(adjust, b.sub(q, ll.Constant(l.type, 1)), q)
            else:
                result = b.select(adjust, b.add(rem, r), rem)
        if divisor_zero is None:
            return result
        return b.select(divisor_zero, zero if op == "//" else l, result)

    def loop_metadata(self, unroll: int) -> ll.MDValue:
        """A loop ID (a node whose first operand is itself, one per loop) with the unroll hint."""
        m = self.parent.module
        if unroll == 0:
            hint = m.add_metadata([ll.MetaDataString(m, "llvm.loop.unroll.enable")])
        elif unroll == 1:
            hint = m.add_metadata([ll.MetaDataString(m, "llvm.loop.unroll.disable")])
        else:
            hint = m.add_metadata([ll.MetaDataString(m, "llvm.loop.unroll.count"), ll.Constant(I32T, unroll)])
        loop_id = ll.values.MDValue(m, [hint], name=str(len(m.metadata)))  # not uniqued: one per loop
        loop_id.operands = (loop_id, hint)
        return loop_id

    def cast(self, v: ll.Value, src_ty: Type, dst: ScalarType) -> ll.Value:
        b = self.b
        src = as_scalar(src_ty)
        assert src is not None
        if src == dst:
            return v
        if src.kind == "fp8" or dst.kind == "fp8":
            if dst.name == "bf16":  # through f32: every fp8 value is a bf16 value, so exactly
                return b.fptrunc(cast_fp8(self, v, src, F32), BFLOAT)
            return cast_fp8(self, v, src, dst)
        dt = scalar_ll(dst)
        if dst.kind == "bool":
            if src.kind == "float":
                return b.fcmp_unordered("!=", v, ll.Constant(v.type, 0.0))
            return b.icmp_unsigned("!=", v, ll.Constant(v.type, 0))
        if src.kind == "bool":
            return b.uitofp(v, dt) if dst.kind == "float" else b.zext(v, dt)
        if src.kind == "float" and dst.kind == "float":
            return b.fpext(v, dt) if dst.bits > src.bits else b.fptrunc(v, dt)
        if src.kind == "float":
            return self.float_to_int(v, src, dst)
        if dst.kind == "float":
            return b.sitofp(v, dt) if src.kind == "int" else b.uitofp(v, dt)
        if dst.bits == src.bits:
            return v
        if dst.bits < src.bits:
            return b.trunc(v, dt)
        return b.sext(v, dt) if src.kind == "int" else b.zext(v, dt)


    def float_to_int(self, v: ll.Value, src: ScalarType, dst: ScalarType) -> ll.Value:
        """Saturating, as Rust's ``as``: toward zero, clamped to the type's range, NaN → 0.
        LLVM's ``fptosi``/``fptoui`` give poison outside the range (libNVVM has no
        ``llvm.fpto*i.sat``), and a select never lets an unchosen poison through: so the
        conversion's result is only chosen for values in range."""
        b = self.b
        if src.bits < 32:  # f16 / bf16: exactly representable in f32, whose range covers 2^64
            v = b.fpext(v, ll.FloatType())
        dt = scalar_ll(dst)
        signed = dst.kind == "int"
        low = -float(1 << (dst.bits - 1)) if signed else -1.0
        high = float(1 << (dst.bits - 1 if signed else dst.bits))
        maximum = ll.Constant(dt, (1 << (dst.bits - 1 if signed else dst.bits)) - 1)
        zero = ll.Constant(dt, 0)
        if signed:
            result = b.select(b.fcmp_unordered("uno", v, v), zero, b.fptosi(v, dt))
            result = b.select(b.fcmp_ordered("<", v, ll.Constant(v.type, low)), ll.Constant(dt, 1 << (dst.bits - 1)), result)
        else:  # NaN, and -1 or less, give 0
            result = b.select(b.fcmp_unordered("<=", v, ll.Constant(v.type, low)), zero, b.fptoui(v, dt))
        return b.select(b.fcmp_ordered(">=", v, ll.Constant(v.type, high)), maximum, result)


def _has_stride(e: ir.Expr) -> bool:
    """Whether the flat index ``e`` reads a tensor's stride (a tensor access, not an array's)."""
    if isinstance(e, ir.ViewDim):
        return e.which == "stride"
    return any(_has_stride(c) for c in ir.children(e))


def _alignment(elem: ScalarType | StructType) -> int:
    return elem.alignment if isinstance(elem, StructType) else elem.itemsize


def _di_file_fields(path: str) -> dict[str, str]:
    import os

    return {"filename": os.path.basename(path), "directory": os.path.dirname(path) or "."}


@dataclass(frozen=True)
class LoweredProgram:
    """A lowered program: the module, and what its kernel entry points declare."""

    module: ll.Module
    # entry symbol -> the positions (of ``abi_params``) of the parameters it declares, for the
    # entries whose code does not read every one (entry_params.py)
    kept_params: dict[str, tuple[int, ...]]
    param_bytes: dict[str, int]  # entry symbol -> the bytes of its parameter block
    # host code (the CPU device): each block's static shared bytes (all of the module's arrays),
    # and the source place of each barrier / warp operation by its id
    cpu_shared_bytes: int = 0
    sync_sites: tuple[tuple[str, int, int], ...] = ()
    cpu_refused: dict[str, CompileError] = dataclasses.field(default_factory=dict)  # symbol -> why (CPU device)

    def text(self) -> str:
        return module_text(self.module)


def floor_division(b: ll.IRBuilder, op: str, l: ll.Value, r: ll.Value) -> ll.Value:
    """Signed ``//`` and ``%`` by a divisor that may be 0 or -1: one unsigned divide of the
    magnitudes, rounded toward -inf (up, for operands of different signs, before the quotient
    is negated). The magnitudes' divide has
    no ``MIN // -1`` overflow, so the only guard left is the zero divisor's, and it does not read
    the dividend: what the divide needs of the divisor (its magnitude and the reciprocal ptxas
    builds from it) is computed once for a loop- or kernel-invariant divisor and in parallel with
    the dividend otherwise (a guard that read the dividend chained each division of an index
    split after the one before). ``x // 0`` divides 0 by 1; the remainder is ``x - (x // y) * y``,
    which is Python's also at 0 and -1 (``x % 0 == x``, ``x % -1 == 0``)."""
    ty = l.type
    zero, one = ll.Constant(ty, 0), ll.Constant(ty, 1)

    def magnitude(v: ll.Value) -> ll.Value:
        return b.select(b.icmp_signed("<", v, zero), b.sub(zero, v), v)

    divisor_zero = b.icmp_unsigned("==", r, zero)
    n = b.select(divisor_zero, zero, magnitude(l))
    d = b.select(divisor_zero, one, magnitude(r))
    signs_differ = b.icmp_signed("<", b.xor(l, r), zero)
    # the quotient of operands of different signs is -ceil(n / d) = -((n + d - 1) // d): both
    # magnitudes are at most 2**(width-1), so n + d - 1 does not wrap
    n = b.select(signs_differ, b.add(n, b.sub(d, one)), n)
    uq = b.udiv(n, d)
    q = b.select(signs_differ, b.sub(zero, uq), uq)
    if op == "//":
        return q
    return b.sub(l, b.mul(q, r))


def lower_program(program: ir.Program, module_name: str, fast_math: bool = False, lineinfo: bool = False,
                  libnvvm: bool = False, dialect: Dialect = NVPTX, fma: bool = True,
                  cpu_cxx: tuple[frozenset[str], dict[str, tuple[str, str]]] | None = None) -> LoweredProgram:
    """Lowers ``program`` to an llvmlite module in the forms of ``dialect`` (NVPTX, or NVVM IR
    from ``dialect.nvvm_dialect``); print it with ``module_text``. ``lineinfo`` adds line
    tables that map PTX/SASS back to the Python source; ``libnvvm``: libNVVM compiles the
    program too (an NVVM dialect implies it), so the NVPTX form also uses only the intrinsics
    libNVVM reads. Each kernel entry point declares only the parameters its code reads
    (``LoweredProgram.kept_params``). ``fma``: ``+ - *`` may contract into fused multiply-adds
    (``CompileOptions.fma``). ``cpu_cxx`` (host code): the externs whose C++ the host compiled,
    and why each other one cannot run (``backends/cpu/cxx.py``)."""
    lowering = ModuleLowering(program, module_name, fast_math, lineinfo, libnvvm, dialect, fma)
    if cpu_cxx is not None:
        lowering.cpu_cxx_callable, lowering.cpu_cxx_refused = cpu_cxx
    module = lowering.lower()
    return LoweredProgram(module, lowering.kept_params, lowering.param_bytes, lowering.cpu_shared_bytes,
                          tuple(lowering.sync_sites), dict(lowering.cpu_refused))

