"""Bounds-check elimination (oxide_build/passes/bounds_elimination.py with bounds_prover.py):
what is proven, and — as important — what must stay checked. Each case compiles a kernel and reads the check sites left in it."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module

HEADER = """
import oxide as ox
from oxide import (DisjointSlice, MutSlice, MutTensor, Slice, Tensor, block, f32, grid, i32, i64,
                   thread, u32, warp)
"""


def checks(tmp_path: Path, body: str) -> list[str]:
    """The checks left in the kernels of ``body``: "bounds x[i]", "assert …"."""
    src = tmp_path / "k.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False))
    return [f"{s.kind} {s.what}" for s in compiled.error_sites]


PROVEN = {
    "guard": """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                out[i] = x[i]
    """,
    "early return": """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i >= len(out) or i >= len(x):
                return
            out[i] = x[i]
    """,
    "conditional expression": """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] if i < len(x) else f32(0.0)
    """,
    "and chain": """
        @ox.kernel
        def k(x: Slice[i32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = i32(1) if i < len(x) and x[i] > 0 else i32(0)
    """,
    "or chain": """
        @ox.kernel
        def k(x: Slice[i32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = i32(1) if i >= len(x) or x[i] > 0 else i32(0)
    """,
    "length precondition": """
        @ox.kernel
        def k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
            assert len(x) == len(out) and len(y) >= len(out)
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] + y[i]
    """,
    "scalar length": """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert len(x) >= n and len(out) >= n
            i = thread.index_1d()
            if i < n:
                with ox.unsafe():
                    out[i] = x[i]
    """,
    "grid-stride loop": """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            for j in range(thread.index_1d(), len(x), grid.dim.x * block.dim.x):
                if j < len(out):
                    with ox.unsafe():
                        out[j] = x[j]
    """,
    "vector loads": """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            assert len(out) >= 1
            acc = f32(0.0)
            for j in range(thread.index_1d(), len(x) // 4, grid.dim.x * block.dim.x):
                a, b, c, d = x.load4(j)
                acc += a + b + c + d
            ox.atomic.add(out, 0, acc)
    """,
    "row-major 2-D": """
        @ox.kernel
        def k(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
            assert len(x) == i64(rows) * cols and len(out) == len(x)
            c = block.idx.x * block.dim.x + thread.idx.x
            r = block.idx.y * block.dim.y + thread.idx.y
            if r < rows and c < cols:
                i = i64(r) * cols + c
                v = x[i]
                if r > 0 and r < rows - 1 and c > 0 and c < cols - 1:
                    v = x[i - cols] + x[i + cols] + x[i - 1] + x[i + 1]
                with ox.unsafe():
                    out[i] = v
    """,
    "index_2d and tensors": """
        @ox.kernel
        def k(x: Tensor[f32, 2], out: MutTensor[f32, 2]) -> None:
            row, col = thread.index_2d()
            rows = x.shape[0]
            if row < rows and col < x.shape[1] and row < out.shape[0] and col < out.shape[1]:
                with ox.unsafe():
                    out[row, col] = x[row, col]
    """,
    "tile with a fixed block": """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            assert block.dim.x == 32 and block.dim.y == 8
            tile = ox.shared.array((8, 32), f32)
            red = ox.shared.array(32, f32)
            tile[thread.idx.y, thread.idx.x] = f32(1.0)
            red[warp.lane()] = tile[thread.idx.y, thread.idx.x]
            red[warp.id()] = f32(2.0)
    """,
    "split by constants": """
        @ox.kernel
        def k(x: Slice[f32], bias: Slice[f32], out: DisjointSlice[f32]) -> None:
            assert len(bias) >= 16 * 64 and len(x) == len(out)
            i = thread.index_1d()
            if i < len(out):
                t = (i // 64) % 16
                v = i % 64
                out[i] = x[i] + bias[t * 64 + v] + bias[i % 1024]
    """,
    "remainder by a size parameter": """
        @ox.kernel
        def k(x: Slice[f32], w: Slice[f32], out: DisjointSlice[f32], C: i32) -> None:
            assert C >= 1 and len(w) >= C and len(x) == len(out)
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] * w[i % C]
    """,
    "quotient by a size parameter": """
        @ox.kernel
        def k(x: Slice[f32], rows: Slice[f32], out: DisjointSlice[f32], C: i64) -> None:
            assert C >= 1 and C <= 1024 and len(rows) <= 1048576 and len(x) == len(out)
            assert len(out) <= len(rows) * C
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] * rows[i64(i) // C]
    """,
    "loop facts": """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            assert len(out) == len(x)
            for j in range(0, len(x)):
                with ox.unsafe():
                    out[j] = x[j]
            for j in range(len(x) - 1, -1, -1):
                with ox.unsafe():
                    out[j] = x[j]
    """,
}


@pytest.mark.parametrize("case", sorted(PROVEN))
def test_proven(case: str, tmp_path: Path) -> None:
    assert [c for c in checks(tmp_path, PROVEN[case]) if c.startswith("bounds")] == []


# each of these must keep the named check: proving it would be wrong
KEPT = {
    "guard on another view": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i]
    """, "bounds x[i]"),
    "off by one": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i <= len(x) and i < len(out):
                with ox.unsafe():
                    out[i] = x[i]
    """, "bounds x[i]"),
    "may be negative": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                with ox.unsafe():
                    out[i] = x[i - 1]
    """, "bounds x[i - 1]"),
    "reassigned index": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            j = i64(i)
            if j < len(x) and i < len(out):
                j = j + 1
                with ox.unsafe():
                    out[i] = x[j]
    """, "bounds x[j]"),
    "or is not and": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) or i < len(out):
                with ox.unsafe():
                    out[i] = x[i]
    """, "bounds x[i]"),
    "fact out of its branch": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            v = f32(0.0)
            if i < len(x):
                v = f32(1.0)
            if i < len(out):
                out[i] = v + x[i]
    """, "bounds x[i]"),
    "else branch": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = f32(0.0) if i < len(x) else x[i]
    """, "bounds x[i]"),
    "i32 product may wrap": ("""
        @ox.kernel
        def k(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
            assert len(x) == i64(rows) * cols and len(out) == len(x)
            c = block.idx.x * block.dim.x + thread.idx.x
            r = block.idx.y * block.dim.y + thread.idx.y
            if r < rows and c < cols:
                with ox.unsafe():
                    out[r * cols + c] = x[r * cols + c]
    """, "bounds x[r * cols + c]"),
    "row-major without a length": ("""
        @ox.kernel
        def k(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
            assert len(out) == i64(rows) * cols
            c = block.idx.x * block.dim.x + thread.idx.x
            r = block.idx.y * block.dim.y + thread.idx.y
            if r < rows and c < cols:
                with ox.unsafe():
                    out[i64(r) * cols + c] = x[i64(r) * cols + c]
    """, "bounds x[i64(r) * cols + c]"),
    "row-major column not bounded": ("""
        @ox.kernel
        def k(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
            assert len(x) == i64(rows) * cols and len(out) == len(x)
            c = block.idx.x * block.dim.x + thread.idx.x
            r = block.idx.y * block.dim.y + thread.idx.y
            if r < rows and c <= cols:
                with ox.unsafe():
                    out[0] = x[i64(r) * cols + c]
    """, "bounds x[i64(r) * cols + c]"),
    "tile without a fixed block": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            tile = ox.shared.array(32, f32)
            tile[thread.idx.x] = f32(1.0)
    """, "bounds tile[thread.idx.x]"),
    "loop variable after its loop": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            j = i64(0)
            for t in range(0, len(x)):
                j = t
            with ox.unsafe():
                out[0] = x[j]
    """, "bounds x[j]"),
    "loop variable rebound in its body": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            assert len(out) >= 1
            for t in range(0, len(x)):
                t = t + 1
                with ox.unsafe():
                    out[0] = x[t]
    """, "bounds x[t]"),
    "assigned on one path only": ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            assert len(x) >= 8 and len(out) >= 1
            if thread.idx.x == 0:
                j = 5
            with ox.unsafe():
                out[0] = x[10 - j]
    """, "bounds x[10 - j]"),
    "remainder by a parameter of unknown sign": ("""
        @ox.kernel
        def k(x: Slice[f32], w: Slice[f32], out: DisjointSlice[f32], C: i32) -> None:
            assert len(w) >= C and len(x) == len(out)
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] * w[i % C]
    """, "bounds w[i % C]"),
    "remainder of a negative dividend by a zero divisor": ("""
        @ox.kernel
        def k(w: Slice[f32], out: DisjointSlice[f32], C: i64, a: i64) -> None:
            assert C >= 0 and len(w) >= C
            i = thread.index_1d()
            if i < len(out):
                out[i] = w[a % C]
    """, "bounds w[a % C]"),
    "quotient bound off by one": ("""
        @ox.kernel
        def k(x: Slice[f32], rows: Slice[f32], out: DisjointSlice[f32], C: i64) -> None:
            assert C >= 1 and C <= 1024 and len(rows) <= 1048576 and len(x) == len(out)
            assert len(out) <= len(rows) * C + 1
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i] * rows[i64(i) // C]
    """, "bounds rows[i64(i) // C]"),
    "loaded index": ("""
        @ox.kernel
        def k(idx: Slice[i32], x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(idx):
                out[i] = x[idx[i]]
    """, "bounds x[idx[i]]"),
}


