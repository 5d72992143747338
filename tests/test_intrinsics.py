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
    for name, info in INTRINSICS.items():
        if info.method or info.builtin:
            continue  # a view's method (x.load4): views are annotations, with no methods on the host
        group, _, op = name.partition(".")
        namespace = getattr(oxide, group)
        if not op:  # a function of the oxide namespace itself (ox.asm)
            assert callable(namespace), name
            continue
        assert hasattr(namespace, op) or op in getattr(namespace, "_ops", ()), name


def test_every_entry_lives_with_its_typing_and_lowering() -> None:
    """One module per group holds an intrinsic's entry, typing and lowering: adding one touches
    that module (plus the language's stub, docs and tests)."""
    module_of_group = {"shared": "memory", "local": "memory", "fence": "memory", "volatile": "memory", "cache": "memory", "block": "thread", "grid": "thread",
                       "builtin": "printing",
                       "view": "vector", "warpgroup": "wgmma"}
    module_of_builtin = {"min": "selection", "max": "selection", "abs": "selection"}  # the others: print
    for name, info in INTRINSICS.items():
        group_module = module_of_builtin.get(info.op, "printing") if info.group == "builtin" else \
            module_of_group.get(info.group, info.group)
        module = f"oxide_build.intrinsics.{group_module}"
        assert info.typing.__module__ == module and info.lowering.__module__ == module, name
        assert callable(info.typing) and callable(info.lowering)


def test_attributes() -> None:
    assert intrinsic_info("warp.lane") is not None and intrinsic_info("warp.lane").value_range == (0, 31)  # type: ignore[union-attr]
    assert all(INTRINSICS[f"warp.{op}"].convergent for op in ("shfl_down", "ballot", "sync", "reduce_sum"))
    assert all(i.thread_dependent for n, i in INTRINSICS.items() if n.startswith(("warp.", "atomic.")))
    assert not any(i.thread_dependent or i.convergent for n, i in INTRINSICS.items() if n.startswith("math."))
    masked = {f"warp.{op}" for op in ("sync", "all", "any", "ballot", "match_any", "shfl_idx", "shfl_up", "shfl_down",
                                      "shfl_xor", "reduce_sum", "reduce_min", "reduce_max")}
    assert {n for n, i in INTRINSICS.items() if i.keywords} == {n for n in INTRINSICS if n.startswith("atomic.")} | masked | {
        "asm", "mma.ldmatrix", "mma.stmatrix", "cp_async.copy", "shared.array", "shared.dynamic", "wgmma.mma",
        "tma.store_wait", "tma.load", "cluster.arrive"}
    assert all("mask" in INTRINSICS[n].keywords for n in masked)
    assert intrinsic_info("checked_index") is None  # the IR's own
    assert INTRINSICS["block.sync"].convergent and not INTRINSICS["block.sync"].thread_dependent
    assert INTRINSICS["thread.index_1d"].thread_dependent and INTRINSICS["thread.index_2d"].thread_dependent
    assert {n for n, i in INTRINSICS.items() if i.method} == {"view.load2", "view.load4", "view.load8", "view.store2",
                                                              "view.store4", "view.store8"}


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


def test_convergent_comes_from_the_entry(tmp_path: Path) -> None:
    """The lowering marks what a convergent intrinsic calls ``convergent``; nothing else."""
    from oxide_build.compile import CompileOptions, compile_module

    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(x: MutSlice[u32]) -> None:
            with ox.unsafe():
                x[0] = warp.shfl_down(x[0], 1) + u32(warp.ballot(x[1] > 0)) + u32(ox.bits.popc(x[2]))
        """))
    ir_text = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False)).llvm_ir
    declares = {line.split("@")[1].split("(")[0].strip('"'): line for line in ir_text.splitlines()
                if line.startswith("declare")}
    assert "convergent" in declares["llvm.nvvm.shfl.sync.down.i32"]
    assert "convergent" in declares["llvm.nvvm.vote.ballot.sync"]
    assert "convergent" not in declares["llvm.ctpop.i32"]


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_bits_lower_to_popc_clz_brev(tmp_path: Path, backend: str) -> None:
    from oxide_build.compile import CompileOptions, compile_module

    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        from oxide import u64

        @ox.kernel
        def k(a: MutSlice[i32], b: MutSlice[u64], c: MutSlice[i32]) -> None:
            with ox.unsafe():
                c[0] = ox.bits.popc(a[0]) + ox.bits.clz(b[0])
                c[1] = ox.bits.popc(b[0]) + ox.bits.clz(a[0])
                a[1] = ox.bits.brev(a[1])
                b[1] = ox.bits.brev(b[1])
        """))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, backend=backend))
    ptx = compiled.ptx["sm_90"]
    for instruction in ("popc.b32", "popc.b64", "clz.b32", "clz.b64", "brev.b32", "brev.b64"):
        assert instruction in ptx, instruction
    assert compiled.kernels[0].name == "k"


@pytest.mark.parametrize(("call", "message"), [
    ("ox.bits.popc(f)", "bits.popc needs a 32- or 64-bit integer, got f32"),
    ("ox.bits.clz(i16(1))", "bits.clz needs a 32- or 64-bit integer, got i16"),
    ("ox.bits.brev(a[0], a[1])", r"oxide.bits.brev\(\) takes 1 argument\(s\), got 2"),
])
def test_bits_refuse_what_they_do_not_take(tmp_path: Path, call: str, message: str) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(f"""
        from oxide import i16

        @ox.kernel
        def k(a: MutSlice[i32], f: f32) -> None:
            with ox.unsafe():
                a[0] = i32({call})
        """))
    with pytest.raises(CompileError, match=message) as err:
        build_ir(src, "kern")
    assert "kern.py:" in str(err.value)


@pytest.mark.parametrize(("body", "message"), [
    ("a.load3(0)", "views have no method 'load3'"),
    ("a.store4(0, 1, 2)", r"store4\(\) takes 5 argument\(s\), got 3"),
    ("ox.block.sync(1)", r"block.sync\(\) takes no arguments"),
    ("ox.thread.index_1d(0)", r"thread.index_1d\(\) takes no arguments"),
])
def test_thread_and_vector_entries_refuse_bad_calls(tmp_path: Path, body: str, message: str) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(f"""
        @ox.kernel
        def k(a: MutSlice[i32]) -> None:
            with ox.unsafe():
                {body}
        """))
    with pytest.raises(CompileError, match=message) as err:
        build_ir(src, "kern")
    assert "kern.py:" in str(err.value)


def test_a_view_method_is_not_an_oxide_name(tmp_path: Path) -> None:
    """``view.load4`` is an entry, but only as ``x.load4(k)``: not reachable through the oxide
    namespace."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(a: MutSlice[i32]) -> None:
            ox.view.load4(a, 0)
        """))
    with pytest.raises(CompileError) as err:
        build_ir(src, "kern")
    assert "kern.py:" in str(err.value) and "oxide.view.load4 does not exist" in str(err.value)
    assert "hint: load4 is a method of a view: write x.load4(...)" in str(err.value)
