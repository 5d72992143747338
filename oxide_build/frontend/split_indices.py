"""Split indices: a ``DisjointTensor`` written at the digits of a ``ThreadIndex`` split in a mixed
radix (docs/language.md, "Writing a DisjointTensor"):

```python
i = thread.index_1d()
c = i % dim            # digit 0
r = i // dim
l = r % seqlen         # digit 1
b = r // seqlen        # the last quotient
out[b, c, l] = ...     # distinct threads, distinct (b, c, l)
```

Python's ``//`` and ``%`` keep ``q == (q // R) * R + q % R`` for every ``R`` (0 included,
docs/language.md "Integer and float semantics"), so the thread's index is a function of the
digits written, ``i == (b * seqlen + l) * dim + c``: two threads that write one element have one
index, which they do not. That holds when each radix is one value for every thread of the launch
(a kernel's scalar parameter it never assigns, a view parameter's shape, length or stride,
``block.dim`` / ``grid.dim``, constants, and arithmetic, conversions and choices of them); so a
write of a split is checked in kernels only (a device function's parameters may differ per
thread). The indices may also choose between digits by such a uniform condition
(``c = d0 if channel_last else d1``): every assignment of the conditions must give a complete set.
The digits may be written in any order, beside other indices that tell threads apart
(``block.idx.y``, ...); what the split ThreadIndex leaves out of the launch (``index_1d()``: the y
and z extents) must be 1 at launch, as for any DisjointTensor write.

``split_coordinates`` answers for one write: the hardware coordinates the split covers, or None
where the indices are no complete split; ``split_problem`` says why, for the error.
"""
from __future__ import annotations

import ast
import copy
import itertools
from typing import TYPE_CHECKING

from ..ir.types import ThreadIndexType, ViewType
from .annotations import oxide_name

if TYPE_CHECKING:
    from .translate import FunctionTranslator

__all__ = ["looks_split", "split_coordinates", "split_problem"]

_MAX_CHOICES = 4  # uniform conditions that may choose between digits in one write (2**4 cases)
_MAX_DEPTH = 32  # names substituted into one expression


class _NotSplit(Exception):
    """The expression is not one of the forms (the message says what it is instead)."""


def _resolve(tr: FunctionTranslator, node: ast.expr, depth: int = 0) -> ast.expr:
    """``node`` with each local assigned once replaced by its value (parameters, ThreadIndex
    locals and names assigned more than once stay names)."""
    if depth > _MAX_DEPTH:
        raise _NotSplit("too many names to follow")

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:
            ident = name.id
            if (ident in tr.scope.param_names or isinstance(tr.scope.locals.get(ident), ThreadIndexType)
                    or tr.scope.assign_counts.get(ident, 0) != 1):
                return name
            value = _dominating_value(tr, ident)
            return name if value is None else _resolve(tr, value, depth + 1)

    return Substitute().visit(copy.deepcopy(node))  # type: ignore[no-any-return]


def _dominating_value(tr: FunctionTranslator, name: str) -> ast.expr | None:
    """The value of ``name = value``, its one assignment, where that statement stands in a block
    around the statement being translated (so it ran before it on every path: a local read where
    it was not assigned would be 0 instead); None otherwise."""
    for block in tr.scope.block_statements:
        for stmt in block:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id == name):
                return stmt.value
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                return stmt.value
    return None


