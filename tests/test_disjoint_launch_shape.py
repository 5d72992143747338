"""A DisjointSlice written at thread.index_1d() is one thread's element only in a launch of
1-D blocks in a 1-D grid (index_1d() leaves out y and z; index_2d() leaves out z): the
disjoint-launch-shape pass makes that a launch precondition of the kernel, also when the
write is in a device function it calls (passes/disjoint_launch_shape.py)."""
from __future__ import annotations

import textwrap
from pathlib import Path

from oxide.abi.manifest import Precondition
from oxide.abi.preconditions import compile_expression
from oxide.runtime.preconditions import evaluate
from oxide_build.compile import build_ir

HEADER = """\
import oxide as ox
from oxide import DisjointSlice, DisjointTensor, MutSlice, Slice, f32, thread
"""
ONE_D = ["and", [["eq", ["block", 1], ["const", 1]], ["eq", ["block", 2], ["const", 1]],
                 ["eq", ["grid", 1], ["const", 1]], ["eq", ["grid", 2], ["const", 1]]]]


def kernel_preconditions(tmp_path: Path, body: str) -> tuple[list[object], list[str]]:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    frontend = build_ir(src, "kern")[1]
    (spec,) = frontend.kernels
    (fn,) = [f for f in frontend.program.functions if f.symbol == spec.symbol]
    sites = {s.id: s for s in frontend.error_sites}
    # the manifest holds the programs of the compiler's expressions
    assert spec.preconditions == tuple(Precondition(c.site, tuple(compile_expression(c.expr))) for c in fn.preconditions)
    return [c.expr for c in fn.preconditions], [sites[p.site].what for p in spec.preconditions]


def test_a_write_at_index_1d_needs_a_1d_launch(tmp_path: Path) -> None:
    exprs, whats = kernel_preconditions(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = x[i]
    """)
    assert exprs == [ONE_D]
    assert whats[0].startswith("block.dim.y == 1 and block.dim.z == 1 and grid.dim.y == 1 and grid.dim.z == 1: "
                               "out[i] is written at the thread's ThreadIndex")
    # what the runtime (and launch.hpp) make of it
    assert evaluate(compile_expression(ONE_D), [], (40, 1, 1), (256, 1, 1))
    assert not evaluate(compile_expression(ONE_D), [], (1, 1, 1), (16, 16, 1))
    assert not evaluate(compile_expression(ONE_D), [], (4, 2, 1), (256, 1, 1))


def test_a_write_in_a_device_function_gives_its_kernels_the_precondition(tmp_path: Path) -> None:
    exprs, whats = kernel_preconditions(tmp_path, """
    def put(out: DisjointSlice[f32], i: ox.ThreadIndex, v: f32) -> None:
        out[i] = v

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            put(out, i, x[i])
    """)
    assert exprs == [ONE_D]
    assert "out[i]" in whats[0]


def test_index_2d_leaves_out_z_and_index_3d_nothing(tmp_path: Path) -> None:
    exprs, _ = kernel_preconditions(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        r, c = thread.index_2d()
        if r < out.shape[0] and c < out.shape[1]:
            out[r, c] = 1.0
    """)
    assert exprs == [["and", [["eq", ["block", 2], ["const", 1]], ["eq", ["grid", 2], ["const", 1]]]]]
    exprs, _ = kernel_preconditions(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 3]) -> None:
        d, r, c = thread.index_3d()
        if d < out.shape[0] and r < out.shape[1] and c < out.shape[2]:
            out[d, r, c] = 1.0
    """)
    assert exprs == []


def test_kernels_without_disjoint_writes_get_none(tmp_path: Path) -> None:
    exprs, _ = kernel_preconditions(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            with ox.unsafe():
                out[i] = x[i]
    """)
    assert exprs == []
