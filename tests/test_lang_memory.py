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

from fakes import FakeDriver, fake_driver, fresh_runtime  # noqa: F401  (fixtures: fresh_runtime is autouse)

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


# ---- item 5: constant and global memory -----------------------------------------------------

def test_module_arrays_compile_to_constant_and_global_symbols(tmp_path: Path) -> None:
    src = source(tmp_path, """
        WEIGHTS = ox.constant.array(3, f32, init=(0.25, 0.5, 0.25))
        SCALE = ox.constant.array(2, f32)
        OFFSETS = (0, 1, 3, 7)
        COUNTER = ox.global_memory.array(1, ox.u32)
        UNUSED = ox.global_memory.array((2, 3), i32)

        def dot(w: Slice[f32], x: Slice[f32]) -> f32:
            acc: f32 = 0.0
            for k in range(len(w)):
                acc += w[k] * x[k]
            return acc

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i + 3 <= len(x):
                out[i] = dot(WEIGHTS, x[i:i + 3]) * SCALE[0] + f32(OFFSETS[i % 4])
                ox.atomic.add(COUNTER, 0, ox.u32(1))
    """)
    _, frontend = build_ir(src, "kern")
    text = print_program(frontend.program)
    assert "call __ox_kern_dot__constant_ro_f32_3_Slice_f32(@__oxg_kern_WEIGHTS, x[" in text
    assert "@__oxg_kern_SCALE[0:i64?]" in text and "@__oxg_kern_OFFSETS[(i64(i) %u+ 4:i64)]" in text  # i % 4 of a non-negative i: unsigned
    decls = {d.name: d for d in frontend.program.arrays}
    assert sorted(decls) == ["COUNTER", "OFFSETS", "SCALE", "UNUSED", "WEIGHTS"]  # unused ones too: the host may use them
    assert decls["WEIGHTS"].values == (0.25, 0.5, 0.25) and decls["SCALE"].values is None
    assert str(decls["OFFSETS"].ty) == "read-only constant array[4] of i64"
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False))
    ptx = compiled.ptx["sm_90"]
    assert ".visible .const .align 16 .b8 __oxg_kern_WEIGHTS[12] = {0, 0, 128, 62, 0, 0, 0, 63, 0, 0, 128, 62};" in ptx
    assert ".visible .global .align 16 .b8 __oxg_kern_COUNTER[4];" in ptx
    assert "ld.const" in ptx and "atom.global.add.u32" in ptx
    records = {r.name: r for r in compiled.arrays}
    assert records["UNUSED"] == ("UNUSED", "__oxg_kern_UNUSED", "global", "i32", (2, 3))
    assert records["WEIGHTS"].space == "constant" and records["WEIGHTS"].dtype == "f32"


def test_module_array_shapes_and_init_take_derived_module_constants(tmp_path: Path) -> None:
    # cuda-samples' `__constant__ float c_Kernel[KERNEL_LENGTH]` with KERNEL_LENGTH = 2 * R + 1
    src = source(tmp_path, """
        KERNEL_RADIUS = 2
        KERNEL_LENGTH = 2 * KERNEL_RADIUS + 1
        CLUSTERS = 4
        FEATURES = 3
        HALF = 0.5
        TAPS = ox.constant.array(KERNEL_LENGTH, f32)
        CENTRES = ox.constant.array((CLUSTERS, FEATURES), f32)
        FLAT = ox.global_memory.array(CLUSTERS * FEATURES + 1, i32)
        PAIR = ox.constant.array(2, f32, init=(HALF, HALF * 3))

        @ox.kernel
        def k(out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = TAPS[i % KERNEL_LENGTH] + CENTRES[1, 2] + f32(FLAT[0]) + PAIR[1]
    """)
    _, frontend = build_ir(src, "kern")
    shapes = {d.name: (d.ty.shape, d.values) for d in frontend.program.arrays}
    assert shapes == {"TAPS": ((5,), None), "CENTRES": ((4, 3), None), "FLAT": ((13,), None),
                      "PAIR": ((2,), (0.5, 1.5))}


def test_module_array_records_round_trip_through_the_manifest(tmp_path: Path) -> None:
    from oxide.abi.manifest import ModuleArrayRecord, ModuleManifest
    from oxide_build.package.artifacts import module_manifest

    compiled = compile_module(PACKAGE / "memspaces.py", "memspaces", CompileOptions(archs=("sm_90",), link_cubins=False))
    manifest = module_manifest(compiled)
    again = ModuleManifest.from_json(manifest.to_json())
    assert again.arrays == manifest.arrays
    assert ModuleArrayRecord("COUNTER", "__oxg_memspaces_COUNTER", "global", "u32", (1,)) in again.arrays
    assert [r.name for r in again.arrays] == ["COUNTER", "FLAG", "OFFSETS", "PER_BUCKET", "SCALE", "WEIGHTS"]


