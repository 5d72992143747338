"""A seeded fuzzer over kernel sources (tests/fuzz_kernels.py): mutants of the examples' and
the test packages' kernels either compile (PTX, then cubins through nvJitLink/ptxas) or fail
with a located CompileError, never with a traceback from our internals, an unlocated error,
an LLVM error or a ptxas error.

CI runs OXIDE_FUZZ_COUNT (200) mutants of OXIDE_FUZZ_SEED (0), each compile within
OXIDE_FUZZ_BUDGET seconds of CPU time (60); locally, e.g.
``OXIDE_FUZZ_COUNT=10000 OXIDE_FUZZ_SEED=7 python -m pytest tests/test_fuzz.py``. The classes
of failures it found are pinned as regression tests here, each with the smallest source."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from oxide import CompileError
from oxide_build.compile import CompileOptions, compile_module

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_kernels  # noqa: E402

COUNT = int(os.environ.get("OXIDE_FUZZ_COUNT", "200"))
SEED = int(os.environ.get("OXIDE_FUZZ_SEED", "0"))
BUDGET_S = int(os.environ.get("OXIDE_FUZZ_BUDGET", str(fuzz_kernels.DEFAULT_BUDGET_S)))
HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, f32, f64, i32, i64, u32, thread, block\n"


def test_mutants_compile_or_fail_with_located_errors(tmp_path: Path) -> None:
    from oxide_build.toolchain import find_tool  # noqa: F401  (the build's toolchain must load)

    report = fuzz_kernels.run_fuzz(COUNT, SEED, tmp_path, budget_s=BUDGET_S)
    assert len(report.outcomes) == COUNT
    assert not report.failures, report.summary()
    # the mutations reach the compiler: some mutants compile, many are refused
    kinds = {o.kind for o in report.outcomes}
    assert {"compiled", "located error"} <= kinds, report.summary()


def test_mutants_depend_only_on_seed_and_index() -> None:
    a = list(fuzz_kernels.iter_mutants(5, 3, start=10))
    b = list(fuzz_kernels.iter_mutants(2, 3, start=13))
    assert [m.text for m in a[3:]] == [m.text for m in b]
    assert any(m.text != m.original.read_text() for m in a)


def test_fuzzer_fails_a_compile_over_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that uses more CPU time than the budget is a failure: one the timer stops in
    Python code, and one that ran past the budget where the timer could not stop it (native
    code) and then compiled."""
    import oxide_build.compile

    source = fuzz_kernels.ROOT / "examples" / "saxpy.py"
    mutant = fuzz_kernels.Mutant(source, 0, source.read_text(), ())

    def spins(*args: object, **kwargs: object) -> None:
        while True:  # CPU time
            pass

    monkeypatch.setattr(oxide_build.compile, "compile_module", spins)
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path, timeout_s=1)
    assert not outcome.ok and outcome.kind == "over budget (1 s)", outcome.kind
    assert outcome.seconds >= 0.9  # the timer's CPU clock and process_time() differ by a tick

    def spins_inside_a_wrapper(*args: object, **kwargs: object) -> None:
        try:
            spins()
        except Exception as e:  # as the lowering wraps what it catches
            raise RuntimeError("internal compiler error: wrapped") from e

    monkeypatch.setattr(oxide_build.compile, "compile_module", spins_inside_a_wrapper)
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path, timeout_s=1)
    assert not outcome.ok and outcome.kind == "over budget (1 s)", outcome.kind

    clock = iter([100.0, 103.5])  # CPU time at the compile's start and end, 3.5 s apart, no alarm delivered
    monkeypatch.setattr(oxide_build.compile, "compile_module", lambda *a, **k: None)
    monkeypatch.setattr(fuzz_kernels, "_cpu_seconds", lambda: next(clock))
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path, timeout_s=2)
    assert not outcome.ok and outcome.kind == "over budget (2 s)" and "compiled after 3.5 CPU s" in outcome.detail


