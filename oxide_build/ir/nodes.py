"""IR nodes. Every expression carries its type; every node carries its source location
(``loc``: line, col in the function's file) so later stages can still point at the source."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Union

from oxide.abi.manifest import ErrorSite

from .ops import BinaryOp, CompareOp, LogicOp
from .types import ScalarType, Type, is_half_float

__all__ = [
    "Loc", "Expr", "Stmt",
    "Const", "Var", "BinOp", "Compare", "BoolOp", "Not", "Neg", "Cast", "Call", "ViewLen", "ViewDim",
    "ViewLoad", "ViewSlice", "ModuleArray", "NullView", "ModuleArrayDecl", "MakeVector", "VectorGet", "VectorSet", "TupleSet", "ThreadIndex1D", "SpecialReg", "GRID_AXES", "Select", "Intrinsic", "MakeTuple", "TupleGet",
    "ArrayDecl", "Check", "LaunchCondition",
    "Assign", "Store", "If", "While", "ForRange", "Block", "Return", "ExprStmt", "Break", "Continue",
    "Param", "Function", "ExternFunction", "Program", "children", "subexpressions", "is_pure", "statements", "statement_roots",
]



class LaunchCondition(NamedTuple):
    """A condition the runtime checks before a kernel's launch, as the compiler writes it: ``expr``
    is an expression of ``oxide.abi.preconditions`` (nested lists), compiled into the manifest's
    program (``KernelSpec.preconditions``) when the kernel's spec is written; ``site`` its
    ErrorSite."""

    site: int
    expr: Any

@dataclass(frozen=True)
class Loc:
    line: int
    col: int


@dataclass
class Const:
    value: int | float | bool
    ty: ScalarType
    loc: Loc
    weak: bool = False  # a literal whose type still adapts to the other operand


@dataclass
class Var:
    name: str
    ty: Type
    loc: Loc


@dataclass
class BinOp:
    op: BinaryOp
    left: Expr
    right: Expr
    ty: ScalarType
    loc: Loc
    # a 64-bit signed product the source wrote: where the bounds-elimination pass proves the
    # widened operands >= 0 it marks their casts ``nonneg`` (NVPTX then forms mul.wide.u32)
    widening: bool = False
    # ``//`` and ``%`` of signed integers whose operands the bounds-elimination pass proves >= 0
    # (Python's floor rounding and C's truncation agree there: one unsigned divide, without the
    # sign fix-up or the MIN // -1 guard) and whose divisor it proves >= 1 (no x // 0 guard)
    operands_nonneg: bool = False
    divisor_positive: bool = False
    # ``+``, ``-``, ``*`` of integers that the bounds-elimination pass proves exact in their type
    # where they stand (no wrap-around): the lowering marks them ``nsw`` (signed) or ``nuw``
    # (unsigned), as C's signed arithmetic is, so LLVM may fold ``(i - 1) * n + j`` into a base
    # and constant offsets. A copy evaluated elsewhere (a versioning test) must not keep it.
    no_wrap: bool = False


@dataclass
class Compare:
    op: CompareOp
    left: Expr
    right: Expr
    operand_ty: ScalarType
    ty: ScalarType
    loc: Loc


@dataclass
class BoolOp:
    op: LogicOp  # short-circuit
    values: list[Expr]
    ty: ScalarType
    loc: Loc


@dataclass
class Not:
    operand: Expr
    ty: ScalarType
    loc: Loc


@dataclass
class Neg:
    operand: Expr
    ty: ScalarType
    loc: Loc


@dataclass
class Cast:
    operand: Expr
    ty: ScalarType
    loc: Loc
    nonneg: bool = False  # the operand is proven ≥ 0: widen with zext (NVPTX then forms mul.wide.u32)


@dataclass
class Call:
    symbol: str  # the callee's IR function symbol
    args: list[Expr]
    ty: Type
    loc: Loc


@dataclass
class ViewLen:
    view: Expr
    ty: ScalarType
    loc: Loc


@dataclass
class ViewDim:
    """``x.shape[axis]`` or ``x.strides[axis]`` (in elements) of a tensor view."""

    view: Expr
    axis: int
    which: str  # "shape" or "stride"
    ty: ScalarType
    loc: Loc


@dataclass
class ViewLoad:
    view: Expr
    index: Expr
    ty: ScalarType
    loc: Loc
    check_site: int | None = None  # ErrorSite id when bounds-checked


@dataclass
class ViewSlice:
    """``x[start:stop]`` (``stop`` None: to the end), and ``x + start``: the view of those
    elements of a 1-D view or array. ``check_site``: the run-time check that
    ``0 <= start <= stop <= len(x)``."""

    view: Expr
    start: Expr
    stop: Expr | None
    ty: Type
    loc: Loc
    check_site: int | None = None


@dataclass
class ModuleArray:
    """A module-level array in constant or global memory (``ox.constant.array``,
    ``ox.global_memory.array``), by the symbol of its ``ModuleArrayDecl``."""

    symbol: str
    ty: Type
    loc: Loc


@dataclass
class NullView:
    """None passed for an optional view parameter of a device function (``f(x, None)``): a null
    pointer, zero length, shape and strides, beside a false flag (frontend/optional_views.py)."""

    ty: Type  # the ViewType it stands for
    loc: Loc


@dataclass(frozen=True)
class ModuleArrayDecl:
    """The definition of a module-level array: ``values`` its initial elements (row-major), or
    None for zeros (filled from the host)."""

    name: str
    symbol: str
    ty: Type  # an ArrayType of space "constant" or "global"
    values: tuple[int | float | bool, ...] | None
    file: str
    line: int


@dataclass
class MakeVector:
    """``f32x4(a, b, c, d)``: a vector of ``values`` (one per lane, each of the element type)."""

    values: list[Expr]
    ty: Type
    loc: Loc


@dataclass
class VectorGet:
    """``v.x`` … ``v.w``: lane ``lane`` of a vector."""

    value: Expr
    lane: int
    ty: Type
    loc: Loc


@dataclass
class VectorSet:
    """``v`` with lane ``lane`` replaced by ``element`` (``v.y = e`` assigns this to ``v``)."""

    value: Expr
    lane: int
    element: Expr
    ty: Type
    loc: Loc


@dataclass
class TupleSet:
    """A struct value with field ``index`` replaced by ``element`` (``p.x = e`` assigns this to ``p``)."""

    value: Expr
    index: int
    element: Expr
    ty: Type
    loc: Loc


@dataclass
class ThreadIndex1D:
    ty: Type
    loc: Loc


GRID_AXES = ("x", "y", "z")  # the axes of the special registers (tid.x, ntid.y, ...)


@dataclass
class SpecialReg:
    name: str  # "tid.x", "ctaid.x", "ntid.x", "nctaid.x", ...
    ty: ScalarType
    loc: Loc


@dataclass
class Select:
    cond: Expr
    if_true: Expr
    if_false: Expr
    ty: ScalarType
    loc: Loc
    scoped: bool = False  # a conditional expression: each side is evaluated where cond is (not) true


@dataclass
class Intrinsic:
    """A device intrinsic (atomics, warp operations, math, fences, vector memory access).
    ``name`` is the language name, e.g. "atomic.add", "warp.shfl_down", "math.exp"."""

    name: str
    args: list[Expr]
    ty: Type
    loc: Loc
    check_site: int | None = None  # for intrinsics that index a view
    scope: str = "gpu"  # atomics: the PTX scope, "cta", "gpu" or "sys"
    text: str = ""  # print(): the printf format
    options: tuple[str, ...] = ()  # compile-time text it carries: ox.asm's template and constraints


@dataclass
class MakeTuple:
    values: list[Expr]
    ty: Type
    loc: Loc


@dataclass
class TupleGet:
    value: Expr
    index: int
    ty: Type
    loc: Loc


Expr = Union[
    Const, Var, BinOp, Compare, BoolOp, Not, Neg, Cast, Call, ViewLen, ViewDim, ViewLoad, ViewSlice, ModuleArray, NullView, MakeVector, VectorGet, VectorSet, TupleSet, ThreadIndex1D,
    SpecialReg, Select, Intrinsic, MakeTuple, TupleGet,
]


def is_pure(e: Expr, also: Callable[[Expr], bool] | None = None) -> bool:
    """True when evaluating ``e`` cannot fault or have effects (no loads, calls, intrinsics;
    ``also`` accepts more leaves: a pass's own knowledge of some intrinsics)."""
    if also is not None and also(e):
        return True
    if not isinstance(e, (Const, Var, ThreadIndex1D, SpecialReg, ViewLen, ViewDim,
                          BinOp, Compare, Not, Neg, Cast, Select, BoolOp)):
        return False
    if isinstance(e, BinOp) and e.op in ("/", "//", "%") and e.ty.kind != "float":
        return False  # integer division by zero is undefined behaviour
    return all(is_pure(c, also) for c in children(e))


def subexpressions(e: Expr) -> Iterator[Expr]:
    """``e`` and every expression inside it, ``e`` first (each before its children, the
    children in evaluation order)."""
    # an explicit stack: nested generators would pass each expression up through every level
    # above it, quadratic in the depth of a long unrolled sum
    stack = [e]
    while stack:
        e = stack.pop()
        yield e
        kids = _CHILDREN.get(type(e), _children_of_subclass)(e)
        if kids:
            kids.reverse()
            stack += kids


def children(e: Expr) -> list[Expr]:
    """The sub-expressions of ``e``, in evaluation order (a new list)."""
    return _CHILDREN.get(type(e), _children_of_subclass)(e)


def _children_of_subclass(e: Expr) -> list[Expr]:
    for cls in type(e).__mro__[1:]:
        if cls in _CHILDREN:
            return _CHILDREN[cls](e)
    return []


def _no_children(e: Expr) -> list[Expr]:
    return []


def _binary(e: BinOp | Compare) -> list[Expr]:
    return [e.left, e.right]


def _unary(e: Not | Neg | Cast) -> list[Expr]:
    return [e.operand]


def _select(e: Select) -> list[Expr]:
    return [e.cond, e.if_true, e.if_false]


def _values(e: BoolOp | MakeTuple | MakeVector) -> list[Expr]:
    return list(e.values)


def _args(e: Call | Intrinsic) -> list[Expr]:
    return list(e.args)


def _view(e: ViewLen | ViewDim) -> list[Expr]:
    return [e.view]


def _view_load(e: ViewLoad) -> list[Expr]:
    return [e.view, e.index]


def _view_slice(e: ViewSlice) -> list[Expr]:
    return [e.view, e.start] if e.stop is None else [e.view, e.start, e.stop]


def _value(e: VectorGet | TupleGet) -> list[Expr]:
    return [e.value]


def _value_element(e: VectorSet | TupleSet) -> list[Expr]:
    return [e.value, e.element]


# each expression class's children, by exact class (one dict look-up instead of a chain of
# isinstance tests: the passes ask it for every node they walk)
_CHILDREN: dict[type, Callable[[Any], list[Expr]]] = {
    BinOp: _binary, Compare: _binary, Not: _unary, Neg: _unary, Cast: _unary, Select: _select,
    BoolOp: _values, MakeTuple: _values, MakeVector: _values, Call: _args, Intrinsic: _args,
    ViewLen: _view, ViewDim: _view, ViewLoad: _view_load, ViewSlice: _view_slice,
    VectorGet: _value, TupleGet: _value, VectorSet: _value_element, TupleSet: _value_element,
    Const: _no_children, Var: _no_children, ModuleArray: _no_children, NullView: _no_children,
    ThreadIndex1D: _no_children,
    SpecialReg: _no_children,
}


@dataclass
class Assign:
    name: str
    value: Expr
    loc: Loc
    # the bounds-elimination pass learns the value (not for a declaration's zero, an unpacked
    # tuple's temporary, a loop's own bookkeeping or a static_range variable's last value)
    tracked: bool = True


@dataclass
class Store:
    view: Expr
    index: Expr
    value: Expr
    loc: Loc
    check_site: int | None = None


@dataclass
class If:
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt]
    loc: Loc
    # the bounds-elimination pass's test of launch-invariant facts: ``then`` is the kernel
    # without the checks they prove, ``orelse`` the kernel as written (which reports the failure)
    launch_versioned: bool = False
    # the test of check versioning (a loop) or run versioning (straight-line code): ``then`` is
    # the code without the checks the test shows hold, ``orelse`` the code as written
    check_versioned: bool = False
    # ``orelse`` never reaches the code after the ``if``: a check in it fails wherever it runs
    # (run versioning's test fails only where one of the checks it removed fails); lowered with
    # no edge back, so the branch is an out-of-line path, as a check's failure path is
    orelse_fails: bool = False


