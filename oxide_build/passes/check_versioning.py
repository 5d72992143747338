"""Check versioning: a counted loop whose view indices move with its variable, where nothing
proves them in range (``for j in range(NY): A[i * NY + j]`` under ``if i < NX``, with ``NX`` and
``NY`` arguments the compiler cannot tie to ``len(A)``), runs an unchecked copy when one test
before the loop shows every index it can take in range, and the checked loop otherwise.

For an innermost ``for j in range(start, stop, s)`` (``s`` a constant >= 1, ``j`` not assigned in
the body, ``start`` free of loads and calls: arithmetic of arguments, ``thread.idx``, ``warp.lane()``
and the like, evaluated again in the test) and a
checked load or store ``v[e]`` in it, with ``v`` and every other name in ``e`` unchanged by the
loop and ``e`` built of ``+``, ``-``, ``*`` by a loop-invariant value, negation and integer casts
over ``j``: ``e`` is linear in ``j`` modulo its width, ``e(j) = A + B·(j - start)`` with ``A =
e(start)`` and ``B = e(start + 1) - e(start)`` computed as the machine computes them. The test
(in i64, before the loop) asks ``0 <= stop - 1 - start < 2**31``, then with ``D`` the last value
``j`` takes less ``start`` (``stop - 1 - start`` for step 1, else its largest multiple of ``s``:
every ``j`` is ``start`` plus a multiple of ``s`` in ``[0, D]``; for ``s > 1`` also
``start + D + s`` within ``j``'s type, so that ``j`` cannot wrap past ``stop``), ``|B| < 2**31`` and both
ends, ``A`` and ``A + B·D`` (exact in i64 then), within ``[0, len(v))`` and within the index
type; the ends of a linear function bound every value between them, so no index the loop takes
is out of range and none wrapped. Each widening cast of a sub-expression that moves with ``j``
adds the same test of that sub-expression against its own type's range (it did not wrap, so
the widened value is the exact one).

When the test holds, no check of those accesses could fail, so dropping them changes nothing
observable; when it fails (or the loop runs no trip), the original loop runs with every check,
and a failing access is reported exactly as without the pass. An index that does not move with
``j`` and reads nothing the loop assigns (``tmp[i] += a[i * N + j]``) is tested as it is, ``0 <=
e < len(v)``, before the loop. A derived induction variable — ``col += inc`` as a statement of
the body's own, its only assignment there, ``inc`` the same every trip, no ``continue`` — stands
for ``col + (j - start) * inc`` in the indices before that statement and ``col + (j - start + 1)
* inc`` after it (for a step of 1), ``col`` then being its value at the loop's entry, which the
test reads. The other checks stay in both copies.

A loop is left alone when its body holds a loop, a call of a device function or a convergent
intrinsic (barriers must not end up under the test), or is larger than ``max_body_size`` IR
nodes (the pass doubles it). It runs after the passes that lint barriers and uniformity, which
so see the source's control flow.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, fields, is_dataclass
from typing import Iterator

from ..intrinsics import Role, has_role, intrinsic_info
from ..ir import nodes as ir
from ..ir.printer import print_expr
from ..ir.ops import BinaryOp, CompareOp, LogicOp
from ..ir.types import BOOL, I64, ArrayType, ScalarType, ViewType, as_scalar

__all__ = ["CheckVersioning"]

_LIMIT = 1 << 31


@dataclass(frozen=True)
class CheckVersioning:
    name: str = "check-versioning"
    max_body_size: int = 2048

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            if not fn.checked_copy:  # a split kernel's checked copy runs when a check may fail
                fn.body = self._block(fn.body)
        return program

    def _block(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.If) and s.launch_versioned:
                s.then = self._block(s.then)  # the else branch runs when a length is short: a check fails there
            elif isinstance(s, ir.If):
                s.then, s.orelse = self._block(s.then), self._block(s.orelse)
            elif isinstance(s, ir.Block):
                s.body = self._block(s.body)
            elif isinstance(s, ir.While):
                if any(isinstance(x, ir.While) for x in ir.statements(s.body)):
                    s.body = self._block(s.body)
                else:
                    versioned = self._version(s)
                    if versioned is not None:
                        out.append(versioned)
                        continue
            out.append(s)
        return out

    def _version(self, loop: ir.While) -> ir.If | None:
        r = loop.range
        if r is None or r.rebinds or not (isinstance(r.step, ir.Const) and type(r.step.value) is int and r.step.value >= 1):
            return None
        step = r.step.value
        cond = loop.cond  # j < $stop: the stop as the loop evaluated it, before its first trip
        if not (isinstance(cond, ir.Compare) and cond.op == CompareOp.LT and isinstance(cond.left, ir.Var)
                and cond.left.name == r.var and isinstance(cond.right, ir.Var)):
            return None
        if not ir.is_pure(r.start, _position) or _depends(r.start, r.var):
            return None
        body = [*loop.body, *loop.step]
        size = 0
        for s in ir.statements(body):
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    size += 1
                    if isinstance(x, ir.Call) or isinstance(x, ir.Intrinsic) and _convergent(x):
                        return None
        if size > self.max_body_size:
            return None
        assigned = {s.name for s in ir.statements(body) if isinstance(s, ir.Assign)}
        if cond.right.name in assigned or any(isinstance(x, ir.Var) and x.name in assigned for x in ir.subexpressions(r.start)):
            return None
        loc = loop.loc
        start64 = _i64(copy.deepcopy(r.start), loc)
        raw = _sub(_sub(_i64(copy.deepcopy(cond.right), loc), _const(1, loc), loc), start64, loc)  # stop - 1 - start
        tests: list[ir.Expr] = [_cmp(CompareOp.GE, raw, _const(0, loc), loc), _cmp(CompareOp.LT, raw, _const(_LIMIT, loc), loc)]
        # D: the last value j takes, less start (for step s, the largest multiple of s <= raw;
        # raw >= 0 there, so // is the floor), within [0, raw]
        span = raw if step == 1 else ir.BinOp(
            BinaryOp.MUL, ir.BinOp(BinaryOp.FLOOR_DIV, copy.deepcopy(raw), _const(step, loc), I64, loc),
            _const(step, loc), I64, loc)
        if step > 1:
            # the last j plus s within j's type: else j wraps past stop and the loop goes on
            # with values outside [start, start + D] (a step of 1 stops at stop <= the maximum)
            top = min(_type_bounds(r.ty)[1], (1 << 63) - 1)
            tests.append(_cmp(CompareOp.LE, copy.deepcopy(start64), _sub(_const(top - step, loc), copy.deepcopy(span), loc), loc))
        # locals the body assigns once, as a statement of its own: their value stands for them
        # in the accesses of later statements (the value's names do not change in the loop)
        counts: dict[str, int] = {}
        for st in ir.statements(body):
            if isinstance(st, ir.Assign):
                counts[st.name] = counts.get(st.name, 0) + 1
        defs = {st.name: (t, st.value) for t, st in enumerate(loop.body)
                if isinstance(st, ir.Assign) and counts[st.name] == 1 and st.name != r.var}
        derived = _derived(loop, r, defs, assigned) if step == 1 else {}
        for name in derived:
            del defs[name]
        versioned: list[int] = []
        for n, (at, access) in enumerate(_checked_accesses(loop)):
            view, index = _view_index(access)
            index = _expanded(index, defs, at)
            if derived and any(_depends(index, name) for name in derived):
                # a derived variable at trip j: its value at the loop's entry (what the test
                # reads) plus its increment once for every trip before (and, after the
                # increment's statement, including) this one
                for name, (t, inc) in derived.items():
                    index = _substituted(index, name, _derived_value(name, inc, r, 1 if at > t else 0, loc))
                scope = assigned - derived.keys()
            else:
                scope = assigned
            length = _length(view, assigned, loc)
            if length is None:
                continue
            if not _depends(index, r.var) and isinstance(as_scalar(index.ty), ScalarType) \
                    and as_scalar(index.ty).kind in ("int", "uint"):  # type: ignore[union-attr]
                # the same on every trip: tested once, before the loop, as it is (LLVM does not
                # hoist the check out of the loop when the loop's other checks are gone)
                if _invariant(index, scope):
                    at_start = _i64(copy.deepcopy(index), loc)
                    tests += [_cmp(CompareOp.GE, at_start, _const(0, loc), loc),
                              _cmp(CompareOp.LT, copy.deepcopy(at_start), length, loc)]
                    versioned.append(n)
                continue
            if not _depends(index, r.var) or not isinstance(index.ty, ScalarType) or index.ty.kind not in ("int", "uint"):
                continue
            items: list[tuple[ir.Expr, ir.Expr, ir.Expr]] = []  # (expression, lowest, highest)
            if not _linear(index, r.var, scope, items):
                continue
            low, high = _type_bounds(index.ty)
            items.append((index, _const(max(low, 0), loc), _min(_const(high, loc), _sub(length, _const(1, loc), loc), loc)))
            for e, lo, hi in items:
                tests += _item_tests(e, lo, hi, r, span, loc)
            versioned.append(n)
        if not versioned:
            return None
        fast = copy.deepcopy(loop)
        for n, (_, access) in enumerate(_checked_accesses(fast)):
            if n in versioned:
                access.check_site = None
        # an access read and written (out[i] += ...) asks the same of its index twice
        unique = list({print_expr(t): t for t in tests}.values())
        return ir.If(ir.BoolOp(LogicOp.AND, unique, BOOL, loc), [fast], [loop], loc, check_versioned=True)


# the IR's own index markers (lower/intrinsics.py): an array's flattened index and a checked one,
# plain arithmetic (and a check) with no barrier in them
_INDEX_MARKERS = frozenset({"flat_index", "checked_index"})


def _convergent(x: ir.Intrinsic) -> bool:
    if x.name in _INDEX_MARKERS:
        return False
    info = intrinsic_info(x.name)
    return info is None or info.convergent


def _item_tests(e: ir.Expr, lo: ir.Expr, hi: ir.Expr, r: ir.ForRange, span: ir.Expr, loc: ir.Loc) -> list[ir.Expr]:
    """``lo <= e(j) <= hi`` for every ``j`` of the loop, given ``0 <= span < 2**31``."""
    assert isinstance(e.ty, ScalarType)
    first = _substituted(e, r.var, r.start)
    second = _substituted(e, r.var, ir.BinOp(BinaryOp.ADD, copy.deepcopy(r.start), ir.Const(1, r.ty, loc), r.ty, loc))
    a = _i64(first, loc)
    b = _i64(ir.BinOp(BinaryOp.SUB, second, copy.deepcopy(first), e.ty, loc), loc)  # B, wrapped as the machine does
    if e.ty.kind == "uint" and e.ty.bits < 64:
        b = _signed_narrow(b, e.ty.bits, loc)
    end = ir.BinOp(BinaryOp.ADD, copy.deepcopy(a), ir.BinOp(BinaryOp.MUL, copy.deepcopy(b), copy.deepcopy(span), I64, loc), I64, loc)
    return [
        _cmp(CompareOp.GT, copy.deepcopy(b), _const(-_LIMIT, loc), loc), _cmp(CompareOp.LT, b, _const(_LIMIT, loc), loc),
        _cmp(CompareOp.GE, a, copy.deepcopy(lo), loc), _cmp(CompareOp.LE, copy.deepcopy(a), copy.deepcopy(hi), loc),
        _cmp(CompareOp.GE, copy.deepcopy(end), lo, loc), _cmp(CompareOp.LE, end, hi, loc),
    ]


def _signed_narrow(b: ir.Expr, bits: int, loc: ir.Loc) -> ir.Expr:
    """``b`` (an i64 holding an unsigned ``bits``-bit value) as the signed value of those bits."""
    top = _const(1 << (bits - 1), loc)
    wrapped = _sub(copy.deepcopy(b), _const(1 << bits, loc), loc)
    return ir.Select(_cmp(CompareOp.GE, b, top, loc), wrapped, copy.deepcopy(b), I64, loc)


Access = ir.ViewLoad | ir.Store | ir.Intrinsic


def _checked_accesses(loop: ir.While) -> Iterator[tuple[int, Access]]:
    """The checked loads and stores of ``loop`` (also those of an intrinsic that accesses one
    element, ``cache.load(x, i, "cs")``: view and index first, as bounds elimination reads
    them), with the position of the statement of its body (or step) that holds each, in a
    fixed order (the same in a copy)."""
    for at, top in enumerate([*loop.body, *loop.step]):
        for s in ir.statements([top]):
            if isinstance(s, ir.Store) and s.check_site is not None:
                yield at, s
            for root in ir.statement_roots(s):
                for x in ir.subexpressions(root):
                    if isinstance(x, ir.ViewLoad) and x.check_site is not None \
                            or isinstance(x, ir.Intrinsic) and _element_intrinsic(x):
                        yield at, x


def _element_intrinsic(x: ir.Intrinsic) -> bool:
    if x.check_site is None or x.name in _INDEX_MARKERS or len(x.args) < 2:
        return False
    info = intrinsic_info(x.name)
    return info is not None and info.vector_lanes is None and isinstance(x.args[0].ty, (ViewType, ArrayType))


def _derived(loop: ir.While, r: ir.ForRange, defs: dict[str, tuple[int, ir.Expr]],
             assigned: set[str]) -> dict[str, tuple[int, ir.Expr]]:
    """The body's derived induction variables: ``col += inc`` as a statement of the body's own
    (so once every trip), its only assignment there, ``inc`` the same on every trip; name ->
    (the statement's position, inc). None in a body with ``continue`` (a trip that skips the
    increment), nor one that another local's value reads (its value there depends on where)."""
    if any(isinstance(s, ir.Continue) for s in ir.statements(loop.body)):
        return {}
    out: dict[str, tuple[int, ir.Expr]] = {}
    for name, (t, value) in defs.items():
        ty = as_scalar(value.ty)
        if not (isinstance(value, ir.BinOp) and value.op == BinaryOp.ADD and ty is not None
                and ty.kind in ("int", "uint") and name != r.var):
            continue
        for own, inc in ((value.left, value.right), (value.right, value.left)):
            if isinstance(own, ir.Var) and own.name == name and own.ty == value.ty and inc.ty == value.ty \
                    and _invariant(inc, assigned):
                out[name] = (t, inc)
                break
    for name in list(out):
        if any(_depends(value, name) for other, (_, value) in defs.items() if other != name):
            del out[name]
    return out