def test_fuzzer_budget_is_cpu_time_not_wall_clock_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that waits (a loaded or niced machine: the process gets no CPU) is not over its
    budget however long the wall clock says it took; one that waits past the wall-clock backstop
    (WALL_BACKSTOP_FACTOR times the budget) is stopped as stalled."""
    import time

    import oxide_build.compile

    source = fuzz_kernels.ROOT / "examples" / "saxpy.py"
    mutant = fuzz_kernels.Mutant(source, 0, source.read_text(), ())
    monkeypatch.setattr(oxide_build.compile, "compile_module", lambda *a, **k: time.sleep(1.5))
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path, timeout_s=1)
    assert outcome.ok and outcome.kind == "compiled", (outcome.kind, outcome.detail)
    assert outcome.wall_seconds >= 1.5 and outcome.seconds < 1

    def waits(*args: object, **kwargs: object) -> None:
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(oxide_build.compile, "compile_module", waits)
    monkeypatch.setattr(fuzz_kernels, "WALL_BACKSTOP_FACTOR", 2)
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path, timeout_s=1)
    assert not outcome.ok and outcome.kind == "stalled (2 s wall-clock)", outcome.kind
    assert outcome.wall_seconds >= 2


def test_fuzzer_results_file_resumes_a_run(tmp_path: Path) -> None:
    """--tsv appends a line per mutant and skips the indices the file holds; --sources keeps the
    usable sources for the next chunk."""
    sources = tmp_path / "sources.txt"
    sources.write_text("examples/saxpy.py\n")
    tsv = tmp_path / "results.tsv"
    first = fuzz_kernels.run_fuzz(3, 11, tmp_path / "w1", tsv=tsv, sources_cache=sources)
    assert [o.mutant.index for o in first.outcomes] == [0, 1, 2]
    again = fuzz_kernels.run_fuzz(5, 11, tmp_path / "w2", tsv=tsv, sources_cache=sources)
    assert [o.mutant.index for o in again.outcomes] == [3, 4]
    lines = tsv.read_text().splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == [0, 1, 2, 3, 4]
    index, ok, cpu, wall, kind, source, _mutations = lines[0].split("\t")
    assert ok in ("True", "False") and float(cpu) >= 0 and float(wall) >= 0 and source == "examples/saxpy.py"
    assert kind == first.outcomes[0].kind


def test_fuzzer_refuses_a_budget_below_one_second(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        fuzz_kernels.main(["--budget", "0"])
    assert "--budget must be at least 1 second, got 0" in capsys.readouterr().err


def test_fuzzer_reports_a_traceback_as_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer can fail: an exception from our internals is a failure, grouped by where it
    came from."""
    from oxide_build.frontend import translate

    def broken(self: object, node: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(translate.FunctionTranslator, "visit_BinOp", broken)
    source = fuzz_kernels.ROOT / "examples" / "saxpy.py"
    mutant = fuzz_kernels.Mutant(source, 0, source.read_text(), ())
    outcome = fuzz_kernels.compile_mutant(mutant, tmp_path)
    assert not outcome.ok and outcome.kind.startswith("KeyError at translate.py:visit"), outcome.kind


# ---- regression tests: one per class of failure the fuzzer found ---------------------------------


def compile_error(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + body)
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False))
    assert info.value.location is not None and info.value.location.line > 0
    return str(info.value)


def test_typevar_listing_a_type_twice(tmp_path: Path) -> None:
    """Two specializations of one symbol: llvmlite's DuplicatedNameError."""
    text = compile_error(tmp_path, """T = ox.TypeVar("T", f32, f64, f64)

@ox.kernel
def k(x: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i]
""")
    assert "kern.py:3:31: error: the TypeVar lists f64 twice" in text, text


def test_constexpr_listing_a_value_twice(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
@ox.kernel(constexprs={"n": [4, 4]})
def k(x: Slice[f32], out: DisjointSlice[f32], n: ox.Constexpr[int]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i] * n
""")
    assert "error: the values of 'n' repeat a value" in text, text


@pytest.mark.parametrize("value", ["1 << 10 ** 12", "10 ** 10 ** 10"])
def test_huge_module_constant_is_refused_without_computing_it(tmp_path: Path, value: str) -> None:
    """A MemoryError (or a hang) while folding module constants."""
    text = compile_error(tmp_path, f"""N = {value}

@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i] * N
""")
    assert "kern.py:9:25: error: the module constant 'N' = " in text and "does not fold to a 64-bit number" in text, text


@pytest.mark.parametrize("expr", ["x[i] < (1, 2)", "x[i] + (1, 2)", "-(1, 2)", "f32((1, 2))", "min(x[i], (1, 2))",
                                  "x[i] if (1, 2) else x[i]"])
def test_tuple_operand(tmp_path: Path, expr: str) -> None:
    """An AssertionError in unify: only views and None were refused as operands."""
    text = compile_error(tmp_path, f"""
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = f32({expr})
""")
    assert "kern.py:8:" in text and "internal" not in text, text


@pytest.mark.parametrize("args, message", [
    ("0, 8, 0", "kern.py:8:40: error: static_range() step must not be zero"),
    ("10 ** 30", "kern.py:8:34: error: static_range() needs compile-time integers, got 10 ** 30"),
    ("2 ** 40", "kern.py:8:18: error: static_range() would unroll 1099511627776 times (limit 1024)"),
])
def test_static_range_bounds(tmp_path: Path, args: str, message: str) -> None:
    """A ValueError (step 0) and an OverflowError from range(); 2 ** 40 built a list first."""
    text = compile_error(tmp_path, f"""
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        for j in ox.static_range({args}):
            out[i] = x[i]