def _uniform(tr: FunctionTranslator, node: ast.expr) -> bool:
    """Whether every thread of the launch computes one value for ``node`` (resolved)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, bool))
    if isinstance(node, ast.Name):
        if node.id in tr.constants.values:
            return True
        sym = tr.module.symbols.get(node.id)
        if node.id not in tr.scope.locals and sym is not None and sym.kind == "constant":
            return True
        ty = tr.scope.locals.get(node.id)
        return (node.id in tr.scope.param_names and tr.scope.assign_counts.get(node.id, 0) == 0
                and not isinstance(ty, (ViewType, ThreadIndexType)) and ty is not None)
    if isinstance(node, ast.Attribute):  # block.dim.x, grid.dim.y
        parts = (oxide_name(tr.module, node.value) or "").split(".")
        return node.attr in ("x", "y", "z") and parts[-1] == "dim" and parts[0] in ("block", "grid")
    if isinstance(node, ast.Subscript):  # x.shape[k], x.strides[k] of a view parameter
        return (isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "strides")
                and _view_param(tr, node.value.value) and _uniform(tr, node.slice))
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            return _view_param(tr, node.args[0])
        name = oxide_name(tr.module, node.func)
        cast = name in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64") or (
            isinstance(node.func, ast.Name) and node.func.id == "int" and "int" not in tr.module.symbols)
        return cast and len(node.args) == 1 and not node.keywords and _uniform(tr, node.args[0])
    if isinstance(node, ast.BinOp):
        return _uniform(tr, node.left) and _uniform(tr, node.right)
    if isinstance(node, ast.UnaryOp):
        return _uniform(tr, node.operand)
    if isinstance(node, ast.Compare):
        return _uniform(tr, node.left) and all(_uniform(tr, c) for c in node.comparators)
    if isinstance(node, ast.BoolOp):
        return all(_uniform(tr, v) for v in node.values)
    if isinstance(node, ast.IfExp):
        return _uniform(tr, node.test) and _uniform(tr, node.body) and _uniform(tr, node.orelse)
    return False


def _view_param(tr: FunctionTranslator, node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in tr.scope.param_names
            and isinstance(tr.scope.locals.get(node.id), ViewType))


def _choices(node: ast.expr) -> list[ast.expr]:
    """The tests of the conditional expressions in ``node`` (outermost first)."""
    return [n.test for n in ast.walk(node) if isinstance(n, ast.IfExp)]


def _choose(node: ast.expr, decided: dict[str, bool]) -> ast.expr:
    """``node`` with each conditional expression whose test is decided replaced by its side."""
    class Choose(ast.NodeTransformer):
        def visit_IfExp(self, e: ast.IfExp) -> ast.expr:
            key = ast.dump(e.test)
            if key in decided:
                return self.visit(e.body if decided[key] else e.orelse)  # type: ignore[no-any-return]
            out = self.generic_visit(e)
            assert isinstance(out, ast.expr)
            return out

    return Choose().visit(copy.deepcopy(node))  # type: ignore[no-any-return]


def _strip_casts(tr: FunctionTranslator, node: ast.expr) -> ast.expr:
    """``i64(e)`` / ``int(e)`` → ``e`` (widening keeps distinct values distinct)."""
    while (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
           and (oxide_name(tr.module, node.func) in ("i64", "u64")
                or isinstance(node.func, ast.Name) and node.func.id == "int" and "int" not in tr.module.symbols)):
        node = node.args[0]
    return node


# a node of a split: the ThreadIndex (its name or call) and the radices it was divided by, in order
_Node = tuple[str, tuple[str, ...]]


def _node(tr: FunctionTranslator, node: ast.expr) -> tuple[_Node, str] | None:
    """The split node ``node`` is (a ThreadIndex, or quotients of one by uniform radices), and
    the ThreadIndex's axis; None for anything else."""
    node = _strip_casts(tr, node)
    if isinstance(node, ast.Name) and isinstance(tr.scope.locals.get(node.id), ThreadIndexType):
        ty = tr.scope.locals[node.id]
        assert isinstance(ty, ThreadIndexType)
        return (node.id, ()), ty.axis
    if isinstance(node, ast.Call) and oxide_name(tr.module, node.func) == "thread.index_1d" and not node.args:
        return ("thread.index_1d()", ()), "1d"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        inner = _node(tr, node.left)
        if inner is not None and _uniform(tr, node.right):
            (root, path), axis = inner
            return (root, path + (ast.dump(node.right),)), axis
    return None


