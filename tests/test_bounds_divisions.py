"""The bounds prover's facts about ``//`` and ``%`` (oxide_build/passes/bounds_prover.py), checked
against the machine's results by brute force: for every pair of operand values of a type, over
the type's edges (0, ±1, MIN, MAX) and random values, every fact the prover made holds (a
conditional one wherever its condition holds), every atom's range holds its value, and every
polynomial it formed is the exact value the machine computes (x // 0 == 0, x % 0 == x,
MIN // -1 wrapping). The lowering side: operands proven ≥ 0 divide unsigned."""
from __future__ import annotations

import ast
import itertools
import random
import textwrap
from pathlib import Path

import pytest

from oxide.lang.types import ScalarType, i16, i32, i64, u32
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.ir import nodes as ir
from oxide_build.ir.ops import BinaryOp
from oxide_build.passes.bounds_prover import Poly, Prover

__all__: list[str] = []

LOC = ir.Loc(1, 0)


def _wrap(value: int, ty: ScalarType) -> int:
    value &= (1 << ty.bits) - 1
    if ty.kind == "int" and value >= 1 << (ty.bits - 1):
        value -= 1 << ty.bits
    return value


def _machine(op: str, a: int, b: int, ty: ScalarType) -> int:
    """What the lowering computes (llvm.py int_division): Python's rounding, defined at 0."""
    if b == 0:
        return 0 if op == "//" else a
    return _wrap(a // b if op == "//" else a % b, ty)


def _value(p: Poly, env: dict[tuple[str, ...], int]) -> int:
    total = 0
    for mono, c in p.items():
        term = c
        for a in mono:
            term *= env[a]
        total += term
    return total


def _poly_of(text: str) -> Poly:
    return Poly(dict(ast.literal_eval(text)))


def _env(prover: Prover, values: dict[str, int], ty: ScalarType) -> dict[tuple[str, ...], int]:
    """Each atom's value: the variables', then the divisions' as the machine computes them."""
    env: dict[tuple[str, ...], int] = {("var", n): v for n, v in values.items()}
    pending = [a for a in prover._atom_types if a[0] in ("div", "mod")]
    while pending:
        for a in list(pending):
            num, den = _poly_of(a[1]), _poly_of(a[2])
            if any(x not in env for p in (num, den) for m in p for x in m):
                continue
            env[a] = _machine("//" if a[0] == "div" else "%", _value(num, env), _value(den, env), ty)
            pending.remove(a)
    return env


def _operand_values(ty: ScalarType, rng: random.Random) -> list[int]:
    lo, hi = (0, (1 << ty.bits) - 1) if ty.kind == "uint" else (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1)
    edges = [v for v in (0, 1, -1, 2, -2, 3, 7, 64, lo, lo + 1, hi, hi - 1) if lo <= v <= hi]
    return edges + [rng.randint(lo, hi) for _ in range(12)] + [rng.randint(-9, 9) for _ in range(6) if lo < 0]


def _expressions(ty: ScalarType) -> dict[str, ir.Expr]:
    a, b = ir.Var("a", ty, LOC), ir.Var("b", ty, LOC)
    c = ir.Const(16, ty, LOC)
    div = ir.BinOp(BinaryOp.FLOOR_DIV, a, b, ty, LOC)
    return {
        "a // b": div,
        "a % b": ir.BinOp(BinaryOp.MOD, a, b, ty, LOC),
        "a % 16": ir.BinOp(BinaryOp.MOD, a, c, ty, LOC),
        "(a // 16) % b": ir.BinOp(BinaryOp.MOD, ir.BinOp(BinaryOp.FLOOR_DIV, a, c, ty, LOC), b, ty, LOC),
        "(a // b) % 16": ir.BinOp(BinaryOp.MOD, div, c, ty, LOC),
        "(a % 16) % b": ir.BinOp(BinaryOp.MOD, ir.BinOp(BinaryOp.MOD, a, c, ty, LOC), b, ty, LOC),
        "(a % 16) // b": ir.BinOp(BinaryOp.FLOOR_DIV, ir.BinOp(BinaryOp.MOD, a, c, ty, LOC), b, ty, LOC),
    }


MACHINE = {
    "a // b": lambda a, b, ty: _machine("//", a, b, ty),
    "a % b": lambda a, b, ty: _machine("%", a, b, ty),
    "a % 16": lambda a, b, ty: _machine("%", a, 16, ty),
    "(a // 16) % b": lambda a, b, ty: _machine("%", _machine("//", a, 16, ty), b, ty),
    "(a // b) % 16": lambda a, b, ty: _machine("%", _machine("//", a, b, ty), 16, ty),
    "(a % 16) % b": lambda a, b, ty: _machine("%", _machine("%", a, 16, ty), b, ty),
    "(a % 16) // b": lambda a, b, ty: _machine("//", _machine("%", a, 16, ty), b, ty),
}


@pytest.mark.parametrize("ty", [i16, i32, i64, u32], ids=lambda t: t.name)
@pytest.mark.parametrize("expression", sorted(_expressions(i32)))
def test_division_facts_hold_for_every_operand(ty: ScalarType, expression: str) -> None:
    rng = random.Random(f"{ty.name} {expression}")
    prover = Prover(lambda name: True, assume_grid=False)
    e = _expressions(ty)[expression]
    p = prover.poly(e, [])
    assert p is not None or ty.kind == "int"  # an i32 quotient by a parameter may not fit i32
    values = _operand_values(ty, rng)
    for a, b in itertools.product(values, values):
        env = _env(prover, {"a": a, "b": b}, ty)
        where = f"{expression} with a={a}, b={b} ({ty.name})"
        if p is not None:
            assert _value(p, env) == MACHINE[expression](a, b, ty), where
        for atom_, (lo, hi) in prover._atom_types.items():
            if atom_ in env:
                assert lo <= env[atom_] <= hi, f"{where}: {atom_} = {env[atom_]} outside [{lo}, {hi}]"
        for f in prover.global_facts:
            if all(x in env for m in f for x in m):
                assert _value(f, env) >= 0, f"{where}: fact {dict(f)}"
        for f, cond in prover.conditional_facts:
            if _value(cond, env) >= 0:
                assert _value(f, env) >= 0, f"{where}: fact {dict(f)} where {dict(cond)} >= 0"


SPLIT = """
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i64, thread


@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32], D: i64) -> None:
    i = thread.index_1d()
    if i < len(out):
        with ox.unsafe():
            out[i] = x[SPLIT_INDEX]
"""


@pytest.mark.parametrize("index, unsigned", [("i64(i) // D", False), ("i64(i) // len(x)", True),
                                            ("i64(i) % (len(x) + 1)", True), ("(i64(i) - 1) % len(x)", False)])
def test_nonneg_operands_divide_unsigned(tmp_path: Path, index: str, unsigned: bool) -> None:
    """A dividend and a divisor proven >= 0 divide unsigned as they are; a parameter of unknown
    sign or a dividend that may be negative divide their magnitudes (llvm.py floor_division: the
    PTX takes ``abs``) and fix the sign."""
    src = tmp_path / "k.py"
    src.write_text(textwrap.dedent(SPLIT).replace("SPLIT_INDEX", index))
    options = CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, bounds_check=False)
    ptx = compile_module(src, "k", options).ptx["sm_90"]
    assert "div.s64" not in ptx and "rem.s64" not in ptx and ("div.u64" in ptx or "rem.u64" in ptx)
    signed = "abs.s64" in ptx
    assert signed != unsigned, ptx