def test_the_host_handle_knows_its_name_shape_and_type() -> None:
    import types

    import oxide as ox

    mod = types.ModuleType("fake_tables")
    import sys

    sys.modules["fake_tables"] = mod
    try:
        exec("import oxide as ox\nTABLE = ox.constant.array((2, 3), ox.f32, init=(1, 2, 3, 4, 5, 6))\n", vars(mod))
        table = mod.TABLE
        assert isinstance(table, ox.ModuleArray)
        assert (table.name, table.space, table.shape, table.dtype, table.module) == ("TABLE", "constant", (2, 3), ox.f32, "fake_tables")
        with pytest.raises(TypeError, match="positive integers"):
            ox.global_memory.array(0, ox.f32)
        with pytest.raises(TypeError, match="oxide scalar type"):
            ox.global_memory.array(4, float)
    finally:
        del sys.modules["fake_tables"]


MEMORY_ERRORS: dict[str, tuple[str, str]] = {
    "writing_constant_memory": ("W = ox.constant.array(4, f32)\n" + "{K}" + "    W[0] = 1.0\n",
        "kern.py:8:5: error: 'W' is in constant memory, which kernels only read\n        W[0] = 1.0\n        ^\n"
        "  hint: fill it from the host (NAME.write(values)), or use ox.global_memory.array"),
    "writing_global_memory_outside_unsafe": ("G = ox.global_memory.array(4, f32)\n" + "{K}" + "    G[0] = 1.0\n",
        "kern.py:8:5: error: writing the global memory array 'G' needs `with oxide.unsafe():`\n        G[0] = 1.0\n"
        "        ^\n  hint: every thread may write any element (like a MutSlice): wrap the write in "
        "`with oxide.unsafe():`, or update it with ox.atomic.*"),
    "init_of_the_wrong_length": ("W = ox.constant.array(4, f32, init=(1.0, 2.0))\n" + "{K}" + "    out[i] = W[0]\n",
        "kern.py:3:36: error: init= of W has 2 value(s); its shape (4,) holds 4\n"
        "    W = ox.constant.array(4, f32, init=(1.0, 2.0))\n                                       ^\n"
        "  hint: give one value per element (nested tuples are read row by row)"),
    "a_zero_shape": ("W = ox.constant.array(0, f32)\n" + "{K}" + "    out[i] = W[0]\n",
        "kern.py:3:23: error: the shape of ox.constant.array() takes positive integer constants\n"
        "    W = ox.constant.array(0, f32)\n                          ^\n  hint: use literals or module-level integer constants"),
    "an_unknown_keyword": ("W = ox.constant.array(4, f32, values=(1.0,))\n" + "{K}" + "    out[i] = W[0]\n",
        "kern.py:3:31: error: ox.constant.array() takes the keyword init= only\n"
        "    W = ox.constant.array(4, f32, values=(1.0,))\n                                  ^\n"
        "  hint: write W = ox.constant.array(shape, dtype, init=(...))"),
    "a_float_in_an_integer_table": ("W = ox.constant.array(2, i32, init=(1, 2.5))\n" + "{K}" + "    out[i] = f32(W[0])\n",
        "kern.py:3:36: error: W holds i32, but its values include the float 2.5\n"
        "    W = ox.constant.array(2, i32, init=(1, 2.5))\n                                       ^\n"
        "  hint: give it a float element type, or write integers"),
    "a_value_that_does_not_fit": ("W = ox.constant.array(2, u8, init=(1, 300))\n" + "{K}" + "    out[i] = f32(W[0])\n",
        "kern.py:3:35: error: the value 300 of W does not fit in u8\n"
        "    W = ox.constant.array(2, u8, init=(1, 300))\n                                      ^\n  hint: use a wider element type"),
    "an_atomic_on_constant_memory": ("W = ox.constant.array(2, f32)\n" + "{K}" + "    ox.atomic.add(W, 0, 1.0)\n",
        "kern.py:8:19: error: atomic.add cannot modify 'W', a read-only constant memory array\n"
        "        ox.atomic.add(W, 0, 1.0)\n                      ^\n  hint: use ox.global_memory.array"),
    "constant_memory_to_a_mut_slice": ("W = ox.constant.array(2, f32)\ndef f(a: MutSlice[f32]) -> None:\n    pass\n" + "{K}" + "    f(W)\n",
        "kern.py:10:5: error: argument 'a' of f() needs a writable view, got read-only constant array[2] of f32\n"
        "        f(W)\n        ^\n  hint: constant memory is read-only in kernels: take it as Slice[T]"),
    "init_that_is_not_numbers": ("W = ox.constant.array(2, f32, init=(x, y))\n" + "{K}" + "    out[i] = W[0]\n",
        "kern.py:3:36: error: init= of W must be a tuple of numbers (constants)\n"
        "    W = ox.constant.array(2, f32, init=(x, y))\n                                       ^\n"
        "  hint: write the values out, e.g. init=(0.25, 0.5, 0.25)"),
    "a_constant_index_past_the_end": ("W = ox.constant.array(2, f32)\n" + "{K}" + "    out[i] = W[2]\n",
        "kern.py:8:14: error: index 2 is out of bounds for an array of 2 elements\n        out[i] = W[2]\n"
        "                 ^\n  hint: valid indices are 0 to 1"),
    "missing_the_element_type": ("W = ox.constant.array(f32)\n" + "{K}" + "    out[i] = W[0]\n",
        "kern.py:3:5: error: ox.constant.array() takes a shape and an element type, got 1 argument(s)\n"
        "    W = ox.constant.array(f32)\n        ^\n"
        "  hint: write W = ox.constant.array(16, f32) or ox.constant.array((4, 4), f32, init=(...))"),
}
KERNEL = "\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n"


