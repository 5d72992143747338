"""What an intrinsic may ask of the compiler: the two narrow interfaces its registry entry's
functions receive, the way Triton hands its builtins ``_semantic``.

- ``TypingContext``: what a typing function (``IntrinsicInfo.typing``) may ask of the
  frontend translating the call: translate and convert its arguments, read compile-time
  values, make located errors and bounds-check sites, and read the few facts of the place of
  the call it needs (bounds checks on, inside ``unsafe``, under a divergent condition).
  ``frontend/translate.py``'s ``FunctionTranslator`` implements it.
- ``LoweringContext``: what a lowering function (``IntrinsicInfo.lowering``) may ask of the
  LLVM lowering of the function it is in: the LLVM values of IR expressions, the builder at the
  current position, the module's declarations (LLVM intrinsics, the failure path) and the
  backend's dialect. ``lower/llvm.py``'s ``FunctionLowering`` implements it.

No intrinsic module imports ``frontend/`` or ``lower/`` (tests/test_imports.py checks it):
what an intrinsic needs of them is a member here, so that the translator and the lowering can
change inside without touching the intrinsics. A new need is a new member here, implemented
by both sides' classes (mypy checks that they still implement these protocols where the
registry calls the entry's functions).

The annotations name llvmlite's types, but nothing here imports llvmlite when it runs: building
the IR (``compile.build_ir``) never loads it (``lazy_llvm.py``).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from llvmlite import ir as ll

    from oxide.errors import CompileError
    from oxide.lang.types import ScalarType

    from ..ir import nodes as ir
    from ..ir.types import Type, VectorType, ViewType

__all__ = ["TypingContext", "LoweringContext", "LoweredView"]


class TypingContext(Protocol):
    """The frontend, as the typing of an intrinsic call sees it."""

    # ---- the place of the call ----------------------------------------------------------
    @property
    def bounds_check(self) -> bool:
        """Whether the function is compiled with bounds checks (``@kernel(bounds_check=)``)."""

    @property
    def unsafe_depth(self) -> int:
        """How many ``with ox.unsafe():`` blocks enclose the call (0: none)."""

    @property
    def divergent_depth(self) -> int:
        """How many enclosing conditions depend on a value that differs between the threads
        of a block (0: every thread of the block reaches the call)."""

    @property
    def declared_arrays(self) -> set[str]:
        """The locals bound to ``ox.shared.array(...)`` / ``ox.local.array(...)``."""

    # ---- errors and sites -----------------------------------------------------------------
    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        """A compile error located at ``node`` (raise it)."""

    def loc(self, node: ast.AST) -> ir.Loc:
        """The IR location of ``node``."""

    def bounds_site(self, node: ast.AST, what: str) -> int:
        """A new bounds-check error site at ``node`` (``what``: the index checked, as the
        error message names it); its id goes on the ``ir.Intrinsic``'s ``check_site`` or a
        ``checked_index``."""

    def check_site(self, node: ast.Subscript | ast.Call, view: ir.Expr, index: ir.Expr, what: str) -> int | None:
        """The bounds-check site of an element access ``view[index]``; None where no check
        is needed (checks off, or an index the frontend proves in range)."""

    # ---- arguments ----------------------------------------------------------------------
    def expr(self, node: ast.expr) -> ir.Expr:
        """The IR of an argument expression."""

    def materialize(self, value: ir.Expr) -> ir.Expr:
        """``value`` with an untyped literal given its default type."""

    def convert(self, value: ir.Expr, ty: ScalarType, node: ast.AST) -> ir.Expr:
        """``value`` converted to ``ty`` (explicitly: any number converts)."""

    def convert_implicit(self, value: ir.Expr, ty: Type, node: ast.AST, what: str) -> ir.Expr:
        """``value`` as ``ty`` where Python would not convert it (an argument, a store):
        a located error for a lossy conversion; ``what`` names the place in it."""

    def unify(self, left: ir.Expr, right: ir.Expr, node: ast.AST, op: str) -> tuple[ir.Expr, ir.Expr, ScalarType]:
        """Both operands converted to their common type (binary-operator promotion)."""

    def truth(self, value: ir.Expr, node: ast.AST) -> ir.Expr:
        """``value`` as a condition (a bool)."""

    def index_expr(self, node: ast.expr, container: Type | None = None) -> ir.Expr:
        """An index into ``container`` (a 64-bit integer, tuples flattened for tensors)."""

    def refuse_fp8(self, node: ast.AST, what: str, *types: ScalarType) -> None:
        """A located error if one of ``types`` is an fp8 type, which ``what`` cannot take."""

    def refuse_vector_store(self, func: ast.Attribute, node: ast.Call, vt: ViewType, index: ir.Expr) -> None:
        """A located error for a vector store into a read-only view."""

    # ---- compile-time values ------------------------------------------------------------
    def const_int(self, node: ast.expr) -> int | None:
        """The compile-time integer value of ``node``; None if it has none."""

    def const_str(self, node: ast.expr) -> str | None:
        """The compile-time string value of ``node``; None if it has none."""

    def not_constant_hint(self, node: ast.expr) -> str:
        """Why ``node`` has no compile-time value, for an error's hint."""

    def element_type(self, node: ast.expr) -> ScalarType:
        """The scalar type ``node`` names (``f32``, ``ox.u8``, a type variable)."""

    def array_element_type(self, node: ast.expr) -> ScalarType | VectorType:
        """The element type of an array declaration: a scalar type or a vector type."""