""")
    assert message in text, text


def test_extern_returning_a_tuple(tmp_path: Path) -> None:
    """A C function returns no tuple: libNVVM rejected the module ('parse expected type')."""
    text = compile_error(tmp_path, """
@ox.extern("pair")
def pair(a: i64) -> tuple[i64, i64]: ...

@ox.kernel
def k(x: Slice[i64], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        q, r = pair(x[i])
        out[i] = q + r
""")
    assert "kern.py:5:21: error: an extern returns a scalar or None" in text, text


def test_static_shared_memory_past_48_kib(tmp_path: Path) -> None:
    """ptxas: 'uses too much shared data (0x40000 bytes, 0xc000 max)', from nvJitLink."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + """
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    a = ox.shared.array(8192, f32)
    b = ox.shared.array(4097, f32)
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        a[thread.idx.x] = x[i]
        b[thread.idx.x] = x[i]
        out[i] = a[thread.idx.x] + b[thread.idx.x]
""")
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",)))
    assert ("kern.py:7:5: error: the shared arrays of k() take 49156 bytes with 'b'; static shared memory holds "
            "49152 bytes (48 KiB) per block") in str(info.value), str(info.value)


def test_bf16_through_libnvvm(tmp_path: Path) -> None:
    """libNVVM has no bfloat type: 'parse expected type' came back as an unlocated error."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + """from oxide import bf16

@ox.kernel
def k(x: Slice[bf16], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = f32(x[i])
""")
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend="nvvm"))
    assert "kern.py:6:1: error: k() uses bf16, which libNVVM" in str(info.value), str(info.value)
    assert compile_module(src, "kern", CompileOptions(archs=("sm_90",))).cubins["sm_90"]


def test_lineinfo_through_libnvvm() -> None:
    """With lineinfo, libNVVM rejected 'spFlags', missed the float atomics behind their `!dbg`,
    and nvJitLink refused to link the module flags with NVRTC's; the line table was dropped."""
    compiled = compile_module(fuzz_kernels.ROOT / "examples" / "saxpy.py", "saxpy",
                              CompileOptions(archs=("sm_90",), backend="nvvm", lineinfo=True, cache=False))
    assert compiled.cubins["sm_90"] and ".loc" in compiled.ptx["sm_90"]


def test_lineinfo_with_cuda_cpp() -> None:
    root = fuzz_kernels.ROOT / "tests" / "packages" / "interop"
    compiled = compile_module(root / "ffi_kernels.py", "ffi_kernels", CompileOptions(archs=("sm_90",), lineinfo=True), root=root)
    assert compiled.cubins["sm_90"]


def test_floor_division_of_several_float_types_in_one_module(tmp_path: Path) -> None:
    """bf16 // after f64 //: both took the declaration llvm.floor.f64 ('double != bfloat')."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + """from oxide import bf16, f16

@ox.kernel
def k(a: Slice[f64], b: Slice[bf16], c: Slice[f16], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(a) and i < len(b) and i < len(c):
        out[i] = f32(a[i] // 2.0) + f32(b[i] // bf16(2.0)) + f32(c[i] // f16(3.0))
""")
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_80", "sm_90")))
    assert sorted(compiled.cubins) == ["sm_80", "sm_90"]
    assert "llvm.floor.f32" in compiled.llvm_ir and "llvm.floor.f64" in compiled.llvm_ir


@pytest.mark.parametrize(("value", "bits"), [("1e6", "0x7C00"), ("-70000.0", "0xFC00"), ("65519.0", "0x7BFF")])
def test_an_f16_constant_past_its_range_is_an_infinity(tmp_path: Path, value: str, bits: str) -> None:
    """f16(1e6): llvmlite could not write the half constant (OverflowError from struct 'e');
    the conversion rounds to nearest, so past 65504 (from 65520 on) it is an infinity, as in C."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + f"""from oxide import f16

@ox.kernel
def k(out: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = f16({value})
""")
    ptx = compile_module(src, "kern", CompileOptions(archs=("sm_80",))).ptx["sm_80"]
    assert bits in ptx.upper().replace("0X", "0x"), ptx


def test_constant_arrays_past_64_kib(tmp_path: Path) -> None:
    """A constant array (or several) past CUDA's 64 KiB of constant memory: ptxas's "File uses too
    much global constant data" as an unlocated LinkError (seed 26102 #56: port_kmeans_point with
    MAX_FEATURES 1023, 32 x 1023 floats)."""
    text = compile_error(tmp_path, """BIG = ox.constant.array(32 * 1023, f32)

@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = BIG[i]
""")
    assert "kern.py:3:7: error: constant array BIG takes 130944 bytes: more than the 65536 bytes (64 KiB) of " \
           "CUDA's constant memory" in text, text
    assert "ox.global_memory.array" in text
    exactly = tmp_path / "exactly.py"  # 64 KiB fits: ptxas links it
    exactly.write_text(HEADER + """A = ox.constant.array(8192, f32)
B = ox.constant.array((64, 128), f32)

@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = A[i] + B[0, i]
""")
    compile_module(exactly, "exactly", CompileOptions(archs=("sm_90",)))
    text = compile_error(tmp_path, """A = ox.constant.array(8192, f32)
B = ox.constant.array((64, 128), f32)
C = (1, 2, 3)

@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = A[i] + B[0, i] + f32(C[i % 3])
""")
    assert "kern.py:5:5: error: constant array C takes 24 bytes; with A (32768 bytes), B (32768 bytes), the " \
           "program's constant data is 65560 bytes: more than the 65536 bytes" in text, text


def test_an_export_in_a_module_with_bf16_and_no_cpp_links(tmp_path: Path) -> None:
    """An export makes the module link through nvJitLink; bf16 makes its Python side PTX (libNVVM
    cannot compile bf16); with no C++ beside them no input held LTO-IR and ``-lto`` failed with
    NVVM_ERROR_NO_MODULE_IN_PROGRAM, an unlocated LinkError (seed 26102 #1798: a kernel of
    tests/packages/langintr/intrk.py turned into @ox.device(export=...) beside its bf16 atomics)."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + """from oxide import bf16


@ox.kernel
def bf16_add(x: Slice[bf16], out: ox.MutSlice[bf16]) -> None:
    i = thread.index_1d()
    if i < len(x):
        ox.atomic.add(out, 0, x[i])


@ox.device(export="kern_twice")
def twice(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        out[i] = x[i] * 2.0
""")
    result = compile_module(src, "kern", CompileOptions(archs=("sm_80", "sm_90")))
    assert set(result.cubins) == {"sm_80", "sm_90"}


@pytest.mark.parametrize("expr, shown", [("ox.u64(1e309)", "inf"), ("i32(-1e309)", "-inf"), ("i64(1e309 - 1e309)", "nan")])
def test_an_integer_conversion_of_an_infinite_constant(tmp_path: Path, expr: str, shown: str) -> None:
    """int(inf) in the frontend's folding of a conversion: a bare OverflowError (seed 26102 #2350:
    port_random_walk's u64(13787848793156543929) with the literal mutated to 1e309)."""
    text = compile_error(tmp_path, f"""@ox.kernel
def k(out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = i64({expr})
""")
    assert f"error: {shown} does not fit in" in text and "finite number" in text, text


def test_a_table_where_a_number_is_unified(tmp_path: Path) -> None:
    """A module-level tuple (a constant table) passed where two numbers are unified: an
    AssertionError in semantics.unify (seed 26102 #3187: port_philox_dropout's
    ox.bits.mulhi(PHILOX_ROUND_B, c) with the constant mutated to (1, 2))."""
    text = compile_error(tmp_path, """TABLE = (1, 2)

@ox.kernel
def k(x: Slice[u32], out: DisjointSlice[u32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = ox.bits.mulhi(TABLE, x[i])
""")
    assert "needs numbers, got" in text, text