def _derived_value(name: str, inc: ir.Expr, r: ir.ForRange, extra: int, loc: ir.Loc) -> ir.Expr:
    """``name + (j - start + extra) * inc`` in name's type, as the machine computes it after
    that many increments (a step of 1)."""
    ty = inc.ty
    assert isinstance(ty, ScalarType)
    trips: ir.Expr = ir.BinOp(BinaryOp.SUB, ir.Var(r.var, r.ty, loc), copy.deepcopy(r.start), r.ty, loc)
    if extra:
        trips = ir.BinOp(BinaryOp.ADD, trips, ir.Const(extra, r.ty, loc), r.ty, loc)
    if r.ty != ty:
        trips = ir.Cast(trips, ty, loc)
    return ir.BinOp(BinaryOp.ADD, ir.Var(name, ty, loc), ir.BinOp(BinaryOp.MUL, trips, copy.deepcopy(inc), ty, loc), ty, loc)


def _view_index(access: Access) -> tuple[ir.Expr, ir.Expr]:
    if isinstance(access, ir.Intrinsic):
        return access.args[0], access.args[1]
    return access.view, access.index


def _expanded(index: ir.Expr, defs: dict[str, tuple[int, ir.Expr]], at: int) -> ir.Expr:
    """``index`` with the locals assigned before statement ``at`` replaced by their values."""
    for _ in range(8):
        names = {x.name for x in ir.subexpressions(index) if isinstance(x, ir.Var) and x.name in defs and defs[x.name][0] < at}
        if not names:
            break
        for name in names:
            index = _substituted(index, name, defs[name][1])
    return index