@pytest.mark.parametrize("case", sorted(KEPT))
def test_kept(case: str, tmp_path: Path) -> None:
    body, check = KEPT[case]
    assert check in checks(tmp_path, body)


def test_loaded_index_guarded_is_proven(tmp_path: Path) -> None:
    found = checks(tmp_path, """
        @ox.kernel
        def k(idx: Slice[i32], x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(idx):
                j = idx[i]
                if j >= 0 and j < len(x):
                    out[i] = x[j]
    """)
    assert [c for c in found if c.startswith("bounds")] == []


def test_grid_limit_is_checked_only_when_a_proof_relies_on_it(tmp_path: Path) -> None:
    body = """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert len(x) == n and len(out) == n
            col = block.idx.x * 8192 + thread.idx.x
            unused = block.idx.y * 4096 + thread.idx.y
            if col < n:
                with ox.unsafe():
                    out[col] = x[col]
    """
    found = checks(tmp_path, body)
    # 8192 * (limit - 1) + 1023 must fit i32: the largest power of two is 2^18
    assert [c for c in found if c.startswith("assert grid.")] == [
        "assert grid.x <= 262144: the i32 index arithmetic here assumes it (compute the index in i64 to lift the limit)"]
    assert not [c for c in found if c.startswith("bounds")]