@dataclass
class While:
    cond: Expr
    body: list[Stmt]
    loc: Loc
    step: list[Stmt] = field(default_factory=list)  # runs after body and on `continue` (for-range)
    # `for v in ox.unroll(range(...), n)`: unroll n times (0: as far as LLVM sees fit; 1: never)
    unroll: int | None = None
    range: ForRange | None = None  # the loop of ``for var in range(...)``


@dataclass
class ForRange:
    """What a ``while`` that a ``for var in range(start, stop, step)`` became keeps of it, for
    the bounds-elimination pass: the facts on ``var`` inside the body, and the entry check
    that ``var + step`` cannot wrap (``guard``, standing before the loop), which the pass
    keeps only when a proof used those facts."""

    var: str
    ty: ScalarType
    start: Expr
    stop: Expr
    step: Expr
    rebinds: bool  # the body (or an enclosing loop) assigns var: no facts on it
    guard: Check | None = None


@dataclass
class Block:
    """A scope inside a statement list: the body of ``with oxide.unsafe():`` or one copy of a
    ``static_range`` loop's body (``unrolled``: its variable). What an assert or an early
    return inside establishes does not hold after it. The bounds-elimination pass reads it and
    splices its body into the enclosing list."""

    body: list[Stmt]
    loc: Loc
    unrolled: str | None = None
    # a compile-time `if`'s branch (`if T is f64:`): what it establishes holds after it too
    keeps_facts: bool = False


