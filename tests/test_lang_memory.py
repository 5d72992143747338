"""Views as values, vector and struct types, memory spaces (docs/language.md): what compiles,
the IR it gives, and the located error for each mistake. GPU results: test_lang_memory_gpu.py."""
from __future__ import annotations

import statistics
import textwrap
import time
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.ir.printer import print_program

HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, Tensor, f32, i32, i64, thread, block\n"
PACKAGE = Path(__file__).resolve().parent / "packages" / "memkernels"


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def ir_text(tmp_path: Path, body: str) -> str:
    _, frontend = build_ir(source(tmp_path, body), "kern")
    return print_program(frontend.program)


def compile_error(tmp_path: Path, body: str) -> str:
    src = source(tmp_path, body)
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert info.value.location is not None and info.value.location.line > 0
    return str(info.value).replace(str(src), "kern.py")


# ---- item 1: views as values --------------------------------------------------------------

def test_a_shared_array_passed_to_a_device_function_keeps_its_shape_and_rules(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
        def warp_reduce(sdata: MutSlice[f32], tid: i32) -> None:
            sdata[tid] += sdata[tid + 32]

        def first(a: Slice[f32]) -> f32:
            return a[0]

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            sdata = ox.shared.array(256, f32)
            tid = thread.idx.x
            sdata[tid] = 1.0
            warp_reduce(sdata, tid)
            out[thread.index_1d()] = first(sdata)
    """)
    # one instance per array type; writes need no unsafe (the array's own rule), Slice reads only
    assert "device __ox_kern_warp_reduce__shared_f32_256_i32(sdata: shared array[256] of f32, tid: i32)" in text
    assert "device __ox_kern_first__shared_ro_f32_256(a: read-only shared array[256] of f32) -> f32" in text
    assert "return a[0:i64?]\n" in text  # a constant index into a known shape needs no check


def test_slices_are_checked_unless_proven(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
        def total(a: Slice[f32]) -> f32:
            acc: f32 = 0.0
            for k in range(len(a)):
                acc += a[k]
            return acc

        @ox.kernel
        def k(x: Slice[f32], w: i64, out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = total(x[i:i + w])
                if i + 4 <= len(x):
                    out[i] = total(x[i:i + 4])
                out[i] = total(x + i)
    """)
    assert "x[i64(i):(i64(i) + w)]!1)" in text  # unguarded: w may be negative or too large
    assert "x[i64(i):(i64(i) + 4:i64)])" in text  # proven by its guard
    assert "x[i64(i):]!2" in text  # x + i: nothing says i <= len(x)
    assert "(acc + a[k])" in text  # proven by range(len(a))


def test_views_in_locals_conditionals_and_swaps(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            a = ox.shared.array(128, f32)
            b = ox.shared.array(128, f32)
            c = ox.shared.array(64, f32)
            tid = thread.idx.x
            src = a if block.idx.x > 0 else b
            dst = b
            src, dst = dst, src
            any_len = a if tid > 3 else c
            out[thread.index_1d()] = src[0] + dst[1] + any_len[2] + f32(len(any_len))
    """)
    assert "src: shared array[128] of f32 = select((%ctaid.x > 0:i32), a, b)" in text
    assert "any_len: shared array[n] of f32 = select((tid > 3:i32), a[0:i64:], c[0:i64:])" in text
    assert "len(any_len)" in text and "any_len[2:i64?]!1" in text  # run-time length: checked


def test_a_constant_slice_of_an_array_has_a_known_shape(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            hi = t[32:]
            hi[31] = 1.0
            out[thread.index_1d()] = t[1:][62]
    """)
    assert "hi: shared array[32] of f32 = t[32:i64:]" in text
    assert "hi[31:i64?] = 1.0:f32" in text
    assert "= t[1:i64:][62:i64?]\n" in text  # 63 elements known: no check