def test_i64_index_needs_no_grid_limit(tmp_path: Path) -> None:
    found = checks(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i64, out: MutSlice[f32]) -> None:
            assert len(x) == n and len(out) == n
            col = i64(block.idx.x) * 8192 + thread.idx.x
            if col < n:
                with ox.unsafe():
                    out[col] = x[col]
    """)
    assert found == ["assert len(x) == n and len(out) == n"]


def test_range_loop_wrap_is_checked_only_when_its_facts_are_used(tmp_path: Path) -> None:
    used = checks(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            assert len(out) >= 1
            for c in range(thread.idx.x, n, block.dim.x):
                if c < len(x):
                    with ox.unsafe():
                        out[0] = x[c]
    """)
    assert used == ["assert len(out) >= 1",
                    "assert range(thread.idx.x, n, block.dim.x): stop + step must not exceed 2147483648 (i32 loop variable)"]
    unused = checks(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:
            acc = f32(0.0)
            for c in range(thread.idx.x, n, block.dim.x):
                acc += f32(c)
            i = thread.index_1d()
            if i < len(out):
                with ox.unsafe():
                    out[i] = acc
    """)
    assert unused == []


@pytest.mark.parametrize("name", ["saxpy", "transpose", "softmax", "stencil", "sgemm", "scan", "proofs"])
def test_examples_have_no_bounds_checks_left(name: str) -> None:
    root = Path(__file__).resolve().parent
    path = root.parent / "examples" / f"{name}.py" if name != "proofs" else root / "packages" / "langkernels" / "proofs.py"
    compiled = compile_module(path, name, CompileOptions(archs=("sm_90",), link_cubins=False), root=path.parent)
    assert [s.what for s in compiled.error_sites if s.kind == "bounds"] == []


@pytest.mark.parametrize("name, entry", [("stencil", "stencil5"), ("transpose", "transpose")])
def test_row_major_indices_are_32x32_multiplies(name: str, entry: str) -> None:
    """``i64(r) * cols`` with r, cols proven ≥ 0 widens with zext on both sides, which NVPTX turns
    into mul.wide.u32 (a static_range variable is a constant typed by its use, so ``ty + k``
    stays i32); a 64-bit multiply would cost several instructions per index."""
    root = Path(__file__).resolve().parent.parent
    compiled = compile_module(root / "examples" / f"{name}.py", name,
                              CompileOptions(archs=("sm_90",), link_cubins=False), root=root / "examples")
    ptx = compiled.ptx["sm_90"]
    body = ptx[ptx.index(f".entry {entry}"):]
    assert "mul.wide" in body
    assert "mul.lo.s64" not in body and "mad.lo.s64" not in body


def test_static_range_variable_is_typed_like_a_literal(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(out: MutSlice[i32]) -> None:
            acc = block.idx.x
            for s in ox.static_range(3):
                acc = acc + s            # i32 + constant stays i32
            with ox.unsafe():
                out[0] = acc + i32(s)    # after the loop s holds its last value, 2
    """))
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False))
    assert "add i64" not in compiled.llvm_ir.split("define", 1)[1].split("__oxide_fail")[0]