def _length(view: ir.Expr, assigned: set[str], loc: ir.Loc) -> ir.Expr | None:
    """The length a check of ``view`` compares with, when ``view`` is the same object on every
    trip: a 1-D view's ``len``, a 1-D array's element count."""
    if isinstance(view, ir.Var) and view.name in assigned:
        return None
    if isinstance(view, ir.Var) and isinstance(view.ty, ViewType) and view.ty.ndim == 1:
        return ir.ViewLen(view, I64, loc)
    if isinstance(view, (ir.Var, ir.ModuleArray)) and isinstance(view.ty, ArrayType) and view.ty.shape is not None \
            and len(view.ty.shape) == 1:
        return _const(view.ty.shape[0], loc)
    return None


def _depends(e: ir.Expr, var: str) -> bool:
    return any(isinstance(x, ir.Var) and x.name == var for x in ir.subexpressions(e))


def _position(e: ir.Expr) -> bool:
    """``e`` is the thread's lane or warp (``warp.lane()``): the same wherever it is evaluated."""
    return has_role(e, Role.POSITION) and not e.args  # type: ignore[union-attr]


def _invariant(e: ir.Expr, assigned: set[str]) -> bool:
    return ir.is_pure(e, _position) and not any(isinstance(x, ir.Var) and x.name in assigned for x in ir.subexpressions(e))