ERRORS: dict[str, tuple[str, str]] = {
    "a_slice_of_a_disjoint_slice_is_read_only": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            tail = out[1:]
            tail[i] = x[i]
    """, "kern.py:8:5: error: 'tail' is a read-only Slice\n        tail[i] = x[i]\n        ^\n  hint: a slice of a Slice or "
         "DisjointSlice is read-only (a DisjointSlice is written only at the thread's own index); write through the "
         "parameter, or slice a MutSlice inside `with ox.unsafe():`"),
    "slice_step": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            out[i] = x[0:10:2][0]
    """, "kern.py:7:21: error: slices with a step are not supported\n        out[i] = x[0:10:2][0]\n                        ^\n"
         "  hint: index with i * step instead"),
    "negative_slice_bound": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            out[i] = x[-4:][0]
    """, "kern.py:7:16: error: negative slice start -4: views do not count from the end\n        out[i] = x[-4:][0]\n"
         "                   ^\n  hint: write the position from the start, e.g. x[len(x) - 4:]"),
    "constant_slice_outside_the_array": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            u = t[32:80]
    """, "kern.py:7:9: error: the slice [32:80] does not lie in an array of 64 elements\n        u = t[32:80]\n"
         "            ^\n  hint: bounds must satisfy 0 <= start <= stop <= 64"),
    "global_and_shared_in_one_local": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            i = thread.index_1d()
            d = t if i > 3 else x
    """, "kern.py:8:9: error: the two sides of this conditional expression: shared array[64] of f32 and Slice[f32] "
         "cannot be held as one view\n        d = t if i > 3 else x\n            ^\n  hint: a view of global memory and an "
         "array live in different memory spaces: use if/else around the accesses instead"),
    "rebinding_an_array_name": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            t = t[1:]
    """, "kern.py:7:5: error: 't' names an array (line 6) and cannot be rebound\n        t = t[1:]\n        ^\n"
         "  hint: hold the other view in a new local name"),
    "writing_an_array_passed_as_slice": ("""
        def f(a: Slice[f32], k: i32) -> None:
            a[k] = 1.0

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            f(t, thread.idx.x)
    """, "kern.py:5:5: error: 'a' is a read-only view of a shared array (a Slice parameter)\n        a[k] = 1.0\n"
         "        ^\n  hint: declare the parameter MutSlice[T] to write it"),
    "an_array_is_no_disjoint_slice": ("""
        def f(a: DisjointSlice[f32], k: i32) -> None:
            pass

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            f(t, thread.idx.x)
    """, "kern.py:10:5: error: argument 'a' of f() needs DisjointSlice[f32], got shared array[64] of f32\n"
         "        f(t, thread.idx.x)\n        ^\n  hint: take an array as Slice[T] (read) or MutSlice[T] (written "
         "anywhere, as in the caller)"),
    "array_element_type_mismatch": ("""
        def f(a: MutSlice[i32], k: i32) -> None:
            pass

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            f(t, thread.idx.x)
    """, "kern.py:10:5: error: argument 'a' of f() needs MutSlice[i32], got shared array[64] of f32\n"
         "        f(t, thread.idx.x)\n        ^\n  hint: the elements must be i32"),
    "a_view_local_keeps_its_shape": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            a = ox.shared.array(64, f32)
            b = ox.shared.array(32, f32)
            d = a
            d = b
    """, "kern.py:9:5: error: 'd' holds shared array[64] of f32 (line 8); this is shared array[32] of f32\n"
         "        d = b\n        ^\n  hint: a local keeps the view type of its first assignment: give the arrays one "
         "shape, or start from a slice (`a[0:n]` with a run-time n) to hold any length"),
    "slicing_a_tensor": ("""
        @ox.kernel
        def k(x: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:
            y = x[1:]
    """, "kern.py:6:9: error: slicing a Tensor is not supported\n        y = x[1:]\n            ^\n"
         "  hint: index the tensor element by element, or take the data as a 1-D Slice"),
    "assigning_to_a_slice": ("""
        @ox.kernel
        def k(x: MutSlice[f32], out: DisjointSlice[f32]) -> None:
            with ox.unsafe():
                x[1:3] = 0.0
    """, "kern.py:7:11: error: cannot assign to a slice\n            x[1:3] = 0.0\n              ^\n"
         "  hint: store the elements one at a time: x[i] = v"),
    "a_float_slice_bound": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            out[i] = x[1.5:][0]
    """, "kern.py:7:16: error: the start of a slice must be an integer, got f64\n        out[i] = x[1.5:][0]\n"
         "                   ^\n  hint: convert it with i64(...)"),
    "a_mut_slice_slice_written_outside_unsafe": ("""
        def f(a: MutSlice[f32], k: i32) -> None:
            a[k] = 1.0

        @ox.kernel
        def k(x: MutSlice[f32], out: DisjointSlice[f32]) -> None:
            f(x[4:], thread.idx.x)
    """, "kern.py:5:5: error: writing the MutSlice 'a' needs `with oxide.unsafe():`\n        a[k] = 1.0\n        ^\n"
         "  hint: wrap the write in `with oxide.unsafe():`, or use a DisjointSlice"),
    "an_atomic_on_an_array_passed_as_slice": ("""
        def f(a: Slice[f32], k: i32) -> None:
            ox.atomic.add(a, k, 1.0)

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(64, f32)
            f(t, thread.idx.x)
    """, "kern.py:5:19: error: atomic.add cannot modify 'a', a read-only view of a shared array\n"
         "        ox.atomic.add(a, k, 1.0)\n                      ^\n  hint: declare the parameter MutSlice[T]"),
    "slicing_a_2d_array": ("""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            t = ox.shared.array((8, 8), f32)
            u = t[1:]
    """, "kern.py:7:9: error: slicing a 2-D array is not supported\n        u = t[1:]\n            ^\n"
         "  hint: slice a 1-D array, or index it as a[i, j]"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_view_value_errors(name: str, tmp_path: Path) -> None:
    body, expected = ERRORS[name]
    assert compile_error(tmp_path, body) == expected


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_the_gpu_test_kernels_compile_to_ptx_quickly(backend: str, tmp_path: Path) -> None:
    """Every memkernels module through both backends (ptxas checks the PTX); compile time per
    kernel stays within the 50 ms median budget (measured on the IR path, which the budget is for)."""
    for path in sorted(PACKAGE.glob("*.py")):
        compiled = compile_module(path, path.stem, CompileOptions(archs=("sm_90",), backend=backend, link_cubins=False))
        assert compiled.kernels
    times = []
    for _ in range(3):
        for path in sorted(PACKAGE.glob("*.py")):
            start = time.perf_counter()
            _, frontend = build_ir(path, path.stem)
            times.append((time.perf_counter() - start) / max(1, len(frontend.kernels)))
    assert statistics.median(times) < 0.050