@pytest.mark.parametrize("bound, widened", [("assert k <= 1 << 20", True), ("", False)])
def test_unchecked_kernels_widen_from_facts_without_run_time_checks(tmp_path: Path, bound: str, widened: bool) -> None:
    """Without bounds checks the pass may still prove a widened product non-negative, but only
    from facts that need no check at run time: a range loop whose stop cannot wrap (here bounded
    by a precondition), never one that would need the entry guard a checked kernel keeps."""
    src = tmp_path / "k.py"
    src.write_text(HEADER + textwrap.dedent(f"""
        @ox.kernel(bounds_check=False)
        def k(x: Slice[f32], n: i32, k: i32, out: MutSlice[f32]) -> None:
            assert k > 0 and n > 0
            {bound}
            acc: f32 = 0.0
            for r in range(0, k, 2):  # r + 2 may wrap unless k is bounded
                acc += x[i64(r) * n]
            with ox.unsafe():
                out[0] = acc
    """))
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False))
    assert ("zext i32" in compiled.llvm_ir.split("define", 1)[1]) is widened
    assert [s for s in compiled.error_sites if s.kind == "assert" and "reserved" in s.what] == []


def _ir_after_bounds(tmp_path: Path, body: str) -> str:
    from oxide_build.frontend import build_program
    from oxide_build.ir.printer import print_program
    from oxide_build.passes import run_pipeline
    from oxide_build.passes.bounds_elimination import BoundsElimination
    from oxide_build.scan import ProjectIndex

    src = tmp_path / "k.py"
    src.write_text(HEADER + textwrap.dedent(body))
    index = ProjectIndex(tmp_path)
    program = build_program(index, index.add_file(src, "k")).program
    return print_program(run_pipeline(program, passes=(BoundsElimination(),)))


def test_guard_on_a_size_argument_versions_the_kernel(tmp_path: Path) -> None:
    text = _ir_after_bounds(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
            i = thread.index_1d()
            if i < n:
                out[i] = x[i]
    """)
    fast, _, slow = text.partition("  else:\n")
    assert "if ((len(x) >= i64(n)) and (len(out) >= i64(n))):  ; launch-versioned" in fast
    assert "out[i] = x[i]\n" in fast and "out[i]!2 = x[i]!1" in slow
    # the checked copy keeps every check: a failing access is reported as before
    assert checks(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
            i = thread.index_1d()
            if i < n:
                out[i] = x[i]
    """)[:2] == ["bounds x[i]", "bounds out[i]"]


SHARED_GUARDED = """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
        tile = ox.shared.array(256, f32)
        i = thread.index_1d()
        if i < n:
            tile[thread.idx.x % 256] = x[i]
        block.sync()
        if i < n:
            if thread.idx.x < 128:
                scratch = ox.shared.array(128, f32)
                scratch[thread.idx.x] = tile[0]
            out[i] = tile[0]
"""


