"""What every concern of the translation of one function instance shares: its state (the
parameters, locals and their types, the loop, block and divergence depths), the located errors, and ``visit``, which turns any exception that is not already a
``CompileError`` into a ``CompileError`` at the node being translated, so a compiler bug still
points at user source instead of showing our traceback.

``FunctionTranslator`` (translate.py) is one class built in layers, one module per concern,
each a subclass of the one below it and free to use what is below it:
context → constants → names → checks → semantics → indexing → loops → translate.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from oxide.errors import CompileError
from oxide.lang.types import ScalarType
from oxide.runtime.manifest import Precondition

from ..ir import nodes as ir
from ..ir.types import Type
from ..scan import ModuleSource
from ..passes.uniformity import differs_between_threads
from .annotations import TypeVarBinding

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["TranslatorContext"]


class TranslatorContext(ast.NodeVisitor):
    """The state of one function instance's translation, and the errors at its nodes."""

    def __init__(
        self,
        builder: ProgramBuilder,
        module: ModuleSource,
        fdef: ast.FunctionDef,
        typevars: dict[str, TypeVarBinding],
        is_kernel: bool,
        kernel_name: str,
        bounds_check: bool,
    ) -> None:
        self.builder = builder
        self.module = module
        self.fdef = fdef
        self.typevars = typevars
        self.is_kernel = is_kernel
        self.kernel_name = kernel_name
        self.bounds_check = bounds_check
        self.locals: dict[str, Type] = {}
        self.local_decl_line: dict[str, int] = {}
        self.declared_arrays: set[str] = set()  # names bound by ox.shared.array(...) / ox.local.array(...)
        self.params: list[ir.Param] = []
        self.param_names: set[str] = set()
        self.ret: Type | None = None
        self.loop_depth = 0
        self.unsafe_depth = 0
        self.block_depth = 0  # 1 in the function's own body
        self.assign_counts = _count_assignments(fdef)
        self.reassigned_thread_indices: set[str] = set()  # thread.index_1d() names assigned again: plain i64
        self.thread_coordinates: set[str] = set()  # locals assigned once from thread.idx.x, block.dim.y, ...
        self.type_aliases: dict[str, ScalarType] = {}  # `acc_t = ox.acc_type(T)` in the body: C++'s local `using`
        # names with a compile-time value: Constexpr parameters, static_range variables and
        # locals assigned once from a constant (`A1 = 0.319`, `H = 2 * R`), typed by their use
        self.constexprs: dict[str, int | float | bool] = {}
        self.named_constants: set[str] = set()  # the locals among them
        self.block_statements: list[list[ast.stmt]] = []  # of the blocks being translated
        # locals first assigned a bare literal (`acc = 0.0`, `offset = 1`), the typed values of
        # the same kind each one met (operands, assignments, arguments), and the types chosen for
        # them by the previous attempt at this function (ProgramBuilder.translate_function)
        self.literal_locals: set[str] = set()
        # locals first assigned a literal-initialized local (`_c2 = c2`): the name they copy
        self.literal_copies: dict[str, str] = {}
        self.partners: dict[str, list[ScalarType]] = {}
        self.retype: dict[str, ScalarType] = {}
        # (extent, write) pairs already made launch preconditions by a DisjointTensor write
        self.disjoint_extents: set[tuple[str, str]] = set()
        # launch extents that must be 1 for this function's disjoint writes at a ThreadIndex to
        # be one thread's (index_1d() leaves out y and z, index_2d() z): extent -> the write
        self.unit_extents: dict[str, tuple[str, int, int]] = {}  # extent -> (write, line, col)
        # names whose value may differ between the threads of a block, and how many enclosing
        # conditions depend on such values (block.sync() there could deadlock)
        self.thread_dependent: set[str] = set()
        self.divergent_depth = 0
        self.static_loop_depth = 0
        self.positive_names: set[str] = set()  # locals assigned once from block/grid sizes
        self.loop_bindings: set[str] = set()  # loop variables of the loops being translated
        # error sites reserved for the grid limits bounds proofs may assume (kernels), by axis
        self.grid_sites: dict[str, int] = {}
        # launch preconditions the translation itself records (DisjointTensor extents)
        self.preconditions: list[Precondition] = []
        # whether every top-level statement so far left what a later assert means unchanged
        # (such asserts may become launch preconditions: passes/launch_preconditions.py)
        self.prefix_open = is_kernel

    def visit(self, node: ast.AST) -> Any:
        try:
            return super().visit(node)
        except CompileError:
            raise
        except Exception as exc:  # a compiler bug must still point at the user's source
            raise self.module.error(
                node, f"internal compiler error: {type(exc).__name__}: {exc}",
                "please report this at the oxide issue tracker with the kernel source",
            ) from None

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        return self.module.error(node, message, hint)

    def loc(self, node: ast.AST) -> ir.Loc:
        return ir.Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)

    def bounds_site(self, node: ast.AST, what: str) -> int:
        """A new bounds-check error site of this kernel at ``node``."""
        return self.builder.add_error_site("bounds", self.kernel_name, self.module, node, what)

    def expr(self, node: ast.expr) -> ir.Expr:
        result = self.visit(node)
        assert result is not None
        return result  # type: ignore[no-any-return]

    def block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        """A statement list; the visitor's (translate.py), named here for the layers below it
        (the loops)."""
        raise NotImplementedError

    def is_thread_dependent(self, value: ir.Expr) -> bool:
        return differs_between_threads(value, self.thread_dependent)



def _count_assignments(fdef: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(fdef):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.For):
            targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, ast.Name):
                counts[t.id] = counts.get(t.id, 0) + 1
            elif isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
    return counts
