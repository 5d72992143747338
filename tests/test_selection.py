"""The builtins min, max and abs (oxide_build/intrinsics/selection.py): an operand with an
effect (a shuffle, a load, an atomic, a call) is evaluated exactly once and unconditionally;
pure operands keep the Select form the bounds prover reads. Both backends."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.ir import nodes as ir

from launch_versions import body_copies

HEADER = ("import oxide as ox\n"
          "from oxide import Slice, MutSlice, DisjointSlice, f16, f32, f64, i32, i64, u32, thread, warp\n")


def ptx_of(tmp_path: Path, body: str, backend: str = "nvptx", bounds_check: bool = True) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_80",), backend=backend, cache=False,
                                                         bounds_check=bounds_check))
    return compiled.ptx["sm_80"]


def branches(ptx: str) -> int:
    return len(re.findall(r"\bbra(\.uni)?\b", ptx))


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
@pytest.mark.parametrize("call", ["max(v, warp.shfl_xor(v, 1))", "min(warp.shfl_xor(v, 1), v)",
                                  "max(warp.shfl_xor(v, 1), warp.shfl_xor(v, 2), v)"])
def test_a_shuffle_in_min_max_runs_once_in_every_lane(tmp_path: Path, backend: str, call: str) -> None:
    """Before, max(v, shfl(v)) shuffled a second time inside a branch only some lanes took (a
    hang on the GPU: a full-mask shfl.sync that not every lane reaches)."""
    ptx = ptx_of(tmp_path, f"""
@ox.kernel(bounds_check=False)
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    v = x[i]
    out[i] = {call}
""", backend)
    assert ptx.count("shfl.sync") == call.count("shfl_xor")
    assert branches(ptx) == 0, ptx


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_loads_and_atomics_in_min_max_abs_happen_once(tmp_path: Path, backend: str) -> None:
    ptx = ptx_of(tmp_path, """
@ox.kernel(bounds_check=False)
def k(x: Slice[f32], y: Slice[i32], counter: MutSlice[i32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    ticket = min(ox.atomic.add(counter, 0, 1), 1000)
    out[i] = max(x[i], x[i + 1]) + abs(x[i + 2]) + f32(abs(y[i]) + ticket)
""", backend)
    assert len(re.findall(r"\batom\.", ptx)) == 1  # was 2: the atomic also ran for the chosen side
    assert len(re.findall(r"\bld\.global", ptx)) == 4  # x[i], x[i + 1], x[i + 2], y[i]: one load each
    assert branches(ptx) == 0


def test_pure_operands_keep_the_select_form(tmp_path: Path) -> None:
    """min/max/abs of names and arithmetic stay a Select of a Compare (what the bounds prover
    and the other passes read, as before); only calls with an effectful operand become the
    evaluate-once intrinsic."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
@ox.kernel
def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[min(i, i64(n) - 1)] + f32(max(n, 3)) + f32(abs(n - 7)) + max(x[i], 1.0)
"""))
    _, result = build_ir(src, "kern", CompileOptions(archs=("sm_80",), cache=False))
    kernel = next(f for f in result.program.functions if f.is_kernel)
    found = [e for s in ir.statements(kernel.body) for root in ir.statement_roots(s) for e in walk(root)]
    # bounds-elimination may version the kernel on len(x) (two copies of the body, each the same)
    copies = body_copies(kernel)
    assert sum(isinstance(e, ir.Select) for e in found) == 3 * copies
    assert [e.name for e in found if isinstance(e, ir.Intrinsic) and e.name.startswith("builtin.")] == ["builtin.max"] * copies


def walk(e: ir.Expr) -> list[ir.Expr]:
    return [e] + [x for c in ir.children(e) for x in walk(c)]


def test_min_max_abs_of_mixed_and_literal_operands(tmp_path: Path) -> None:
    """Types as before: literals take the other operand's type, two literals fold."""
    ptx = ptx_of(tmp_path, """
N = max(3, 7)

@ox.kernel(bounds_check=False)
def k(x: Slice[f16], out: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    out[i] = max(x[i], 0.5) + abs(x[i + N]) + min(x[i], x[i + 1], 2.0)
""")
    assert "ld.global.nc.b16" in ptx or "ld.global.nc.u16" in ptx or "ld.global.b16" in ptx or "ld.global.u16" in ptx
    assert branches(ptx) == 0
