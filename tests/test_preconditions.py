"""Launch preconditions: which kernel asserts the compiler moves to the launch, their encoding,
and the runtime's evaluation (the Python path; the C launcher is compared with it in
tests/test_runtime_c_launcher.py)."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from oxide.abi.preconditions import OPCODE, STACK_LIMIT, compile_expression, stack_depth
from oxide.runtime.manifest import ErrorSite, KernelSpec, ParamSpec, Precondition
from oxide.runtime.preconditions import evaluate, failed
from oxide_build.compile import CompileOptions, compile_module

HEADER = """
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, Tensor, block, f32, grid, i32, i64, thread, u32
"""


def compiled(tmp_path: Path, body: str) -> Any:
    src = tmp_path / "k.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False))


def split(c: Any) -> tuple[list[str], list[str]]:
    """(asserts checked at launch, asserts checked on the device)"""
    at_launch = {p.site for k in c.kernels for p in k.preconditions}
    asserts = [s for s in c.error_sites if s.kind == "assert"]
    return [s.what for s in asserts if s.id in at_launch], [s.what for s in asserts if s.id not in at_launch]


def test_leading_asserts_over_the_launch_move_to_the_launch(tmp_path: Path) -> None:
    c = compiled(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, t: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:
            \"\"\"docstring\"\"\"
            assert len(x) == n and len(out) >= len(x)
            i = thread.index_1d()
            assert block.dim.x == 256 and grid.dim.y == 1, "one row of blocks"
            assert t.shape[0] * 2 == t.shape[1] and not n < 0
            if i < len(out):
                out[i] = x[i]
    """)
    launch, device = split(c)
    assert launch == ["len(x) == n and len(out) >= len(x)", "block.dim.x == 256 and grid.dim.y == 1: one row of blocks",
                      "t.shape[0] * 2 == t.shape[1] and (not n < 0)",
                      "block.dim.y == 1 and block.dim.z == 1 and grid.dim.y == 1 and grid.dim.z == 1: out[i] is "
                      "written at the thread's ThreadIndex, which leaves out block.dim.y, block.dim.z, grid.dim.y, "
                      "grid.dim.z (launch a 1-D grid of 1-D blocks, or index with thread.index_2d()/index_3d())"]
    assert device == []
    (spec,) = c.kernels
    # slots: x = 0 (pointer), 1 (length); n = 2; t = 3 (pointer), 4, 5 (shape), 6, 7 (strides); out = 8, 9
    assert spec.preconditions[0].code == program(["and", [["eq", ["arg", 1], ["cast", "i64", ["arg", 2]]],
                                                  ["ge", ["arg", 9], ["arg", 1]]]])
    assert spec.preconditions[1].code == program(["and", [["eq", ["block", 0], ["const", 256]],
                                                          ["eq", ["grid", 1], ["const", 1]]]])
    for p in spec.preconditions:  # the device code no longer fails at these sites
        assert f'call void @"__oxide_fail"(i64 {p.site},' not in c.llvm_ir


def test_asserts_that_stay_on_the_device(tmp_path: Path) -> None:
    c = compiled(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], a: f32, n: i32, out: MutSlice[f32]) -> None:
            assert a > 0.0
            assert thread.idx.x < n
            m = n
            m += 1
            assert m > 1
            if n > 5:
                assert len(x) > 5
            with ox.unsafe():
                out[0] = x[0]
            assert len(out) == n
    """)
    launch, device = split(c)
    assert launch == []
    assert device == ["a > 0.0", "thread.idx.x < n", "m > 1", "len(x) > 5", "len(out) == n"]
    for site in c.error_sites:  # each one fails on the device
        assert f'call void @"__oxide_fail"(i64 {site.id},' in c.llvm_ir


def test_an_assert_after_a_store_stays_on_the_device(tmp_path: Path) -> None:
    c = compiled(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert len(out) >= 1
            with ox.unsafe():
                out[0] = f32(1.0)
            assert len(x) == n
    """)
    assert split(c) == (["len(out) >= 1"], ["len(x) == n"])