@dataclass
class Return:
    value: Expr | None
    loc: Loc


@dataclass
class ExprStmt:
    value: Expr
    loc: Loc


@dataclass
class ArrayDecl:
    """Allocates the array local ``name`` (shared memory or per-thread local memory)."""

    name: str
    ty: Type
    loc: Loc


@dataclass
class Check:
    """``assert``: when ``cond`` is false, the kernel reports ``site`` and the thread ends.
    ``hoistable``: it stands in a kernel's prefix, where the launch-preconditions pass may move
    it to the runtime."""

    cond: Expr
    site: int
    loc: Loc
    hoistable: bool = False


@dataclass
class Break:
    loc: Loc


@dataclass
class Continue:
    loc: Loc


Stmt = Union[Assign, Store, If, While, Block, Return, ExprStmt, Break, Continue, ArrayDecl, Check]


@dataclass
class Param:
    name: str
    ty: Type


@dataclass
class Function:
    symbol: str
    python_name: str
    file: str
    params: list[Param]
    ret: Type
    body: list[Stmt]
    locals: dict[str, Type]
    is_kernel: bool
    line: int
    specialization: dict[str, str] = field(default_factory=dict)
    export: bool = False  # C linkage under ``symbol``, callable from CUDA C++ (@device(export=))
    launch_bounds: int | None = None  # most threads per block the kernel is launched with
    max_registers: int | None = None
    # kernels: whether a tensor parameter gives it an index32 instance (lower/index32.py);
    # @kernel(index32=False) keeps the one as written (half the compile time of the kernel)
    index32: bool = True
    # kernels: conditions the runtime checks before the launch (the manifest's preconditions)
    preconditions: list[LaunchCondition] = field(default_factory=list)
    # for the bounds-elimination pass: how often the source assigns each name (a name assigned
    # once keeps its value), and the error sites reserved for the grid limits its proofs may
    # assume (kernels), by axis
    assign_counts: dict[str, int] = field(default_factory=dict)
    grid_sites: dict[str, int] = field(default_factory=dict)
    # kernels: reaches grid.sync(), so the runtime launches it cooperatively (the manifest's flag)
    cooperative: bool = False
    # launch extents that must be 1 for this function's disjoint writes (index_1d() leaves out
    # y and z): extent ("block.dim.y") -> the write that needs it, its line and column
    # (passes/disjoint_launch_shape.py)
    unit_extents: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    # kernels split by passes/launch_instances.py: this one's body is the checked copy (the
    # passes that version fast code leave it as written), and ``fast_symbol`` is the entry point
    # of the copy proven under launch-invariant facts, which the runtime launches instead when
    # ``fast_condition`` (those facts in the launch-precondition encoding) holds
    fast_symbol: str = ""
    fast_condition: list[Any] | None = None
    # the fast instance of the kernel ``fast_of`` names (the same Python kernel)
    fast_of: str = ""

    @property
    def checked_copy(self) -> bool:
        """The body is a split kernel's checked copy: it runs only when a check may fail."""
        return bool(self.fast_symbol)