class LoweredView(Protocol):
    """A view as the lowering holds it: its data pointer, its length and element type."""

    @property
    def ptr(self) -> ll.Value: ...

    @property
    def length(self) -> ll.Value: ...

    @property
    def elem(self) -> ScalarType: ...

    @property
    def read_only(self) -> bool:
        """Nothing writes it while the kernel runs (its loads may be marked invariant)."""


class LoweringContext(Protocol):
    """The LLVM lowering of one function, as the lowering of an intrinsic sees it."""

    @property
    def b(self) -> ll.IRBuilder:
        """The builder, positioned where the intrinsic's code goes."""

    @property
    def llfn(self) -> ll.Function:
        """The LLVM function being lowered (for new basic blocks)."""

    @property
    def module(self) -> ll.Module:
        """The LLVM module being built (for globals and metadata)."""

    # ---- the backend ----------------------------------------------------------------------
    @property
    def libnvvm(self) -> bool:
        """Whether libNVVM compiles this module (it knows fewer LLVM intrinsics)."""

    @property
    def nvvm_dialect(self) -> bool:
        """Whether the lowering writes libNVVM's dialect of LLVM IR (``lower/dialect.py``)."""

    @property
    def fast_math(self) -> bool:
        """Whether the module is compiled with ``fast_math``."""

    @property
    def cpu(self) -> bool:
        """Whether the lowering writes host code for the CPU device (an intrinsic's
        ``cpu_lowering`` runs then; ``lower/dialect.py``)."""

    def cpu_runtime(self, name: str) -> ll.Function:
        """The declaration of a function of the CPU device's scheduler (``oxide_build/cpu_abi.py``
        ``RUNTIME_FUNCTIONS``: barriers, the warp exchange)."""

    def sync_site(self, loc: ir.Loc) -> ll.Value:
        """The i32 id of the barrier or warp operation at ``loc``, which the CPU device's
        synccheck messages name by its file:line."""

    # ---- values -------------------------------------------------------------------------
    def expr(self, e: ir.Expr) -> ll.Value:
        """The LLVM value of an IR expression."""

    def index(self, e: ir.Expr) -> ll.Value:
        """The LLVM value of an index expression (32-bit where the index32 instance allows)."""

    def view(self, e: ir.Expr) -> LoweredView:
        """The pointer and length of a view-valued expression."""

    def tensor_map(self, e: ir.Expr) -> tuple[ll.Value, ll.Value]:
        """A tensor-map parameter: (its generic address, its packed form)."""

    def sreg(self, name: str) -> ll.Value:
        """A PTX special register (``"tid.x"``, ``"laneid"``)."""

    def elem_type(self, elem: ScalarType) -> ll.Type:
        """The LLVM type of an element of ``elem`` in memory."""

    def element_address(self, view: LoweredView, index: ll.Value) -> ll.Value:
        """The address of element ``index`` of ``view``."""

    def temp(self, ty: ll.Type) -> ll.Value:
        """A fresh stack slot of ``ty`` (an ``alloca`` in the entry block)."""

    # ---- code -----------------------------------------------------------------------------
    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        """The module's declaration of an LLVM intrinsic (``llvm.nvvm.*``), made once."""

    def fail_function(self, ends_thread: bool = True) -> ll.Function:
        """The function that reports a failed check (site, value, bound) to the host."""

    def bounds_check(self, index: ll.Value, length: ll.Value, site: int) -> None:
        """``index < length``, or the failure path of error site ``site``."""

    def branch_weights(self, branch: ll.Instruction, weights: list[int]) -> None:
        """Branch weights on ``branch``, where the dialect keeps them."""

    def fneg(self, value: ll.Value) -> ll.Value:
        """``-value`` of a float, in the dialect's form."""

    def freeze(self, value: ll.Value) -> ll.Value:
        """``freeze value``, in the dialect's form."""

    def mark_invariant(self, load: ll.Instruction, view: LoweredView) -> None:
        """Marks a load of a read-only view invariant for the kernel."""

    def volatile_load(self, ptr: ll.Value, ty: ll.Type, align: int) -> ll.Value:
        """``load volatile ty, ptr``: a read that reaches memory every time (a poll)."""

    def volatile_store(self, value: ll.Value, ptr: ll.Value, align: int) -> None:
        """``store volatile value, ptr``."""