def test_grid_limits_are_launch_preconditions(tmp_path: Path) -> None:
    c = compiled(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert len(x) == n and len(out) == n
            col = block.idx.x * 8192 + thread.idx.x
            if col < n:
                with ox.unsafe():
                    out[col] = x[col]
    """)
    launch, device = split(c)
    assert device == [] and launch[1].startswith("grid.x <= 262144")
    assert c.kernels[0].preconditions[1].code == program(["le", ["grid", 0], ["const", 262144]])


@pytest.mark.parametrize("expr, want", [
    (["add", "i32", ["const", 2**31 - 1], ["const", 1]], -2**31),
    (["mul", "i64", ["const", 2**62], ["const", 4]], 0),
    (["sub", "u32", ["const", 0], ["const", 1]], 2**32 - 1),
    (["mul", "u64", ["const", 2**63], ["const", 3]], 2**63),
    (["cast", "u8", ["const", 300]], 44),
    (["cast", "i8", ["const", 200]], -56),
    (["cast", "i64", ["arg", 0]], -5),
    (["neg", "i32", ["const", -2**31]], -2**31),
    (["cast", "bool", ["const", 7]], 1),
    (["lt", ["arg", 0], ["arg", 1]], 1),
    (["ge", ["grid", 1], ["block", 2]], 1),
    (["and", [["eq", ["const", 1], ["const", 1]], ["ne", ["const", 1], ["const", 1]]]], 0),
    (["or", [["le", ["const", 3], ["const", 2]], ["gt", ["const", 3], ["const", 2]]]], 1),
    (["not", ["eq", ["grid", 0], ["const", 7]]], 0),
])
def test_evaluate(expr: list[Any], want: int) -> None:
    assert evaluate(compile_expression(expr), [-5, 10], (7, 3, 1), (256, 1, 2)) == want


def test_failed_names_the_first_failing_site() -> None:
    conds = [Precondition(4, program(["eq", ["arg", 0], ["const", 1]])),
             Precondition(9, program(["eq", ["arg", 1], ["const", 1]]))]
    assert failed(conds, [1, 1], (1, 1, 1), (1, 1, 1)) is None
    assert failed(conds, [1, 2], (1, 1, 1), (1, 1, 1)) == 9
    assert failed(conds, [2, 2], (1, 1, 1), (1, 1, 1)) == 4
    with pytest.raises(ValueError, match="unknown precondition opcode 99"):
        evaluate([(OPCODE["const"], 1), (99, 0)], [], (1, 1, 1), (1, 1, 1))


def program(expr: Any) -> tuple[tuple[int, int], ...]:
    return tuple(compile_expression(expr))


def test_an_assert_the_launchers_could_not_evaluate_stays_on_the_device(tmp_path: Path) -> None:
    """A condition whose program needs more than STACK_LIMIT values on its stack (a sum nested
    that deep) is checked by the device, and so is every assert after it."""
    deep = "n" + " + (n" * (STACK_LIMIT + 2) + ")" * (STACK_LIMIT + 2)
    c = compiled(tmp_path, f"""
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert n > 0
            assert {deep} > 0
            assert len(x) == n
            with ox.unsafe():
                out[0] = x[0]
    """)
    launch, device = split(c)
    assert launch == ["n > 0"] and len(device) == 2 and device[1] == "len(x) == n"
    assert stack_depth(compile_expression(["gt", ["arg", 2], ["const", 0]])) == 2


def test_the_manifest_keeps_them(tmp_path: Path) -> None:
    from oxide.runtime.manifest import ModuleManifest

    spec = KernelSpec("k", "k", (ParamSpec("x", "slice", "f32"),),
                      preconditions=(Precondition(1, program(["le", ["grid", 0], ["const", 5]])),))
    m = ModuleManifest("m", "m.py", "0" * 64, (spec,), {"sm_90": "m.cubin"},
                       error_sites=(ErrorSite(1, "assert", "k", "m.py", 3, 5, "grid.x <= 5"),))
    back = ModuleManifest.from_json(m.to_json())
    assert back.kernels[0].preconditions == (Precondition(1, program(["le", ["grid", 0], ["const", 5]])),)