@pytest.mark.parametrize("name", sorted(MEMORY_ERRORS))
def test_memory_space_errors(name: str, tmp_path: Path) -> None:
    body, expected = MEMORY_ERRORS[name]
    src = tmp_path / "kern.py"
    src.write_text(HEADER.replace("i64,", "i64, u8,") + body.replace("{K}", KERNEL))
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert str(info.value).replace(str(src), "kern.py") == expected


# ---- item 4: vector types -------------------------------------------------------------------

VECTOR_HEADER = "from oxide import f32x4, f32x2, f64x2, i32x4, u32x4, u8x4\n"
VECTOR_IMPORT = "\n        from oxide import f32x4, f32x2, f64x2, i32x4, u32x4, u8x4\n"


def test_vector_values_lanes_arithmetic_and_vector_memory_access(tmp_path: Path) -> None:
    body = VECTOR_IMPORT + """
        def lerp(a: f32x4, b: f32x4, t: f32) -> f32x4:
            return a + (b - a) * t

        @ox.kernel
        def k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if 4 * i + 3 < len(x) and 4 * i + 3 < len(y) and 4 * i + 3 < len(out):
                c = lerp(x.load4(i), y.load4(i), 0.25)
                c.y += 1.0
                c.w = -c.w
                d = -c * 2.0 + f32x4(1.0, 2.0, 3.0, 4.0)
                e = d if d.x > 0.0 else c
                out.store4(i, e)
                p, q, r, s = x.load4(i)
    """
    text = ir_text(tmp_path, body)
    assert "device __ox_kern_lerp__f32x4_f32x4_f32(a: f32x4, b: f32x4, t: f32) -> f32x4" in text
    assert "return (a + ((b - a) * f32x4(t, t, t, t)))" in text  # a scalar operand applies to every lane
    assert "c: f32x4 = c.with_y((c.y + 1.0:f32))" in text and "c: f32x4 = c.with_w((-c.w))" in text
    assert "e: f32x4 = select((d.x > 0.0:f32), d, c)" in text
    assert "view.store4(out, i64(i), ((i64(i) * 4:i64) + 3:i64), e.x, e.y, e.z, e.w):None" in text
    assert "view.load4(x, i64(i), ((i64(i) * 4:i64) + 3:i64)):f32x4" in text  # proven: no check site
    src = source(tmp_path, body)
    ptx = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False)).ptx["sm_90"]
    assert ptx.count("ld.global.nc.v4.b32") == 2 and "st.global.v4.b32" in ptx


def test_loads_of_other_widths_give_their_vector_type(tmp_path: Path) -> None:
    text = ir_text(tmp_path, VECTOR_IMPORT + """
        @ox.kernel
        def k(x: Slice[ox.f64], b: Slice[ox.u8], h: Slice[ox.f16], out: DisjointSlice[ox.f64]) -> None:
            i = thread.index_1d()
            z = x.load2(i)
            p = b.load4(i)
            lo, hi = h.load2(i)
            out[i] = z.x + ox.f64(p.w) + ox.f64(lo)
    """)
    assert "z: f64x2 = view.load2(x" in text and "p: u8x4 = view.load4(b" in text
    assert ":f16x2" in text and "lo: f16 = $vector1.x" in text  # f16x2 now (CUDA's __half2), unpacked