@dataclass
class ExternFunction:
    """A CUDA C++ ``extern "C" __device__`` function declared by an ``@oxide.extern`` stub."""

    symbol: str
    params: list[Param]
    ret: Type
    sources: list[str]  # absolute paths of the C++ inputs that define it
    file: str  # the stub's file and line, and the first call site, for link errors
    line: int
    call_file: str = ""
    call_line: int = 0
    # a C++ template instance ("my_fn<float>") that ``symbol``, an extern "C" wrapper oxide
    # generates into the first of ``sources``, calls; empty for a plain extern "C" function
    cpp_template: str = ""

    @property
    def passes_halves(self) -> bool:
        """Whether an ``f16``/``bf16`` crosses by value: C++'s ``__half``/``__nv_bfloat16`` are
        2-byte structs (PTX ``.b8 [2]``) where the Python side has a ``.b16`` scalar, so the call
        goes through a generated shim that passes the bits as ``unsigned short``."""
        return is_half_float(self.ret) or any(is_half_float(p.ty) for p in self.params)

    @property
    def call_symbol(self) -> str:
        """The C symbol the Python side calls: the shim's when ``passes_halves``."""
        return f"__ox_h16_{self.symbol}" if self.passes_halves else self.symbol


@dataclass
class Program:
    """Every function one module's kernels need, kernels first, plus the check sites."""

    functions: list[Function]
    externs: list[ExternFunction] = field(default_factory=list)
    extern_kernels: list[ExternFunction] = field(default_factory=list)  # CUDA C++ __global__ stubs
    error_sites: list[ErrorSite] = field(default_factory=list)  # where device-side checks can fail
    arrays: list[ModuleArrayDecl] = field(default_factory=list)  # module-level constant/global memory


def statements(stmts: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of ``stmts`` and of the bodies nested in them, each before its body."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from statements(s.then)
            yield from statements(s.orelse)
        elif isinstance(s, While):
            yield from statements(s.body)
            yield from statements(s.step)
        elif isinstance(s, Block):
            yield from statements(s.body)


def statement_roots(s: Stmt) -> list[Expr]:
    """The expressions of statement ``s`` itself (not of the bodies nested in it)."""
    if isinstance(s, Store):
        return [s.view, s.index, s.value]
    if isinstance(s, (Assign, ExprStmt)) or isinstance(s, Return) and s.value is not None:
        return [s.value]  # type: ignore[list-item]
    if isinstance(s, (If, While, Check)):
        return [s.cond]
    return []
