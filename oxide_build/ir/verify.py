"""The IR's contract, checked: what every stage may assume of the IR it is given.

- a function with a value returns one on every path (its end is unreachable);
- ``break`` and ``continue`` stand inside a loop;
- names are parameters or declared locals; calls name a function of the program with as many
  arguments as it has parameters;
- types agree: operands with their operation, assigned values with their local, stored values
  with their view, conditions are ``bool``, returned values with the function;
- every check site (``ViewLoad``, ``Store``, ``Intrinsic``, ``Check``) is an error site of the
  program.

``verify_program`` raises ``IRError`` at the first violation. A function that can end
without its value is a mistake in the source and reads as one; anything else is a compiler
bug, reported as such. The frontend runs it on what it built; the pass pipeline after each pass
when ``OXIDE_VERIFY_IR=1`` (the tests set it).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import nodes as ir
from .types import BOOL, ArrayType, StructType, VectorType, ThreadIndexType, TupleType, Type, ViewType, VoidType, as_scalar, type_name

__all__ = ["IRError", "verify_program", "verify_function", "falls_through"]

# callees that are not functions of the program: LLVM/NVVM intrinsics, libdevice
_FOREIGN_PREFIXES = ("llvm.", "__nv_")


@dataclass
class IRError(Exception):
    """A violation of the IR's contract, at ``loc`` in function ``function`` (``file``)."""

    message: str
    function: str
    file: str
    loc: ir.Loc
    hint: str = ""
    user_error: bool = False  # the source is wrong (not the compiler)

    def __str__(self) -> str:
        return f"{self.file}:{self.loc.line}:{self.loc.col}: {self.message}"


def verify_program(program: ir.Program) -> None:
    signatures: dict[str, int] = {f.symbol: len(f.params) for f in program.functions}
    signatures.update({e.symbol: len(e.params) for e in program.externs})
    sites = {site.id for site in program.error_sites}
    for fn in program.functions:
        verify_function(fn, signatures, sites)


def verify_function(fn: ir.Function, signatures: dict[str, int], sites: set[int]) -> None:
    _Verifier(fn, signatures, sites).run()


def falls_through(stmts: list[ir.Stmt]) -> bool:
    """Whether running ``stmts`` can reach their end."""
    for s in stmts:
        if isinstance(s, ir.Return):
            return False
        if isinstance(s, ir.If) and not (falls_through(s.then) or falls_through(s.orelse)):
            return False
        if isinstance(s, ir.Block) and not falls_through(s.body):
            return False
        if (isinstance(s, ir.While) and isinstance(s.cond, ir.Const) and s.cond.value is True
                and not _breaks(s.body)):
            return False
    return True


def _breaks(stmts: list[ir.Stmt]) -> bool:
    """Whether a ``break`` in ``stmts`` leaves the loop they are the body of."""
    for s in stmts:
        if isinstance(s, ir.Break):
            return True
        if isinstance(s, ir.If) and (_breaks(s.then) or _breaks(s.orelse)):
            return True
        if isinstance(s, ir.Block) and _breaks(s.body):
            return True
    return False


def _same(a: Type, b: Type) -> bool:
    """Equal as values: a ThreadIndex computes as i64."""
    if a == b:
        return True
    sa, sb = as_scalar(a), as_scalar(b)
    return sa is not None and sa == sb


