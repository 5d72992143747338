"""The intrinsic registry (oxide_build.intrinsics): one entry per intrinsic, and every stage
agrees with it."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import oxide
from oxide.errors import CompileError
from oxide_build.compile import build_ir
from oxide_build.intrinsics import INTRINSICS, intrinsic_info

HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, i32, i64, u32, thread, block, warp\n"


def test_every_registered_intrinsic_has_a_language_stub() -> None:
    for name in INTRINSICS:
        group, _, op = name.partition(".")
        namespace = getattr(oxide, group)
        assert hasattr(namespace, op) or op in getattr(namespace, "_ops", ()), name


def test_every_registered_group_is_typed_and_lowered() -> None:
    typing = Path(__file__).resolve().parent.parent / "oxide_build" / "frontend" / "intrinsics.py"
    lowering = Path(__file__).resolve().parent.parent / "oxide_build" / "lower" / "intrinsics.py"
    typed, lowered = typing.read_text(), lowering.read_text()
    for group in {info.group for info in INTRINSICS.values()}:
        assert f'"{group}' in typed, f"frontend/intrinsics.py does not type the {group} group"
        assert f'"{group}"' in lowered or group in ("shared", "local"), f"lower/intrinsics.py does not lower {group}"


def test_attributes() -> None:
    assert intrinsic_info("warp.lane") is not None and intrinsic_info("warp.lane").value_range == (0, 31)  # type: ignore[union-attr]
    assert all(INTRINSICS[f"warp.{op}"].convergent for op in ("shfl_down", "ballot", "sync", "reduce_sum"))
    assert all(i.thread_dependent for n, i in INTRINSICS.items() if n.startswith(("warp.", "atomic.")))
    assert not any(i.thread_dependent or i.convergent for n, i in INTRINSICS.items() if n.startswith("math."))
    assert {n for n, i in INTRINSICS.items() if i.keywords} == {n for n in INTRINSICS if n.startswith("atomic.")}
    assert intrinsic_info("checked_index") is None  # the IR's own


def test_a_thread_dependent_intrinsic_makes_a_branch_divergent(tmp_path: Path) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        def stage() -> None:
            block.sync()

        @ox.kernel
        def k(x: MutSlice[f32]) -> None:
            if warp.lane() == 0:
                stage()
        """))
    with pytest.raises(CompileError, match=r"stage\(\) reaches block.sync\(\)"):
        build_ir(src, "kern")


def test_the_prover_takes_the_value_range_from_the_registry(tmp_path: Path) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            lanes = ox.shared.array(32, f32)
            lanes[warp.lane()] = 1.0
            if len(x) >= 32:
                with ox.unsafe():
                    out[0] = x[warp.lane()]
        """))
    text = __import__("oxide_build.ir.printer", fromlist=["print_program"]).print_program(build_ir(src, "kern")[1].program)
    assert "lanes[warp.lane():i32] = 1.0:f32" in text  # 0..31 fits the array: no check
    assert "x[warp.lane():i32]" in text and "x[warp.lane():i32]!" not in text
