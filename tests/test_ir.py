"""The IR's contract: its text (printer), its verifier, and ``oxide compile --emit ir``.

No llvmlite needed: these run the scanner and the frontend only.
"""
from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.cli import main
from oxide_build.compile import build_ir
from oxide_build.ir import nodes as ir
from oxide_build.ir.ops import BinaryOp, CompareOp, LogicOp
from oxide_build.ir.printer import print_program
from oxide_build.ir.types import BOOL, F32, I64, VOID
from oxide_build.ir.verify import IRError, verify_program

HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, i64, thread, block\n"


def frontend(tmp_path: Path, body: str) -> ir.Program:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return build_ir(src, "kern")[1].program


def test_the_printer_shows_types_checks_and_structure(tmp_path: Path) -> None:
    program = frontend(tmp_path, """
        def twice(v: f32) -> f32:
            return v * 2.0

        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32], n: i64) -> None:
            i = thread.index_1d()
            j = n
            while j > 0:
                j -= 1
                if j == 3:
                    continue
            with ox.unsafe():
                out[n] = twice(x[i])
        """)
    assert print_program(program) == textwrap.dedent("""\
        device __ox_kern_twice__f32(v: f32) -> f32  # kern.py:4
          return (v * 2.0:f32)

        kernel k(x: Slice[f32], out: MutSlice[f32], n: i64) -> None  # kern.py:8
          i: ThreadIndex = index_1d()
          j: i64 = n
          while (j > 0:i64):
            j: i64 = (j - 1:i64)
            if (j != 3:i64):
              pass
            else:
              continue
          if (((i64(i) >= 0:i64) and (i64(i) < len(x))) and ((n >= 0:i64) and (n < len(out)))):  ; check-versioned
            out[n] = call __ox_kern_twice__f32(x[i])
          else:
            out[n]!2 = call __ox_kern_twice__f32(x[i]!1)
        """)


def test_emit_ir_writes_the_printed_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = -x[i]
        """))
    assert main(["compile", str(src), "--emit", "ir", "-o", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "kern.ir").read_text()
    assert text == print_program(build_ir(src, "kern")[1].program)
    assert "out[i] = (-x[i])" in text  # both checks proven by the guard
    assert "wrote" in capsys.readouterr().out


def test_a_function_that_can_end_without_its_value_is_a_located_error(tmp_path: Path) -> None:
    """It was lowered to `unreachable`; the verifier is where the rule lives."""
    with pytest.raises(CompileError) as info:
        frontend(tmp_path, """
            def sign(v: f32) -> i64:
                if v > 0.0:
                    return 1
                elif v < 0.0:
                    return -1

            @ox.kernel
            def k(x: Slice[f32], out: DisjointSlice[i64]) -> None:
                i = thread.index_1d()
                if i < len(out) and i < len(x):
                    out[i] = sign(x[i])
            """)
    text = str(info.value)
    assert "kern.py:5:5: error: not every path of sign() returns a value" in text
    assert "return <i64>" in text and "internal" not in text


def _kernel_program() -> ir.Program:
    loc = ir.Loc(3, 5)
    x = ir.Var("x", I64, loc)
    body: list[ir.Stmt] = [
        ir.Assign("y", ir.BinOp(BinaryOp.ADD, x, ir.Const(1, I64, loc), I64, loc), loc),
        ir.If(ir.Compare(CompareOp.LT, ir.Var("y", I64, loc), x, I64, BOOL, loc), [ir.Return(None, loc)], [], loc),
    ]
    fn = ir.Function("k", "k", "k.py", [ir.Param("x", I64)], VOID, body, {"y": I64}, True, 2)
    return ir.Program([fn])


def test_the_verifier_accepts_well_formed_ir() -> None:
    verify_program(_kernel_program())


@pytest.mark.parametrize("damage, message", [
    (lambda f: f.body.append(ir.Break(ir.Loc(4, 1))), "break outside a loop"),
    (lambda f: f.body.append(ir.Assign("z", ir.Const(0, I64, ir.Loc(4, 1)), ir.Loc(4, 1))), "not a declared local"),
    (lambda f: f.body.append(ir.Assign("y", ir.Const(0.5, F32, ir.Loc(4, 1)), ir.Loc(4, 1))), "'y' is i64, assigned a f32"),
    (lambda f: f.body.append(ir.If(ir.Var("x", I64, ir.Loc(4, 1)), [], [], ir.Loc(4, 1))), "a condition of type i64"),
    (lambda f: f.body.append(ir.ExprStmt(ir.Call("nowhere", [], VOID, ir.Loc(4, 1)), ir.Loc(4, 1))),
     "not a function of the program"),
    (lambda f: f.body.append(ir.Check(ir.Const(True, BOOL, ir.Loc(4, 1)), 7, ir.Loc(4, 1))), "check site 7"),
    (lambda f: f.body.append(ir.ExprStmt(ir.BoolOp(LogicOp.AND, [ir.Var("x", I64, ir.Loc(4, 1))], BOOL,
                                                   ir.Loc(4, 1)), ir.Loc(4, 1))), "not bool"),
    (lambda f: f.body.append(ir.Return(ir.Const(1, I64, ir.Loc(4, 1)), ir.Loc(4, 1))), "returns i64 from a function of None"),
])
def test_the_verifier_rejects_broken_ir(damage, message: str) -> None:  # type: ignore[no-untyped-def]
    program = copy.deepcopy(_kernel_program())
    damage(program.functions[0])
    with pytest.raises(IRError) as info:
        verify_program(program)
    assert message in str(info.value)
    assert "internal compiler error" in str(info.value) and not info.value.user_error
    assert str(info.value).startswith("k.py:4:1: ")


def test_every_example_verifies() -> None:
    root = Path(__file__).resolve().parent.parent
    for name in ("saxpy", "reduce", "scan", "histogram", "transpose", "softmax", "stencil", "sgemm"):
        for bounds_check in (True, False):
            options = __import__("oxide_build.compile", fromlist=["CompileOptions"]).CompileOptions(bounds_check=bounds_check)
            program = build_ir(root / "examples" / f"{name}.py", f"examples.{name}", options, root)[1].program
            verify_program(program)  # build_ir verified it too; this states it
            assert print_program(program).count("kernel ") >= 1
