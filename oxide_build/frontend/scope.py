"""The names table of one function instance's translation: its parameters and return type, its
locals and their types (where each was declared, which are arrays, which are known positive),
the blocks being translated, and what the function's AST says about each name before any of it
is translated (how often it is assigned, where it is read), computed once.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import Type

__all__ = ["Scope", "node_loc", "count_assignments", "assignment_targets"]


@dataclass
class Scope:
    """The names of one function instance and what the translation knows of each."""

    fdef: ast.FunctionDef
    # how many times each name is assigned in the function (a loop variable counts once);
    # a loop renamed to its own scope (loops.py) adds its new name
    assign_counts: dict[str, int] = field(init=False)
    params: list[ir.Param] = field(default_factory=list)
    param_names: set[str] = field(default_factory=set)
    ret: Type | None = None
    locals: dict[str, Type] = field(default_factory=dict)
    local_decl_line: dict[str, int] = field(default_factory=dict)
    declared_arrays: set[str] = field(default_factory=set)  # bound by ox.shared.array(...) / ox.local.array(...)
    positive_names: set[str] = field(default_factory=set)  # locals assigned once from block/grid sizes
    thread_coordinates: set[str] = field(default_factory=set)  # locals assigned once from thread.idx.x, block.dim.y, ...
    type_aliases: dict[str, ScalarType] = field(default_factory=dict)  # `acc_t = ox.acc_type(T)`: C++'s local `using`
    reassigned_thread_indices: set[str] = field(default_factory=set)  # thread.index_1d() names assigned again: plain i64
    block_statements: list[list[ast.stmt]] = field(default_factory=list)  # of the blocks being translated
    block_depth: int = 0  # 1 in the function's own body
    # optional view parameters (Optional[Tensor[f32, 2]]) -> the name of the flag beside each, and
    # those a test proved present where the translation stands (frontend/optional_views.py)
    optional_views: dict[str, str] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    # the Name nodes that read each name, anywhere in the function
    _reads: dict[str, list[ast.Name]] = field(init=False)
    # the ids of every node inside a statement list (kept with the list, so an id stays its own)
    _inside: dict[int, tuple[list[ast.stmt], set[int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.assign_counts = count_assignments(self.fdef)
        self._reads = {}
        for n in ast.walk(self.fdef):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self._reads.setdefault(n.id, []).append(n)

    def read_only_in_current_block(self, name: str) -> bool:
        """Whether every read of ``name`` in the function lies inside the block being translated."""
        stmts = self.block_statements[-1]
        cached = self._inside.get(id(stmts))
        if cached is None or cached[0] is not stmts:
            cached = (stmts, {id(n) for stmt in stmts for n in ast.walk(stmt)})
            self._inside[id(stmts)] = cached
        inside = cached[1]
        return all(id(n) in inside for n in self._reads.get(name, ()))


def node_loc(node: ast.AST) -> ir.Loc:
    """The IR location of ``node`` (its line, and its column counted from 1)."""
    return ir.Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)


def count_assignments(fdef: ast.FunctionDef) -> dict[str, int]:
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


def assignment_targets(body: list[ast.stmt]) -> list[ast.expr]:
    """Every name-like target assigned anywhere in ``body``."""
    out: list[ast.expr] = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                out.extend(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                out.append(node.target)
    expanded: list[ast.expr] = []
    while out:
        t = out.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(t.elts)
        else:
            expanded.append(t)
    return expanded