class _Verifier:
    def __init__(self, fn: ir.Function, signatures: dict[str, int], sites: set[int]) -> None:
        self.fn = fn
        self.signatures = signatures
        self.sites = sites
        self.names: dict[str, Type] = {p.name: p.ty for p in fn.params}
        self.names.update(fn.locals)

    def fail(self, loc: ir.Loc, message: str, hint: str = "", user_error: bool = False) -> IRError:
        if not user_error:
            message = f"internal compiler error: invalid IR in {self.fn.python_name}(): {message}"
            hint = hint or "please report this with the function's source"
        return IRError(message, self.fn.python_name, self.fn.file, loc, hint, user_error)

    def run(self) -> None:
        fn = self.fn
        self.block(fn.body, loops=0)
        if not isinstance(fn.ret, VoidType) and falls_through(fn.body):
            loc = fn.body[-1].loc if fn.body else ir.Loc(fn.line, 1)
            raise self.fail(
                loc, f"not every path of {fn.python_name}() returns a value: the end of the function "
                     "is reached after this statement",
                f"end it with `return <{type_name(fn.ret)}>`, or return on every branch", user_error=True)

    def block(self, stmts: list[ir.Stmt], loops: int) -> None:
        for s in stmts:
            self.stmt(s, loops)

    def site(self, site: int | None, loc: ir.Loc) -> None:
        if site is not None and site not in self.sites:
            raise self.fail(loc, f"check site {site} is not an error site of the program")

    def condition(self, e: ir.Expr) -> None:
        self.expr(e)
        if e.ty != BOOL:
            raise self.fail(e.loc, f"a condition of type {type_name(e.ty)}, not bool")

    def stmt(self, s: ir.Stmt, loops: int) -> None:
        if isinstance(s, ir.Assign):
            self.expr(s.value)
            declared = self.names.get(s.name)
            if declared is None:
                raise self.fail(s.loc, f"assignment to {s.name!r}, which is not a declared local")
            if not _same(declared, s.value.ty) and not isinstance(declared, (TupleType, ArrayType)):
                raise self.fail(s.loc, f"{s.name!r} is {type_name(declared)}, assigned a {type_name(s.value.ty)}")
        elif isinstance(s, ir.Store):
            for e in (s.view, s.index, s.value):
                self.expr(e)
            self.site(s.check_site, s.loc)
            if isinstance(s.view.ty, (ViewType, ArrayType)) and not _same(s.value.ty, s.view.ty.elem):
                raise self.fail(s.loc, f"a {type_name(s.value.ty)} stored into {type_name(s.view.ty)}")
        elif isinstance(s, ir.If):
            self.condition(s.cond)
            self.block(s.then, loops)
            self.block(s.orelse, loops)
        elif isinstance(s, ir.While):
            self.condition(s.cond)
            self.block(s.body, loops + 1)
            self.block(s.step, loops + 1)
        elif isinstance(s, ir.Block):
            self.block(s.body, loops)
        elif isinstance(s, (ir.Break, ir.Continue)):
            if not loops:
                raise self.fail(s.loc, f"{type(s).__name__.lower()} outside a loop")
        elif isinstance(s, ir.Return):
            if s.value is None:
                if not isinstance(self.fn.ret, VoidType):
                    raise self.fail(s.loc, f"a return without a value in a function of {type_name(self.fn.ret)}")
            else:
                self.expr(s.value)
                if not _same(s.value.ty, self.fn.ret):
                    raise self.fail(s.loc, f"returns {type_name(s.value.ty)} from a function of {type_name(self.fn.ret)}")
        elif isinstance(s, ir.ExprStmt):
            self.expr(s.value)
        elif isinstance(s, ir.Check):
            self.condition(s.cond)
            self.site(s.site, s.loc)
        elif isinstance(s, ir.ArrayDecl):
            if s.name not in self.names:
                raise self.fail(s.loc, f"array {s.name!r} is not a declared local")
        else:
            raise self.fail(self.fn.body[0].loc if self.fn.body else ir.Loc(self.fn.line, 1),
                            f"unknown statement {type(s).__name__}")

    def expr(self, e: ir.Expr) -> None:
        for child in ir.children(e):
            self.expr(child)
        if isinstance(e, ir.Var):
            if e.name not in self.names:
                raise self.fail(e.loc, f"{e.name!r} is neither a parameter nor a declared local")
        elif isinstance(e, ir.BinOp):
            if not (_same(e.left.ty, e.ty) and _same(e.right.ty, e.ty)):
                raise self.fail(e.loc, f"{type_name(e.left.ty)} {e.op} {type_name(e.right.ty)} typed {type_name(e.ty)}")
        elif isinstance(e, ir.Compare):
            if not (_same(e.left.ty, e.operand_ty) and _same(e.right.ty, e.operand_ty)) or e.ty != BOOL:
                raise self.fail(e.loc, f"{type_name(e.left.ty)} {e.op} {type_name(e.right.ty)} compared as "
                                       f"{type_name(e.operand_ty)}")
        elif isinstance(e, (ir.BoolOp, ir.Not)):
            operands = e.values if isinstance(e, ir.BoolOp) else [e.operand]
            if e.ty != BOOL or any(v.ty != BOOL for v in operands):
                raise self.fail(e.loc, "a logical operation on values that are not bool")
        elif isinstance(e, ir.Select):
            if e.cond.ty != BOOL or not (_same(e.if_true.ty, e.ty) and _same(e.if_false.ty, e.ty)):
                raise self.fail(e.loc, "a select whose condition is not bool or whose values differ in type")
        elif isinstance(e, ir.Call):
            if not e.symbol.startswith(_FOREIGN_PREFIXES):
                count = self.signatures.get(e.symbol)
                if count is None:
                    raise self.fail(e.loc, f"a call of {e.symbol}, which is not a function of the program")
                if count != len(e.args):
                    raise self.fail(e.loc, f"{e.symbol} takes {count} argument(s), called with {len(e.args)}")
        elif isinstance(e, (ir.MakeVector, ir.VectorGet, ir.VectorSet)):
            vec = e.ty if isinstance(e, (ir.MakeVector, ir.VectorSet)) else e.value.ty
            if not isinstance(vec, VectorType):
                raise self.fail(e.loc, f"a vector operation on {type_name(vec)}")
            parts = e.values if isinstance(e, ir.MakeVector) else [e.element] if isinstance(e, ir.VectorSet) else []
            if isinstance(e, ir.MakeVector) and len(parts) != vec.lanes or any(not _same(p.ty, vec.elem) for p in parts):
                raise self.fail(e.loc, f"{type_name(vec)} built from the wrong values")
            if not isinstance(e, ir.MakeVector) and not 0 <= e.lane < vec.lanes:
                raise self.fail(e.loc, f"lane {e.lane} of a {type_name(vec)}")
        elif isinstance(e, ir.ViewSlice):
            self.site(e.check_site, e.loc)
            if not isinstance(e.view.ty, (ViewType, ArrayType)) or not isinstance(e.ty, (ViewType, ArrayType)):
                raise self.fail(e.loc, f"slicing a {type_name(e.view.ty)}")
        elif isinstance(e, (ir.ViewLoad, ir.Intrinsic)):
            self.site(e.check_site, e.loc)
            if isinstance(e, ir.ViewLoad) and not isinstance(e.view.ty, (ViewType, ArrayType)):
                raise self.fail(e.loc, f"indexing a {type_name(e.view.ty)}")
        elif isinstance(e, (ir.ViewLen, ir.ViewDim)):
            if not isinstance(e.view.ty, (ViewType, ArrayType)):
                raise self.fail(e.loc, f"the length of a {type_name(e.view.ty)}")
        elif isinstance(e, ir.TupleGet) and isinstance(e.value.ty, StructType):
            if not 0 <= e.index < len(e.value.ty.fields) or not _same(e.ty, e.value.ty.fields[e.index][1]):
                raise self.fail(e.loc, f"field {e.index} of a {type_name(e.value.ty)}")
        elif isinstance(e, ir.TupleSet):
            sty = e.ty
            if (not isinstance(sty, StructType) or not _same(e.value.ty, sty) or not 0 <= e.index < len(sty.fields)
                    or not _same(e.element.ty, sty.fields[e.index][1])):
                raise self.fail(e.loc, f"field {e.index} of a {type_name(sty)} set to a {type_name(e.element.ty)}")
        elif isinstance(e, ir.TupleGet):
            if not isinstance(e.value.ty, TupleType) or not 0 <= e.index < len(e.value.ty.elems):
                raise self.fail(e.loc, f"element {e.index} of a {type_name(e.value.ty)}")
        elif isinstance(e, ir.ThreadIndex1D) and not isinstance(e.ty, ThreadIndexType):
            raise self.fail(e.loc, f"a thread index of type {type_name(e.ty)}")
