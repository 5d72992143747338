"""Compile-time conditionals: a conditional expression, comparison, ``and``/``or``/``not`` of
compile-time values (literals, module constants, Constexpr parameters, named constants) is
itself a compile-time value, so ``BN = 176 if D == 128 and not CAUSAL else 128`` can size a
static_range, a fragment and a wgmma shape (``f"m64n{BN}k16"``), and only the chosen side is
compiled."""
from __future__ import annotations

import ast
import struct
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.scan import constant_value

HEADER = "import oxide as ox\nfrom oxide import MutSlice, f32, i32, thread\n"


def compile_source(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return compile_module(src, "kern", CompileOptions(archs=("sm_90a",), link_cubins=False)).ptx["sm_90a"]


@pytest.mark.parametrize(("text", "value"), [
    ("3 if 2 > 1 else 4", 3), ("3 if 2 < 1 else 4", 4), ("1 < 2 < 3", True), ("1 < 3 < 2", False),
    ("not 0", True), ("0 or 5", 5), ("2 and 0", 0), ("D == 128 and not C", True), ("(D // 64) if C else 7", 7),
])
def test_constant_value_folds_conditionals(text: str, value: object) -> None:
    assert constant_value(ast.parse(text, mode="eval").body, {"D": 128, "C": False}) == value


def test_an_unknown_operand_leaves_it_unfolded() -> None:
    assert constant_value(ast.parse("3 if x > 1 else 4", mode="eval").body, {}) is None
    assert constant_value(ast.parse("x if True else 4", mode="eval").body, {}) is None


def test_a_constexpr_conditional_sizes_loops_and_shapes(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
    @ox.kernel(constexprs={"D": [64, 128], "CAUSAL": [False, True]})
    def k(c: MutSlice[f32], D: ox.Constexpr[int], CAUSAL: ox.Constexpr[bool]) -> None:
        BN = 176 if D == 128 and not CAUSAL else 128
        acc = ox.wgmma.accumulator(f"m64n{BN}k16")
        for i in ox.static_range(BN // 2):
            acc[i] = f32(i)
        total: f32 = 0.0
        for i in ox.static_range(BN // 2):
            total += acc[i]
        with ox.unsafe():
            c[thread.idx.x] = total + f32(BN)
    """)
    bodies = {p.split("(", 1)[0]: p for p in ptx.split(".visible .entry ")[1:]}
    for d, causal in ((64, 0), (64, 1), (128, 0), (128, 1)):
        bn = 176 if d == 128 and not causal else 128
        expected = sum(range(bn // 2)) + bn  # folded: the constant the kernel stores
        body = bodies[f"k_D{d}_CAUSAL{causal}"]
        bits = int.from_bytes(struct.pack(">f", expected), "big")
        assert f"0f{bits:08X}" in body or f", {bits};" in body, (d, causal)  # as a float or its bits