def test_kernel_with_shared_arrays_is_versioned_with_one_allocation(tmp_path: Path) -> None:
    """Both copies address the same shared arrays: their declarations (one nested in a branch)
    stand once, before the launch test, and the module allocates each once."""
    text = _ir_after_bounds(tmp_path, SHARED_GUARDED)
    before, _, versioned = text.partition("  if ((len(x) >= i64(n)) and (len(out) >= i64(n))):  ; launch-versioned\n")
    assert versioned, text
    assert "tile: shared array[256] of f32" in before and "scratch: shared array[128] of f32" in before
    assert "shared array" not in versioned
    src = tmp_path / "k.py"
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False))
    allocations = [line for line in compiled.llvm_ir.splitlines() if "__oxide_shared." in line and " = internal " in line]
    # tile and scratch, once per entry point (not per copy): the kernel as written, and its fast
    # instance (passes/launch_instances.py), which runs instead of it
    assert sorted(a.split('"')[1].rsplit(".", 1)[0] for a in allocations) == [
        "__oxide_shared.k.scratch", "__oxide_shared.k.tile", "__oxide_shared.k__fast.scratch",
        "__oxide_shared.k__fast.tile"], allocations
    # a device function's shared array is its function's: one however many calls reach it
    src.write_text(HEADER + textwrap.dedent("""
        def stage(v: f32) -> f32:
            buf = ox.shared.array(64, f32)
            buf[thread.idx.x % 64] = v
            block.sync()
            return buf[0]

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32], n: i32) -> None:
            i = thread.index_1d()
            v = 0.0
            if i < n:
                v = x[i]
            w = stage(f32(v))
            if i < n:
                out[i] = w
    """))
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False))
    assert "launch-versioned" in _ir_after_bounds(tmp_path, src.read_text()[len(HEADER):])
    allocations = [line for line in compiled.llvm_ir.splitlines() if "__oxide_shared." in line and " = internal " in line]
    assert len(allocations) == 1, allocations


def test_block_shape_versioning(tmp_path: Path) -> None:
    """Checks of a shared tile indexed by thread.idx hold when the block is no larger than the
    tile: the kernel is versioned on block.dim at entry; the fast copy has none of the tile's
    checks, the other all of them (a larger block is reported as before)."""
    text = _ir_after_bounds(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            tile = ox.shared.array((32, 33), f32)
            for i in range(0, 32, 8):  # thread.idx.y + i <= 7 + 24 when block.dim.y <= 8
                tile[thread.idx.y + i, thread.idx.x] = 1.0
            block.sync()
            with ox.unsafe():
                out[0] = tile[thread.idx.y, thread.idx.x + 1]
    """)
    fast, _, slow = text.partition("  else:\n")
    # out[0]: a constant extent, len(out) >= 1
    assert ("if ((len(out) >= 1:i64) and (32:i64 >= i64(%ntid.x)) and (8:i64 >= i64(%ntid.y))):  ; launch-versioned"
            in fast)
    assert "checked_index" not in fast
    assert slow.count("checked_index") == 4
    # no thread.idx, or an index no block shape proves: not versioned
    for body in ("""
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32], j: i32) -> None:
            tile = ox.shared.array(32, f32)
            tile[j] = 1.0
            block.sync()
            with ox.unsafe():
                out[0] = tile[0]
    """, """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            tile = ox.shared.array(32, f32)
            tile[thread.idx.x - 1] = 1.0
            block.sync()
            with ox.unsafe():
                out[0] = tile[0]
    """):
        tests = [line for line in _ir_after_bounds(tmp_path, body).splitlines() if "launch-versioned" in line]
        assert all("ntid" not in line for line in tests), tests  # out[0] may version on len(out) >= 1


@pytest.mark.parametrize("body", [
    """
        @ox.kernel
        def k(x: Slice[f32], sizes: Slice[i32], out: DisjointSlice[f32]) -> None:
            n = sizes[0]
            i = thread.index_1d()
            if i < n:
                out[i] = x[i]
    """,
    """
        def copy(x: Slice[f32], out: MutSlice[f32], i: i32, n: i32) -> None:
            if i < n:
                with ox.unsafe():
                    out[i] = x[i]

        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
            copy(x, out, i32(thread.idx.x), n)
    """,
], ids=["bound loaded from memory", "device function"])
def test_no_launch_versioning(tmp_path: Path, body: str) -> None:
    """A bound read from memory is no launch fact; a device function's checks stay (only a
    kernel's entry is tested). (sizes[0] is in range where len(sizes) >= 1: a test of that
    alone may stand.)"""
    tests = [line for line in _ir_after_bounds(tmp_path, body).splitlines() if "launch-versioned" in line]
    assert all("len(x)" not in line and "len(out)" not in line for line in tests), tests