def _linear(e: ir.Expr, var: str, assigned: set[str], items: list[tuple[ir.Expr, ir.Expr, ir.Expr]]) -> bool:
    """``e`` is linear in ``var`` modulo its width, or invariant; ``items`` gets the widened
    sub-expressions that must not have wrapped."""
    if not _depends(e, var):
        return _invariant(e, assigned)
    if isinstance(e, ir.Var):
        return True
    if isinstance(e, ir.BinOp) and e.op in (BinaryOp.ADD, BinaryOp.SUB):
        return _linear(e.left, var, assigned, items) and _linear(e.right, var, assigned, items)
    if isinstance(e, ir.BinOp) and e.op == BinaryOp.MUL:
        if _depends(e.left, var) and _depends(e.right, var):
            return False
        return _linear(e.left, var, assigned, items) and _linear(e.right, var, assigned, items)
    if isinstance(e, ir.Neg):
        return _linear(e.operand, var, assigned, items)
    if isinstance(e, ir.Cast):
        src, dst = e.operand.ty, e.ty
        if not (isinstance(src, ScalarType) and src.kind in ("int", "uint") and dst.kind in ("int", "uint")):
            return False
        if dst.bits > src.bits:
            low, high = _type_bounds(src)
            items.append((e.operand, _const(low, e.loc), _const(high, e.loc)))
        return _linear(e.operand, var, assigned, items)
    return False


