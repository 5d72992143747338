"""N-d disjoint outputs: DisjointTensor[T, 3] with thread.index_3d(), rows from block.idx (with
the launch preconditions that keep the writes disjoint), proofs from launch-shape facts; and
@kernel/@extern options from module constants (docs/language.md, "Views and memory")."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import build_ir
from oxide_build.ir import nodes as ir

from launch_versions import body_copies

HEADER = ("import oxide as ox\n"
          "from oxide import Slice, DisjointSlice, Tensor, DisjointTensor, f32, i32, i64, thread, block, grid\n")


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def kernels(tmp_path: Path, body: str) -> dict[str, ir.Function]:
    _, frontend = build_ir(source(tmp_path, body), "kern")
    return {f.symbol: f for f in frontend.program.functions if f.is_kernel}


def preconditions(fn: ir.Function) -> list[object]:
    return [p.expr for p in fn.preconditions]


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def count_checks(fn: ir.Function, node: type = ir.Intrinsic) -> int:
    """How many checked_index intrinsics (or nodes of another class) ``fn`` has."""
    found = 0

    def walk(x: object) -> None:
        nonlocal found
        if isinstance(x, node) and (node is not ir.Intrinsic or getattr(x, "name", "") == "checked_index"):
            found += 1
        if isinstance(x, list):
            for y in x:
                walk(y)
        elif hasattr(x, "__dataclass_fields__"):
            for name in x.__dataclass_fields__:
                walk(getattr(x, name))

    walk(fn.body)
    return found


def test_a_3d_disjoint_tensor_is_written_at_index_3d_with_no_precondition(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(x: Tensor[f32, 3], out: DisjointTensor[f32, 3]) -> None:
        d, r, c = thread.index_3d()
        if d < out.shape[0] and r < out.shape[1] and c < out.shape[2]:
            out[d, r, c] = x[d, r, c] * 2.0
    """)
    assert preconditions(fns["k"]) == []
    # one checked store per copy of the body (bounds-elimination may version it on x's shape)
    copies = body_copies(fns["k"])
    assert count_checks(fns["k"], ir.Store) == copies


def test_index_3d_lowers_to_the_z_y_x_registers(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    from oxide_build.compile import CompileOptions, compile_module

    src = source(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 3]) -> None:
        d, r, c = thread.index_3d()
        if d < out.shape[0] and r < out.shape[1] and c < out.shape[2]:
            out[d, r, c] = f32(d * 10000 + r * 100 + c)
    """)
    ll = compile_module(src, "kern", CompileOptions(archs=("sm_90",))).llvm_ir
    for reg in ("ctaid.z", "ntid.z", "tid.z", "ctaid.y", "tid.y", "ctaid.x", "tid.x"):
        assert f"llvm.nvvm.read.ptx.sreg.{reg}" in ll, reg


def test_a_row_from_block_idx_makes_the_uncovered_extents_launch_preconditions(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
        row = block.idx.y
        col = thread.index_1d()
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = x[row, col] + 1.0
    """)
    assert preconditions(fns["k"]) == [["eq", ["grid", 2], ["const", 1]], ["eq", ["block", 1], ["const", 1]],
                                       ["eq", ["block", 2], ["const", 1]]]


def test_block_idx_and_thread_idx_as_row_and_column(tmp_path: Path) -> None:
    # one block per row, one thread per column: block.idx.x and thread.idx.x tell threads apart
    # when the grid and the block are 1-D
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        r = i64(block.idx.x)
        if r < out.shape[0] and thread.idx.x < out.shape[1]:
            out[r, thread.idx.x] = 1.0
    """)
    assert preconditions(fns["k"]) == [["eq", ["grid", 1], ["const", 1]], ["eq", ["grid", 2], ["const", 1]],
                                       ["eq", ["block", 1], ["const", 1]], ["eq", ["block", 2], ["const", 1]]]


def test_a_launch_shape_fact_proves_the_block_row_in_bounds(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
        assert grid.dim.y == out.shape[0] and grid.dim.y == x.shape[0] and x.shape[1] == out.shape[1]
        _, col = thread.index_2d()
        if col < out.shape[1]:
            out[block.idx.y, col] = x[block.idx.y, col] * 3.0
    """)
    assert count_checks(fns["k"]) == 0  # every index proven: nothing checked on the device
    assert ["eq", ["block", 1], ["const", 1]] in preconditions(fns["k"])