VECTOR_ERRORS: dict[str, tuple[str, str]] = {
    "lane_count": ("    v = f32x4(1.0, 2.0)\n", "kern.py:8:9: error: f32x4() takes 1 or 4 values, got 2\n"
                   "        v = f32x4(1.0, 2.0)\n            ^\n  hint: write f32x4(x, y, z, w) or f32x4(v) for every lane v"),
    "no_such_lane": ("    v = f32x2(1.0)\n    out[i] = v.z\n", "kern.py:9:14: error: f32x2 has no lane 'z'\n"
                     "        out[i] = v.z\n                 ^\n  hint: its lanes are x, y"),
    "vectors_of_two_types": ("    v = f32x4(1.0) + i32x4(1)\n", "kern.py:8:9: error: operator + takes vectors of one type, "
                             "got f32x4 and i32x4\n        v = f32x4(1.0) + i32x4(1)\n            ^\n"
                             "  hint: convert the lanes of one of them"),
    "integer_true_division": ("    v = i32x4(1) / i32x4(2)\n", "kern.py:8:9: error: / of i32x4 would be true division "
                              "(a float result)\n        v = i32x4(1) / i32x4(2)\n            ^\n  hint: divide lane by "
                              "lane (v.x // w.x, ...), or build a float vector from converted lanes"),
    "bitwise_on_floats": ("    v = f32x4(1.0) & f32x4(2.0)\n", "kern.py:8:9: error: operator & is not defined on f32x4\n"
                          "        v = f32x4(1.0) & f32x4(2.0)\n            ^\n  hint: vectors take + - * / (and & | ^ "
                          "for integers), lane by lane; for others, compute per lane (v.x, ...)"),
    "a_vector_where_a_scalar_goes": ("    out[i] = f32x4(1.0)\n", "kern.py:8:14: error: store into out needs f32, got "
                                     "f32x4\n        out[i] = f32x4(1.0)\n                 ^\n  hint: take one lane (v.x)"),
    "a_lane_of_another_type": ("    v = f32x4(1.0, 2.0, 3, i)\n", "kern.py:8:28: error: lane w of f32x4() needs f32, got "
                               "i64\n        v = f32x4(1.0, 2.0, 3, i)\n                               ^\n"
                               "  hint: convert explicitly with f32(...)"),
    "unpacking_into_too_few_names": ("    a, b = f32x4(1.0)\n", "kern.py:8:5: error: cannot unpack f32x4 (4 lanes) into 2 "
                                     "names\n        a, b = f32x4(1.0)\n        ^\n  hint: use exactly 4 names on the left"),
    "negating_unsigned_lanes": ("    v = -u32x4(1)\n", "kern.py:8:9: error: -u32x4: negating unsigned lanes\n"
                                "        v = -u32x4(1)\n            ^\n  hint: subtract from a vector instead"),
    "converting_a_vector_of_other_lanes": ("    v = f32x2(i32x4(1))\n", "kern.py:8:15: error: f32x2() of a i32x4: the "
                                           "lane counts differ (4 and 2)\n        v = f32x2(i32x4(1))\n"
                                           "                  ^\n  hint: convert a vector of 2 lanes, or build it "
                                           "from lanes: f32x2(f32(v[0]), ...)"),
    "a_lane_index_that_is_not_constant": ("    v = f32x4(1.0)\n    out[i] = v[i]\n", "kern.py:9:16: error: a lane of "
                                          "f32x4 is chosen at compile time; 'i' is not a constant\n        out[i] = "
                                          "v[i]\n                   ^\n  hint: index with a literal or a loop variable "
                                          "of ox.static_range(...)"),
    "a_lane_index_out_of_range": ("    v = f32x4(1.0)\n    v[4] = 1.0\n", "kern.py:9:7: error: f32x4 has lanes 0 to 3, "
                                  "not 4\n        v[4] = 1.0\n          ^"),
    "storing_a_vector_of_another_type": ("    out.store4(i, i32x4(1))\n", "kern.py:8:19: error: store4 value needs "
                                         "f32x4, got i32x4\n        out.store4(i, i32x4(1))\n                      ^\n"
                                         "  hint: pass a f32x4"),
    "choosing_between_vector_types": ("    v = f32x4(1.0) if i > 0 else f32x2(1.0)\n", "kern.py:8:9: error: a conditional "
                                      "expression chooses between f32x4 and f32x2\n        v = f32x4(1.0) if i > 0 else "
                                      "f32x2(1.0)\n            ^\n  hint: both sides must have one type"),
}


