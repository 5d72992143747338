"""Constant loop unrolling (oxide_build/passes/constant_loop_unroll.py) through the backend: a
range loop with constant bounds over a constant table and a local array is unrolled completely,
as nvcc unrolls it, so the table is read at immediate offsets and the local array lives in
registers; a loop past the pass's limits, or with the user's `ox.unroll(..., 1)`, stays rolled."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module
from oxide_build.passes import PIPELINE

SOURCE = '''
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread

TABLE = ox.constant.array((40, 4), f32)


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        px = x[i]
        acc = ox.local.array(8, f32)
        for a in range(8):
            acc[a] = 0.0
        best = -1.0
        for j in {loop}:
            dx = px - TABLE[j, 0]
            if dx * dx < TABLE[j, 1] * TABLE[j, 1]:
                dz = ox.math.sqrt(TABLE[j, 1] * TABLE[j, 1] - dx * dx) + TABLE[j, 2]
                if dz > best:
                    best = dz
                    acc[j % 8] += dz * TABLE[j, 3]
        with ox.unsafe():
            out[i] = best + acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7]
'''


def _ptx(tmp_path: Path, loop: str = "range(20)") -> str:
    src = tmp_path / "uk.py"
    src.write_text(textwrap.dedent(SOURCE.replace("{loop}", loop)))
    options = CompileOptions(archs=("sm_90",), link_cubins=False, cache=False)
    ptx = compile_module(src, "uk", options, root=tmp_path).ptx["sm_90"]
    return ptx[ptx.index(".entry k("):]


def _table_loads(ptx: str) -> list[str]:
    return re.findall(r"ld\.const\S*\s+\S+(?:, \S+)*\s*\[([^\]]+)\]", ptx)


def test_constant_loop_is_unrolled_with_immediate_table_offsets(tmp_path: Path) -> None:
    ptx = _ptx(tmp_path)
    loads = _table_loads(ptx)
    assert len(loads) >= 20, loads  # one copy of the body per sphere-like row
    assert all(_immediate(a) for a in loads), loads  # symbol+immediate, no register
    assert ".local" not in ptx and "ld.local" not in ptx and "st.local" not in ptx


def _immediate(address: str) -> bool:
    return re.fullmatch(r"\w+(\+\d+)?", address) is not None


@pytest.mark.parametrize("loop", ["range(40)", "ox.unroll(range(20), 1)"])
def test_loop_past_the_limit_or_with_the_users_hint_stays_rolled(tmp_path: Path, loop: str) -> None:
    loads = _table_loads(_ptx(tmp_path, loop))
    assert loads and not all(_immediate(a) for a in loads), loads  # indexed through a register


def test_the_pass_is_in_the_pipeline_before_canonicalize() -> None:
    names = [p.name for p in PIPELINE]
    assert names.index("constant-loop-unroll") < names.index("canonicalize")