def test_the_documented_index_2d_form_is_unchanged(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        r, c = thread.index_2d()
        if r < out.shape[0] and c < out.shape[1]:
            out[r, c] = 1.0
    """)
    # index_2d() leaves out z: distinct threads of a launch with block.dim.z == grid.dim.z == 1
    assert preconditions(fns["k"]) == [["and", [["eq", ["block", 2], ["const", 1]], ["eq", ["grid", 2], ["const", 1]]]]]


@pytest.mark.parametrize("index, message", [
    ("d, r, i", "'i' is not one"),
    ("d, r, c + 1", "'c + 1' is not one"),
    ("d, block.dim.y, c", "'block.dim.y' is not one"),
])
def test_a_3d_write_at_another_index_is_refused(tmp_path: Path, index: str, message: str) -> None:
    msg = compile_error(tmp_path, f"""
    @ox.kernel
    def k(out: DisjointTensor[f32, 3], i: i64) -> None:
        d, r, c = thread.index_3d()
        if d < out.shape[0] and r < out.shape[1] and c + 1 < out.shape[2] and i < out.shape[2]:
            out[{index}] = 1.0
    """)
    assert "kern.py:8:" in msg and "a DisjointTensor is written only at the calling thread's own index" in msg
    assert message in msg and "thread.index_3d()" in msg, msg


def test_a_local_assigned_twice_is_no_row_index(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        row = block.idx.y
        if row > 3:
            row = 0
        _, col = thread.index_2d()
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = 1.0
    """)
    assert "kern.py:11:" in msg and "'row' is not one" in msg


def test_a_device_function_needs_indices_that_cover_the_launch(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    def put(out: DisjointTensor[f32, 2], c: ox.ThreadIndex) -> None:
        out[block.idx.y, c] = 1.0

    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        c = thread.index_1d()
        if block.idx.y < out.shape[0] and c < out.shape[1]:
            put(out, c)
    """)
    assert "kern.py:5:" in msg and "a device function writes a DisjointTensor only at indices" in msg


def test_a_4d_disjoint_tensor_takes_index_3d_and_a_block_index(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 4], n: i32) -> None:
        d, r, c = thread.index_3d()
        b = block.idx.z
        if b < out.shape[0] and d < out.shape[1] and r < out.shape[2] and c < out.shape[3]:
            out[b, d, r, c] = 1.0
    """)
    assert preconditions(fns["k"]) == []  # index_3d already tells every thread apart


# ---- @kernel / @extern options from module constants ------------------------------------------

def test_launch_bounds_and_max_registers_from_module_constants(tmp_path: Path) -> None:
    fns = kernels(tmp_path, """
    BLOCK = 128
    THREADS = 2 * BLOCK
    REGS: ox.Constexpr[int] = 64

    @ox.kernel(launch_bounds=THREADS, max_registers=REGS)
    def k(out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = 1.0
    """)
    assert fns["k"].launch_bounds == 256 and fns["k"].max_registers == 64


@pytest.mark.parametrize("value, message", [
    ("BIG", "launch_bounds must be an integer from 1 to 1024 (it is 2048)"),
    ("NAME", "launch_bounds must be an integer from 1 to 1024"),
    ("UNKNOWN", "launch_bounds must be an integer from 1 to 1024"),
])
def test_bad_launch_bounds_constants(tmp_path: Path, value: str, message: str) -> None:
    msg = compile_error(tmp_path, f"""
    BIG = 2048
    NAME = "x"

    @ox.kernel(launch_bounds={value})
    def k(out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = 1.0
    """)
    assert "kern.py:7:" in msg and message in msg and "module-level integer constant" in msg, msg