@pytest.mark.parametrize("name", sorted(VECTOR_ERRORS))
def test_vector_errors(name: str, tmp_path: Path) -> None:
    body, expected = VECTOR_ERRORS[name]
    src = tmp_path / "kern.py"
    src.write_text(HEADER + VECTOR_HEADER + KERNEL + body)
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert str(info.value).replace(str(src), "kern.py") == expected


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_arrays_of_vectors(tmp_path: Path, backend: str) -> None:
    # cuda-samples' n-body: `extern __shared__ float4 sharedPos[]`, one float4 load/store each
    src = source(tmp_path, VECTOR_IMPORT + """
        @ox.kernel
        def k(pos: Slice[f32], out: MutSlice[f32]) -> None:
            assert block.dim.x == 128
            tile = ox.shared.array(128, f32x4)
            grid2 = ox.shared.array((2, 16), ox.i32x2)
            dyn = ox.shared.dynamic(f32x4)
            acc = ox.local.array(2, f32x4)
            i = block.idx.x * 128 + thread.idx.x
            tile[thread.idx.x] = pos.load4(i)
            dyn[thread.idx.x] = tile[thread.idx.x] * 2.0
            grid2[1, thread.idx.x % 16] = ox.i32x2(1, 2)
            block.sync()
            acc[0] = f32x4(0.0)
            for j in range(128):
                acc[0] = acc[0] + tile[j] + dyn[j]
            rest = tile[64:]
            v = acc[0]
            v.w = rest[0].x + f32(grid2[1, 3].y) + f32(len(rest))
            with ox.unsafe():
                out.store4(i, v)
    """)
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False))
    ptx = compiled.ptx["sm_90"]
    assert compiled.cubins["sm_90"]
    assert "st.shared.v4" in ptx and "ld.shared.v4" in ptx and "[2048]" in ptx



@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_an_array_declared_in_a_static_range_body_is_passed_from_every_copy(tmp_path: Path, backend: str) -> None:
    # one array for every copy of the body (the declaration is lowered once): its pointer must
    # dominate each copy's use, a branch of another copy included ("Instruction does not
    # dominate all uses" from LLVM's verifier before the pointer was made in the entry block)
    src = source(tmp_path, """
        def total(v: Slice[f32]) -> f32:
            return v[0] + v[1]

        def fill(v: MutSlice[f32], a: f32) -> None:
            v[0] = a
            v[1] = a * 2.0

        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
            i = thread.index_1d()
            for u in ox.static_range(2):
                j = 2 * i + u
                if j < n:
                    pair = ox.local.array(2, f32)
                    tile = ox.shared.array(2, f32)
                    fill(pair, x[j])
                    fill(tile, x[j])
                    with ox.unsafe():
                        out[j] = total(pair) + total(tile)
    """)
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False))
    assert compiled.cubins["sm_90"]


ARRAY_OF_VECTOR_ERRORS = {
    "ox.atomic.add(a, 0, f32x4(1.0))": "atomics need elements of i32, u32, i64, u64, f32, f64, f16, bf16, got f32x4",
    "a[0] = 1.0": "store into a needs f32x4, got f64",
    "out[i] = take(a)": "argument 's' of take() needs Slice[f32], got shared array[32] of f32x4",
    "print(a[0])": "print() cannot print f32x4",
    "x = ox.bits.bitcast(out[i], f32x4)": "cannot reinterpret 32-bit f32 as 128-bit f32x4: the widths differ",
}


@pytest.mark.parametrize("line", sorted(ARRAY_OF_VECTOR_ERRORS))
def test_array_of_vector_errors(tmp_path: Path, line: str) -> None:
    message = compile_error(tmp_path, VECTOR_IMPORT + f"""
        def take(s: Slice[f32]) -> f32:
            return s[0]

        @ox.kernel
        def k(out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            a = ox.shared.array(32, f32x4)
            {line}
    """)
    assert ARRAY_OF_VECTOR_ERRORS[line] in message, message


def test_vector_types_build_tuples_on_the_host() -> None:
    import oxide as ox

    assert ox.f32x4(1, 2, 3, 4) == (1.0, 2.0, 3.0, 4.0) and ox.u8x4(7) == (7, 7, 7, 7)
    assert ox.f64x2.elem is ox.f64 and ox.f64x2.lanes == 2 and ox.VECTOR_TYPES["i32x2"] is ox.i32x2
    with pytest.raises(TypeError, match="takes 1 or 4 values"):
        ox.f32x4(1.0, 2.0)