def _type_bounds(ty: ScalarType) -> tuple[int, int]:
    if ty.kind == "uint":
        return 0, min((1 << ty.bits) - 1, (1 << 62))
    return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1


def _substituted(e: ir.Expr, var: str, value: ir.Expr) -> ir.Expr:
    """A copy of ``e`` with every ``var`` replaced by a copy of ``value``."""
    if isinstance(e, ir.Var) and e.name == var:
        return copy.deepcopy(value)
    out = copy.deepcopy(e)
    _replace_in(out, var, value)
    return out


def _replace_in(node: object, var: str, value: ir.Expr) -> None:
    for f in fields(node):  # type: ignore[arg-type]
        v = getattr(node, f.name)
        if isinstance(v, ir.Var) and v.name == var:
            setattr(node, f.name, copy.deepcopy(value))
        elif isinstance(v, list):
            for k, item in enumerate(v):
                if isinstance(item, ir.Var) and item.name == var:
                    v[k] = copy.deepcopy(value)
                elif is_dataclass(item) and not isinstance(item, type):
                    _replace_in(item, var, value)
        elif is_dataclass(v) and not isinstance(v, (type, ir.Loc)) and not isinstance(v, (ScalarType, ViewType)):
            _replace_in(v, var, value)


def _i64(e: ir.Expr, loc: ir.Loc) -> ir.Expr:
    return e if e.ty == I64 else ir.Cast(e, I64, loc)


def _const(value: int, loc: ir.Loc) -> ir.Expr:
    return ir.Const(value, I64, loc)


def _sub(a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> ir.Expr:
    return ir.BinOp(BinaryOp.SUB, a, b, I64, loc)


def _min(a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> ir.Expr:
    return ir.Select(_cmp(CompareOp.LT, a, b, loc), copy.deepcopy(a), copy.deepcopy(b), I64, loc)


def _cmp(op: CompareOp, a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> ir.Expr:
    return ir.Compare(op, a, b, I64, BOOL, loc)