def test_extern_sources_from_module_constants(tmp_path: Path) -> None:
    _, frontend = build_ir(source(tmp_path, """
    CSRC = "csrc/one.cu"
    MORE = ("csrc/two.cu", CSRC)

    @ox.extern("one", sources=[CSRC])
    def one(x: f32) -> f32: ...

    @ox.extern("two", sources=MORE)
    def two(x: f32) -> f32: ...

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = one(x[i]) + two(x[i])
    """), "kern")
    by_symbol = {e.symbol: e.sources for e in frontend.program.externs}
    assert by_symbol["one"] == [str((tmp_path / "csrc/one.cu").resolve())]
    assert by_symbol["two"] == [str((tmp_path / "csrc/two.cu").resolve()), str((tmp_path / "csrc/one.cu").resolve())]


def test_extern_sources_that_are_no_strings(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    N = 3

    @ox.extern("one", sources=[N])
    def one(x: f32) -> f32: ...

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = one(x[i])
    """)
    assert "kern.py:6:" in msg and "sources must be a list of file names (strings)" in msg
    assert "module-level string constants" in msg


def test_the_runtime_refuses_a_launch_with_two_threads_per_element(tmp_path: Path) -> None:
    from oxide.runtime import preconditions as runtime_preconditions

    _, frontend = build_ir(source(tmp_path, """
    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        col = thread.index_1d()
        if block.idx.y < out.shape[0] and col < out.shape[1]:
            out[block.idx.y, col] = 1.0
    """), "kern")
    spec = frontend.kernels[0]
    sites = {s.id: s.what for s in frontend.error_sites}
    assert runtime_preconditions.failed(spec.preconditions, [], (4, 8, 1), (128, 1, 1)) is None
    refused = runtime_preconditions.failed(spec.preconditions, [], (4, 8, 1), (64, 2, 1))
    assert refused is not None and sites[refused].startswith("block.dim.y == 1: the DisjointTensor write "
                                                             "out[block.idx.y, col]")
    refused = runtime_preconditions.failed(spec.preconditions, [], (4, 8, 2), (128, 1, 1))
    assert refused is not None and sites[refused].startswith("grid.dim.z == 1")


def test_a_transposed_write_tells_threads_apart(tmp_path: Path) -> None:
    # (row, col) -> out[col, row] is one element per thread; only z is left out
    fns = kernels(tmp_path, """
    @ox.kernel
    def k(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
        r, c = thread.index_2d()
        if r < x.shape[0] and c < x.shape[1] and c < out.shape[0] and r < out.shape[1]:
            out[c, r] = x[r, c]
    """)
    assert preconditions(fns["k"]) == [["eq", ["grid", 2], ["const", 1]], ["eq", ["block", 2], ["const", 1]]]


def test_a_device_function_keeps_the_axis_of_a_thread_index_argument(tmp_path: Path) -> None:
    # the row of index_2d passed as `ThreadIndex` stays a row index in the callee: writing a
    # DisjointSlice there would let every thread of the row write one element
    msg = compile_error(tmp_path, """
    def put(out: DisjointSlice[f32], i: ox.ThreadIndex) -> None:
        out[i] = 1.0

    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        r, c = thread.index_2d()
        if r < len(out):
            put(out, r)
    """)
    assert "kern.py:5:" in msg and "'i' is ThreadIndex(row)" in msg, msg


def test_a_device_function_writes_a_2d_disjoint_tensor_at_the_kernels_row_and_col(tmp_path: Path) -> None:
    _, frontend = build_ir(source(tmp_path, """
    def put(out: DisjointTensor[f32, 2], r: ox.ThreadIndex, c: ox.ThreadIndex) -> None:
        out[r, c] = 1.0

    @ox.kernel
    def k(out: DisjointTensor[f32, 2]) -> None:
        r, c = thread.index_2d()
        if r < out.shape[0] and c < out.shape[1]:
            put(out, r, c)
    """), "kern")
    symbols = [f.symbol for f in frontend.program.functions if not f.is_kernel]
    assert symbols == ["__ox_kern_put__DisjointTensor_f32, 2_ThreadIndex_row_ThreadIndex_col"]