# ---- item 4: structs ------------------------------------------------------------------------

STRUCT = """
        @ox.struct
        class Particle:
            pos: ox.f32x2
            vel: ox.f32x2
            mass: f32
"""


def test_structs_construct_read_assign_and_pass_by_value(tmp_path: Path) -> None:
    text = ir_text(tmp_path, STRUCT + """
        def step(p: Particle, dt: f32) -> Particle:
            q = p
            q.pos = p.pos + p.vel * dt
            q.mass *= 2.0
            return q

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                p = Particle(ox.f32x2(x[i], 0.0), vel=ox.f32x2(1.0), mass=2.0)
                p = step(p, 0.5)
                out[i] = p.pos.x * p.mass
    """)
    assert "device __ox_kern_step__Particle_f32(p: Particle, dt: f32) -> Particle" in text
    assert "q: Particle = q.with_0((p.0 + (p.1 * f32x2(dt, dt))))" in text
    assert "p: Particle = (f32x2(x[i], 0.0:f32), f32x2(1.0:f32, 1.0:f32, 1.0:f32, 1.0:f32), 2.0:f32,)" not in text
    assert "p: Particle = (f32x2(x[i], 0.0:f32), f32x2(1.0:f32, 1.0:f32), 2.0:f32,)" in text
    assert "out[i] = (p.0.x * p.2)" in text


def test_the_struct_is_a_dataclass_on_the_host() -> None:
    import dataclasses

    import oxide as ox

    @ox.struct
    class Pair:
        a: ox.f32
        b: ox.i32

    assert dataclasses.is_dataclass(Pair) and Pair(1.5, 2) == Pair(a=1.5, b=2)
    with pytest.raises(TypeError):
        ox.struct(3)


STRUCT_HEADER = "\n@ox.struct\nclass P:\n    x: f32\n    y: f32\n"
STRUCT_ERRORS: dict[str, tuple[str, str]] = {
    "a_missing_field": (STRUCT_HEADER + "{K}" + "    p = P(1.0)\n", "kern.py:12:9: error: P() needs the field(s) y\n"
                        "        p = P(1.0)\n            ^\n  hint: structs have no defaults on the device: give every field"),
    "an_unknown_field": (STRUCT_HEADER + "{K}" + "    p = P(1.0, z=2.0)\n", "kern.py:12:16: error: P has no field 'z'\n"
                         "        p = P(1.0, z=2.0)\n                   ^\n  hint: its fields are x, y"),
    "a_field_given_twice": (STRUCT_HEADER + "{K}" + "    p = P(1.0, x=2.0)\n", "kern.py:12:16: error: field 'x' of P() "
                            "is given twice\n        p = P(1.0, x=2.0)\n                   ^"),
    "reading_an_unknown_field": (STRUCT_HEADER + "{K}" + "    p = P(1.0, 2.0)\n    out[i] = p.z\n",
                                 "kern.py:13:14: error: P has no field 'z'\n        out[i] = p.z\n                 ^\n"
                                 "  hint: its fields are x, y"),
    "a_field_of_another_type": (STRUCT_HEADER + "{K}" + "    p = P(1.0, i)\n", "kern.py:12:16: error: field 'y' of P() "
                                "needs f32, got i64\n        p = P(1.0, i)\n                   ^\n"
                                "  hint: convert explicitly with f32(...)"),
    "a_default_value": ("\n@ox.struct\nclass P:\n    x: f32 = 0.0\n" + "{K}" + "    p = P(1.0)\n",
                        "kern.py:6:14: error: field 'x' of the struct P has a default value\n        x: f32 = 0.0\n"
                        "                 ^\n  hint: structs have no defaults on the device: pass every field when "
                        "constructing it"),
    "a_method": ("\n@ox.struct\nclass P:\n    x: f32\n    def f(self) -> f32:\n        return self.x\n" + "{K}"
                 + "    p = P(1.0)\n", "kern.py:7:5: error: the struct P may hold only annotated fields (`x: f32`)\n"
                 "        def f(self) -> f32:\n        ^\n  hint: define functions on it at module level, taking it as a "
                 "parameter"),
    "a_field_of_a_view_element": ("\n@ox.struct\nclass Q:\n    m: f32\n\n@ox.kernel\ndef k(q: MutSlice[Q], out: "
                                  "DisjointSlice[f32]) -> None:\n    with ox.unsafe():\n        q[0].m = 2.0\n",
                                  "kern.py:11:9: error: cannot assign to 'q[0].m'\n            q[0].m = 2.0\n            ^\n"
                                  "  hint: change a copy and store it back: v = q[0]; v.m = ...; q[0] = v"),
}