def _digit(tr: FunctionTranslator, node: ast.expr) -> tuple[str, _Node, str, str] | None:
    """``("rem", q, R, axis)`` for ``q % R`` and ``("node", q, "", axis)`` for a node itself."""
    node = _strip_casts(tr, node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        inner = _node(tr, node.left)
        if inner is not None and _uniform(tr, node.right):
            return "rem", inner[0], ast.dump(node.right), inner[1]
        return None
    found = _node(tr, node)
    return None if found is None else ("node", found[0], "", found[1])


def _complete(digits: list[tuple[str, _Node, str, str]]) -> tuple[str, str] | None:
    """The ThreadIndex (its name and axis) whose value ``digits`` determine, or None."""
    roots = {(d[1][0], d[3]) for d in digits}
    if len(roots) != 1:
        return None
    nodes = {d[1] for d in digits if d[0] == "node"}
    rems = {(d[1], d[2]) for d in digits if d[0] == "rem"}

    def known(q: _Node, depth: int = 0) -> bool:
        if q in nodes:
            return True
        if depth > _MAX_DEPTH:
            return False
        return any(at == q and known((q[0], q[1] + (radix,)), depth + 1) for at, radix in rems)

    root = next(iter(roots))
    return root if known((root[0], ())) else None


def split_coordinates(tr: FunctionTranslator, elts: list[ast.expr], others: list[int]) -> str | None:
    """The axis of the ThreadIndex whose split the indices ``elts`` at positions ``others`` write
    (every assignment of the uniform conditions choosing between digits giving all of its
    digits), or None when they are no complete split."""
    if not tr.is_kernel or not others:
        return None
    try:
        resolved = [_resolve(tr, elts[k]) for k in others]
    except _NotSplit:
        return None
    tests: dict[str, ast.expr] = {}
    for r in resolved:
        for t in _choices(r):
            tests.setdefault(ast.dump(t), t)
    if len(tests) > _MAX_CHOICES or not all(_uniform(tr, t) for t in tests.values()):
        return None
    axis: str | None = None
    for values in itertools.product((False, True), repeat=len(tests)):
        decided = dict(zip(tests, values))
        digits = [_digit(tr, _choose(r, decided)) for r in resolved]
        if any(d is None for d in digits):
            return None
        root = _complete([d for d in digits if d is not None])
        if root is None or (axis is not None and root[1] != axis):
            return None
        axis = root[1]
    return axis


def split_problem(tr: FunctionTranslator, elts: list[ast.expr], others: list[int]) -> str:
    """Why the indices at ``others`` are no complete split (``split_coordinates`` said None), for
    the error: what to change."""
    if not tr.is_kernel:
        return "a device function cannot write a split index (its arguments may differ between threads)"
    try:
        resolved = [_resolve(tr, elts[k]) for k in others]
    except _NotSplit:
        return "its digits are computed through too many names"
    for r in resolved:
        for t in _choices(r):
            if not _uniform(tr, t):
                return f"the choice `{ast.unparse(t)}` may differ between threads"
    first = {ast.dump(t): False for r in resolved for t in _choices(r)}
    for k, r in zip(others, resolved):
        chosen = _strip_casts(tr, _choose(r, first))
        if _digit(tr, chosen) is not None:
            continue
        if isinstance(chosen, ast.BinOp) and isinstance(chosen.op, (ast.Mod, ast.FloorDiv)) \
                and _node(tr, chosen.left) is not None:
            return (f"the radix `{ast.unparse(chosen.right)}` of {ast.unparse(elts[k])!r} may differ between threads "
                    "(a radix is built from constants, scalar parameters the kernel never assigns, view parameters' "
                    "shapes, lengths and strides, block.dim and grid.dim)")
        return (f"{ast.unparse(elts[k])!r} is no digit of a ThreadIndex (q % R or q // R of one, q itself, each digit "
                "assigned once in a block around the write)")
    return ("the digits written do not determine the thread's index: each q % R needs q // R by the same R (or q "
            "itself) among the indices, down to the last quotient")


def looks_split(tr: FunctionTranslator, elts: list[ast.expr]) -> bool:
    """Whether the indices compute a ``%`` or ``//`` (through the names assigned once): a split
    meant, which ``split_problem`` then explains."""
    try:
        resolved = [_resolve(tr, e) for e in elts]
    except _NotSplit:
        return True
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mod, ast.FloorDiv))
               for r in resolved for n in ast.walk(r))
