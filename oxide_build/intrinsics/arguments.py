"""Checks of an intrinsic call's arguments that several groups share: their number, a number,
its keywords, keyword arguments for positional parameters.
(A compile-time integer or string is the typing context's ``const_int`` / ``const_str``, an
element type its ``element_type``: context.py's ``TypingContext``, which the frontend implements.)"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.types import as_scalar, type_name

if TYPE_CHECKING:
    from .context import TypingContext
    from .entry import IntrinsicInfo

__all__ = ["check_arg_count", "scalar_arg", "keyword_args", "keywords_in_place"]


def check_arg_count(tr: TypingContext, node: ast.Call, n: int | tuple[int, int], name: str) -> None:
    lo, hi = (n, n) if isinstance(n, int) else n
    if not lo <= len(node.args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise tr.error(node, f"oxide.{name}() takes {want} argument(s), got {len(node.args)}")


def scalar_arg(tr: TypingContext, node: ast.expr, what: str) -> ir.Expr:
    value = tr.materialize(tr.expr(node))
    if as_scalar(value.ty) is None:
        raise tr.error(node, f"{what} needs a number, got {type_name(value.ty)}")
    scalar = as_scalar(value.ty)
    assert scalar is not None
    return tr.convert(value, scalar, node)


def keyword_args(tr: TypingContext, node: ast.Call, name: str, allowed: tuple[str, ...]) -> dict[str, ast.expr]:
    """The keyword arguments of a call that takes ``allowed``; any other, ``**kwargs`` or a
    repeated one is a located error."""
    found: dict[str, ast.expr] = {}
    for kw in node.keywords:
        if kw.arg is None or kw.arg not in allowed:
            what = "does not take **kwargs" if kw.arg is None else f"got an unexpected keyword argument {kw.arg!r}"
            raise tr.error(kw, f"oxide.{name}() {what}", f"its keywords: {', '.join(allowed)}")
        if kw.arg in found:
            raise tr.error(kw, f"oxide.{name}() got {kw.arg}= twice")
        found[kw.arg] = kw.value
    return found


def keywords_in_place(tr: TypingContext, info: IntrinsicInfo, node: ast.Call) -> ast.Call:
    """``node`` with the keyword arguments that name ``info.parameters`` moved to their
    positions (``shared.array(shape=(32, 32), dtype=f32)`` → ``shared.array((32, 32), f32)``)."""
    args = list(node.args)
    rest: list[ast.keyword] = []
    given = {}
    for kw in node.keywords:
        if kw.arg in info.parameters:
            if kw.arg in given or info.parameters.index(kw.arg) < len(args):
                raise tr.error(kw.value, f"oxide.{info.name}() got {kw.arg!r} twice")
            given[kw.arg] = kw.value
        elif kw.arg in info.keywords:
            rest.append(kw)
        else:
            names = ", ".join(info.parameters + info.keywords)
            raise tr.error(kw.value if kw.arg is not None else node,
                           f"oxide.{info.name}() has no keyword argument {kw.arg!r}", f"its keywords: {names}")
    for name in info.parameters[len(args):]:
        if name not in given:
            break
        args.append(given.pop(name))
    if given:
        missing = info.parameters[len(args)]
        raise tr.error(node, f"oxide.{info.name}() needs {missing!r} before {', '.join(map(repr, given))}",
                       f"write oxide.{info.name}({', '.join(f'{p}=...' for p in info.parameters)})")
    return ast.copy_location(ast.Call(node.func, args, rest), node)