@pytest.mark.parametrize("name", sorted(STRUCT_ERRORS))
def test_struct_errors(name: str, tmp_path: Path) -> None:
    body, expected = STRUCT_ERRORS[name]
    src = tmp_path / "kern.py"
    src.write_text(HEADER + body.replace("{K}", KERNEL))
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert str(info.value).replace(str(src), "kern.py") == expected


def test_views_of_records_name_their_layout_in_the_manifest(tmp_path: Path) -> None:
    import oxide as ox
    from oxide.runtime.array_view import record_name

    compiled = compile_module(PACKAGE / "recordk.py", "recordk", CompileOptions(archs=("sm_90",), link_cubins=False))
    params = {p.name: p for p in compiled.kernels[0].params}
    layout = "record{x:f32@0,y:f32@4,id:i64@8,vx:f32@16,vy:f32@20}[24]"
    assert (params["particles"].kind, params["particles"].dtype) == ("slice", layout)
    assert params["out"].dtype == layout and params["ids"].dtype == "i64"
    ptx = compiled.ptx["sm_90"]
    assert "ld.global.nc.b64" in ptx and "st.global.b64" in ptx  # the i64 field at its offset
    # the host's record dtype of the same class has the same name: the launch compares the two
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("recordk_host", PACKAGE / "recordk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["recordk_host"] = module
    try:
        spec.loader.exec_module(module)
        assert record_name(ox.struct_dtype(module.Particle)) == layout
    finally:
        del sys.modules["recordk_host"]


RECORD_ERRORS: dict[str, tuple[str, str]] = {
    "a_record_with_a_bool_field": ("\n@ox.struct\nclass R:\n    x: f32\n    ok: ox.boolean\n"
                                   "\n@ox.kernel\ndef k(r: Slice[R], out: DisjointSlice[f32]) -> None:\n    pass\n",
                                   "kern.py:10:16: error: a view of R records needs scalar fields (not bool); ok is not\n"
                                   "    def k(r: Slice[R], out: DisjointSlice[f32]) -> None:\n                   ^\n"
                                   "  hint: give the record scalar fields (a vector as two fields: x, y)"),
    "a_tensor_of_records": ("\n@ox.struct\nclass R:\n    x: f32\n"
                            "\n@ox.kernel\ndef k(r: Tensor[R, 2], out: DisjointSlice[f32]) -> None:\n    pass\n",
                            "kern.py:9:17: error: Tensor elements must be scalars, not R\n"
                            "    def k(r: Tensor[R, 2], out: DisjointSlice[f32]) -> None:\n                    ^\n"
                            "  hint: a Tensor of records is not supported: take a 1-D Slice of them"),
    "a_vector_load_of_records": ("\n@ox.struct\nclass R:\n    x: f32\n"
                                 "\n@ox.kernel\ndef k(r: Slice[R], out: DisjointSlice[f32]) -> None:\n"
                                 "    i = thread.index_1d()\n    a, b = r.load2(i)\n",
                                 "kern.py:11:12: error: load2 reads scalar elements; 'r' holds R records\n"
                                 "        a, b = r.load2(i)\n               ^\n  hint: index the records one at a time: x[i]"),
}


@pytest.mark.parametrize("name", sorted(RECORD_ERRORS))
def test_record_view_errors(name: str, tmp_path: Path) -> None:
    body, expected = RECORD_ERRORS[name]
    src = tmp_path / "kern.py"
    src.write_text(HEADER + body)
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert str(info.value).replace(str(src), "kern.py") == expected


RECORD_SOURCE = """
import oxide as ox
from oxide import kernel, f32, i64, Slice, DisjointSlice


@ox.struct
class P:
    x: f32
    id: i64


@kernel
def touch(p: Slice[P], out: DisjointSlice[P]) -> None:
    pass
"""


def test_a_launch_takes_records_of_the_kernels_layout_and_refuses_others(tmp_path: Path, fake_driver: FakeDriver) -> None:  # noqa: F811
    import numpy as np

    import oxide as ox
    from oxide.abi.manifest import KernelSpec, ParamSpec
    from oxide.runtime.device_array import DeviceArray
    from fakes import make_module, slot_types

    layout = "record{x:f32@0,id:i64@8}[16]"
    kernels = (KernelSpec("touch", "touch", (ParamSpec("p", "slice", layout, 1), ParamSpec("out", "disjoint_slice", layout, 1))),)
    m = make_module(tmp_path, RECORD_SOURCE, kernels)
    fake_driver.signatures = {"touch": slot_types(kernels[0].params)}
    dtype = ox.struct_dtype(m.P)
    m.touch[1, 32](DeviceArray(0x1000, (5,), dtype, owned=False), DeviceArray(0x2000, (5,), dtype, owned=False))
    assert fake_driver.launches[0]["values"] == [0x1000, 5, 0x2000, 5]
    packed = np.dtype([("x", "<f4"), ("id", "<i8")], align=False)  # id at 4: not the device's layout
    with pytest.raises(TypeError) as info:
        m.touch[1, 32](DeviceArray(0x1000, (5,), packed, owned=False), DeviceArray(0x2000, (5,), dtype, owned=False))
    assert str(info.value) == (f"parameter 'p' of touch needs {layout} elements; got record{{x:f32@0,id:i64@4}}[12]")


def test_an_open_ended_slice_checks_its_start_against_the_length(tmp_path: Path) -> None:
    """x[k:] with k > len(x) would make a view of negative (huge) length: refused at the slice."""
    src = source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], k: i64, out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[k:][0]
    """)
    llvm_ir = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False)).llvm_ir
    loads_k = [line.split()[0] for line in llvm_ir.splitlines() if 'load i64, i64* %"k' in line]
    assert loads_k and any(f'icmp ule i64 {name}, %"x.len"' in llvm_ir for name in loads_k)
    assert "slice.bad" in llvm_ir


def test_nested_fields_and_lanes_are_assigned_through_their_local(tmp_path: Path) -> None:
    text = ir_text(tmp_path, STRUCT + """
        @ox.struct
        class Body:
            p: Particle
            tag: i32

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                b = Body(Particle(ox.f32x2(x[i]), ox.f32x2(0.0), 1.0), 7)
                b.p.vel.y = 2.0
                b.p.mass += 0.5
                out[i] = b.p.vel.y + b.p.mass
    """)
    assert "b: Body = b.with_0(b.0.with_1(b.0.1.with_y(2.0:f32)))" in text
    assert "b: Body = b.with_0(b.0.with_2((b.0.2 + 0.5:f32)))" in text


def test_cache_hinted_accesses_compile_to_hinted_ptx_and_keep_their_checks(tmp_path: Path) -> None:
    src = source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], y: MutSlice[f32], n: i64, j: i64) -> None:
        i = thread.index_1d()
        if i < n:
            with ox.unsafe():
                ox.cache.store(y, i, ox.cache.load(x, j, "cs") + ox.cache.load(y, i, "cv"), "cs")
    """)
    ptx = compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False)).ptx["sm_90"]
    assert "ld.global.cs.b32" in ptx and "ld.global.cv.b32" in ptx and "st.global.cs.b32" in ptx
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], y: MutSlice[f32], n: i64, j: i64) -> None:
        i = thread.index_1d()
        if i < n:
            with ox.unsafe():
                ox.cache.store(y, i, ox.cache.load(x, j, "cs"), "cs")
    """)
    assert "cache.load['cs'](x, j)!" in text and "cache.store['cs'](y, i, " in text  # checked like x[j]


@pytest.mark.parametrize("body, message", [
    ("v = ox.cache.load(x, i, 'cz')", "the hint of cache.load is one of \"cs\", \"cg\", \"ca\", \"lu\", \"cv\", got 'cz'"),
    ("v = ox.cache.load(x, i, hint)", "the hint of cache.load is one of"),
    ("ox.cache.store(x, i, 1.0, 'cs')", "cache.store cannot write the read-only Slice 'x'"),
    ("ox.cache.store(y, i, 1.0, 'cs')", "writing the MutSlice 'y' needs `with oxide.unsafe():`"),
    ("ox.cache.store(y, i, 1.0, 'lu')", "the hint of cache.store is one of \"cs\", \"cg\", \"wb\", \"wt\", got 'lu'"),
    ("v = ox.cache.load(b, i, 'cs')", "cache.load moves elements of 2, 4 or 8 bytes; 'b' holds u8"),
    ("v = ox.cache.load(ox.shared.array(32, f32), 0, 'cs')", "cache.load needs a 1-D view of global memory"),
    ("v = ox.cache.load(x, i)", "cache.load"),
])
def test_cache_hint_errors(tmp_path: Path, body: str, message: str) -> None:
    err = compile_error(tmp_path, f"""
    from oxide import u8

    @ox.kernel
    def k(x: Slice[f32], y: MutSlice[f32], b: Slice[u8], hint: i32) -> None:
        i = thread.index_1d()
        {body}
    """)
    assert message in err, err
