"""Issue 16 items 2, 3, 10, 11 and its diagnostics, at compile time: how CUDA habits type
(integer mixing, compile-time values, literals, small syntax) and the messages for what stays an
error. The GPU results are in tests/test_lang_types_gpu.py."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.ir.printer import print_program

HEADER = ("import math\nimport oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, f64, i32, i64, "
          "u8, u32, u64, thread, block, warp\n")
PACKAGE = Path(__file__).resolve().parent / "packages" / "langtypes"


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def ir_text(tmp_path: Path, body: str) -> str:
    """The IR the frontend makes, its proven bounds checks removed (before the other passes
    rewrite it)."""
    from oxide_build.frontend import build_program
    from oxide_build.passes import run_pipeline
    from oxide_build.passes.bounds_elimination import BoundsElimination
    from oxide_build.scan import ProjectIndex

    index = ProjectIndex(tmp_path)
    program = build_program(index, index.add_file(source(tmp_path, body), "kern")).program
    return print_program(run_pipeline(program, passes=(BoundsElimination(launch_versioning=False),)))


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def test_the_gpu_kernels_compile_on_both_backends() -> None:
    for backend in ("nvptx", "nvvm"):
        compiled = compile_module(PACKAGE / "typek.py", "langtypes.typek",
                                  CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, backend=backend),
                                  root=PACKAGE.parent)
        assert compiled.ptx["sm_90"]


# ---- item 2: integer mixing ------------------------------------------------------------------

def test_cuda_integer_habits_type_as_c_does(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[i32], size: u32, count: u32, out: DisjointSlice[i64]) -> None:
        i = thread.index_1d()
        lane = thread.idx.x & (size - 1)
        d = x[i] ^ (x[i] != 0)
        b = (x[i] > 0) + (x[i] > 1)
        s = x[i] >> size
        wide = i64(x[i]) + count
        for j in range(thread.idx.x, count, 32):
            pass
        if i < len(out):
            out[i] = lane + d + b + s + wide
    """)
    assert "lane: u32 = (u32(%tid.x) & (size - 1:u32))" in text
    assert "d: i32 = (x[i]!1 ^ i32((x[i]!2 != 0:i32)))" in text
    assert "b: i32 = (i32((x[i]!3 > 0:i32)) + i32((x[i]!4 > 1:i32)))" in text
    assert "s: i32 = (x[i]!5 >> i32(size))" in text       # the shifted value keeps its type
    assert "wide: i64 = (i64(x[i]!6) + i64(count))" in text  # a strictly wider signed type wins
    assert "j: u32 = u32(%tid.x)" in text                  # i32 start, u32 stop: a u32 loop


def test_signed_and_unsigned_compare_by_value(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(a: i32, n: u32, b: i64, m: u64, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        if a < n and b <= m and m > b and b >= m:
            out[i] = 1
    """)
    assert "(i64(a) < i64(n))" in text                     # both fit in i64
    assert "((b < 0:i64) or (u64(b) <= m))" in text         # no type holds i64 and u64
    assert "((b < 0:i64) or (u64(b) < m))" in text          # m > b is b < m
    assert "((not (b < 0:i64)) and (u64(b) >= m))" in text


def test_what_stays_an_integer_error(tmp_path: Path) -> None:
    shift = compile_error(tmp_path, """
    @ox.kernel
    def k(a: i32, n: u64, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        out[i] = a << n
    """)
    assert "kern.py:8:14: error: operator <<: the u64 shift amount is wider than the i32 value" in shift
    lossy = compile_error(tmp_path, """
    def f(a: i32, n: u32) -> i32:
        return a + n
    @ox.kernel
    def k(a: i32, n: u32, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        out[i] = f(a, n)
    """)
    assert "return value needs i32, got u32" in lossy and "convert explicitly with i32(...)" in lossy
    twice = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[i64], m: u64, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        if x[i] < m:
            out[i] = 1
    """)
    assert "comparing i64 with u64 evaluates the signed side twice" in twice


# ---- item 3: compile-time values -------------------------------------------------------------

def test_module_constants_computed_from_constants(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    A = 4
    B = A * 8
    C = B + A
    R = 2
    NEG = -R
    SCALE = 1.0 / C
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        tile = ox.shared.array((C, NEG + 4), f32)
        if i < len(out):
            out[i] = x[i] * SCALE + f32(NEG)
    """)
    assert "tile: shared array[36x2] of f32" in text
    assert "out[i] = ((x[i]!1 * 0.027777777777777776:f32) + -2.0:f32)" in text


def test_constexpr_bool_and_locals_derived_from_constexprs(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel(constexprs={"N": [2, 4], "FLAG": [False, True]})
    def k(x: Slice[f32], out: DisjointSlice[f32], N: ox.Constexpr[int], FLAG: ox.Constexpr[bool]) -> None:
        i = thread.index_1d()
        M = 2 * N + 1
        buf = ox.local.array(M, f32)
        if FLAG:
            buf[0] = 1.0
        if i < len(out):
            out[i] = buf[0]
    """)
    assert "kernel k_N2_FLAG0(" in text and "kernel k_N4_FLAG1(" in text
    assert "; specialization N=4, FLAG=1" in text
    assert "buf: local array[9] of f32" in text and "if True:bool:" in text
    bad = compile_error(tmp_path, """
    @ox.kernel(constexprs={"FLAG": [0, 1]})
    def k(out: DisjointSlice[f32], FLAG: ox.Constexpr[bool]) -> None:
        pass
    """)
    assert "the values of 'FLAG' must be True and/or False" in bad


def test_constexpr_parameters_of_device_functions_size_arrays(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    def window(x: Slice[f32], i: i64, W: ox.Constexpr[int]) -> f32:
        vals = ox.shared.array(2 * W + 1, f32)
        acc: f32 = 0.0
        for k in ox.static_range(-W, W + 1):
            acc += x[i + k]
        return acc

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = window(x, i, 1) + window(x, i, 2) + window(x, i, 1)
    """)
    assert text.count("device __ox_kern_window__Slice_f32_i64_W1(x: Slice[f32], i: i64) -> f32") == 1
    assert "vals: shared array[5] of f32" in text
    assert "acc: f32 = (acc + x[(i + -2:i64)]" in text
    bad = compile_error(tmp_path, """
    def window(x: Slice[f32], W: ox.Constexpr[int]) -> f32:
        return x[W]

    @ox.kernel
    def k(x: Slice[f32], n: i64, out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        out[i] = window(x, n)
    """)
    assert "kern.py:11:14: error: argument 'W' of window() is a compile-time int" in bad


def test_unroll_hint_becomes_loop_metadata(tmp_path: Path) -> None:
    body = """
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        s: f32 = 0.0
        for j in ox.unroll(range(n), 4):
            s += x[j]
        for j in ox.unroll(range(n)):
            s += x[j]
        for j in ox.unroll(range(n), 1):
            s += x[j]
        if i < len(out):
            out[i] = s
    """
    text = ir_text(tmp_path, body)
    assert "while (j < $stop1):  ; unroll 4" in text and "; unroll enable" in text and "; unroll 1" in text
    compiled = compile_module(source(tmp_path, body), "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False))
    assert '!{ !"llvm.loop.unroll.count", i32 4 }' in compiled.llvm_ir
    assert '!"llvm.loop.unroll.enable"' in compiled.llvm_ir and '!"llvm.loop.unroll.disable"' in compiled.llvm_ir
    # check-versioning gives each checked loop an unchecked copy (x[j] against len(x) tested once
    # before it): both copies keep the user's hint
    assert compiled.llvm_ir.count(", !llvm.loop !") == 6
    unchecked = compile_module(source(tmp_path, body), "kern",
                               CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, bounds_check=False))
    assert unchecked.llvm_ir.count(", !llvm.loop !") == 3
    bad = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        for j in ox.unroll(range(n), n):
            pass
    """)
    assert "the unroll count must be a compile-time integer from 1 to 1024, got n" in bad


# ---- item 10: literal locals -----------------------------------------------------------------

def test_a_literal_local_takes_its_type_from_each_use(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], y: Slice[f64], out: DisjointSlice[f32], out64: DisjointSlice[f64]) -> None:
        i = thread.index_1d()
        A1 = 0.3198
        N = 3
        if i < len(out):
            out[i] = A1 * x[i] + N
            out64[i] = A1 * y[i]
    """)
    assert "out[i] = ((0.3198:f32 * x[i]!1) + 3.0:f32)" in text   # f32 math, as 0.3198f in C++
    assert "out64[i]!3 = (0.3198:f64 * y[i]!2)" in text
    assert "A1" not in text.split("kernel k")[1]


def test_a_local_assigned_twice_or_used_outside_its_block_stays_a_variable(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        acc = 0.0
        acc += 1.0
        if i < len(out):
            j = 2
        out[i] = f32(acc) + f32(j)
    """)
    assert "acc: f64 = 0.0:f64" in text and "j: i64 = 2:i64" in text


# ---- item 11: small syntax -------------------------------------------------------------------

def test_chained_assignment_evaluates_the_value_once(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        a = b = 0
        c = d = x[i] * 2.0
        c += 1.0
        with ox.unsafe():
            out[a] = out[i] = c + d
    """)
    assert "$chain1: f32 = (x[i]!1 * 2.0:f32)\n  c: f32 = $chain1\n  d: f32 = $chain1" in text
    assert "out[0:i64?]!2 = $chain2\n  out[i]!3 = $chain2" in text


def test_keyword_arguments_to_array_intrinsics(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        a = ox.shared.array(shape=(4, 8), dtype=f32)
        b = ox.local.array(8, dtype=f32)
        c = ox.shared.dynamic(dtype=f32)
    """)
    assert "a: shared array[4x8] of f32" in text and "b: local array[8] of f32" in text
    assert "c: shared array[dynamic] of f32" in text
    unknown = compile_error(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        a = ox.shared.array(shape=8, type=f32)
    """)
    assert "kern.py:7:39: error: oxide.shared.array() has no keyword argument 'type'" in unknown
    assert "its keywords: shape, dtype" in unknown
    twice = compile_error(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        a = ox.shared.array(8, shape=8, dtype=f32)
    """)
    assert "oxide.shared.array() got 'shape' twice" in twice
    missing = compile_error(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        a = ox.shared.array(dtype=f32)
    """)
    assert "oxide.shared.array() needs 'shape' before 'dtype'" in missing


def test_swapping_array_elements_and_literal_tuples(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        buf = ox.shared.array(64, f32)
        buf[thread.idx.x % 64], buf[0] = buf[0], buf[thread.idx.x % 64]
        s: f32 = 1.0
        s, n = 0.5, 3
        with ox.unsafe():
            out[i], out[0] = out[0], out[i] * s + f32(n)
    """)
    # thread.idx.x % 64 is in [0, 64): proven, and divided unsigned
    assert ("$tuple1: f32 = buf[0:i64?]\n  $tuple2: f32 = buf[(%tid.x %u+ 64:i32)]\n"
            "  buf[(%tid.x %u+ 64:i32)] = $tuple1\n  buf[0:i64?] = $tuple2") in text
    assert "s: f32 = 0.5:f32" in text        # the literal takes the declared f32


def test_shared_arrays_declared_in_loop_bodies(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        for r in range(4):
            buf = ox.shared.array(32, f32)
            buf[thread.idx.x % 32] = 1.0
        for s in ox.static_range(3):
            tile = ox.shared.array(32, f32)
            tile[s] = 2.0
    """)
    assert text.count("tile: shared array[32] of f32") == 1 and "buf: shared array[32] of f32" in text
    ptx = compile_module(source(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        for s in ox.static_range(3):
            tile = ox.shared.array(32, f32)
            tile[s] = x[s]
        i = thread.index_1d()
        if i < len(out):
            out[i] = tile[i % 3]
    """), "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False)).ptx["sm_90"]
    # one allocation in the kernel as written (its fast instance, out[i] proven where len(x) >= 3,
    # comes after it with its own)
    assert ptx.split(".visible .entry ")[1].count(".shared .align") == 1


def test_literal_initialized_locals_take_the_type_they_meet(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        acc = 0.0
        m = float('-inf')
        offset = 1
        wide = 0.0
        j = 0
        while j < n:
            acc += x[j]
            m = max(m, x[j])
            offset *= 2
            wide += 1.0
            j += 1
        if i < len(out):
            out[i] = acc + m + f32(offset * n) + f32(wide)
    """)
    assert "acc: f32 = 0.0:f32" in text and "m: f32 = -inf:f32" in text
    assert "offset: i32 = 1:i32" in text and "j: i32 = 0:i32" in text
    assert "wide: f64 = 0.0:f64" in text            # met only literals
    annotated = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f64]) -> None:
        i = thread.index_1d()
        acc: f64 = 0.0
        acc += x[0]
        if i < len(out):
            out[i] = acc
    """)
    assert "acc: f64 = 0.0:f64" in annotated and "acc: f64 = (acc + f64(x[0:i64?]!1))" in annotated


def test_a_range_over_constants_types_its_variable_by_the_values_it_meets(tmp_path: Path) -> None:
    # Rodinia's needle kernel: `for (int m = 0; m < BLOCK_SIZE; m++)` then, in a second loop
    # counting down, `int t_index_x = tx + BLOCK_SIZE - m;` into the same int local
    text = ir_text(tmp_path, """
    BLOCK_SIZE = 16

    @ox.kernel
    def k(x: Slice[i32], n: i32, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        tx = thread.idx.x
        total = 0
        for m in range(BLOCK_SIZE):
            t_index_x = tx + 1
            total += m - tx
        for m in range(BLOCK_SIZE - 2, -1, -1):
            t_index_x = tx + BLOCK_SIZE - m
            total += t_index_x
        for w in range(4):
            total += x[w]
        for big in range(5000000000):
            if big > tx:
                break
        for r in range(n):
            total += r
        if i < len(out):
            out[i] = total
    """)
    assert "m: i32 = 0:i32" in text and "m: i32 = 14:i32" in text
    assert "t_index_x: i32 = ((tx + 16:i32) - m)" in text
    assert "w: i64 = 0:i64" in text                 # met only an index: stays i64
    assert "big: i64 = 0:i64" in text               # 5000000000 does not fit i32
    assert "r: i32 = 0:i32" in text                 # a run-time bound types it, as before


def test_a_tensor_shape_unpacks_into_names(tmp_path: Path) -> None:
    # numba's `h, w = img.shape`
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(img: ox.Tensor[f32, 2], out: ox.DisjointTensor[f32, 2]) -> None:
        row, col = thread.index_2d()
        h, w = img.shape
        sh, sw = img.strides
        if row < h and col < w and row < out.shape[0] and col < out.shape[1]:
            out[row, col] = img[row, col] + f32(sh + sw)
    """)
    assert "h: i64 = img.shape[0]" in text and "w: i64 = img.shape[1]" in text
    assert "sh: i64 = img.stride[0]" in text
    assert "img[flat_index(" in text and "checked_index" not in text   # the guard on h and w proves it
    wrong_count = compile_error(tmp_path, """
    @ox.kernel
    def k(img: ox.Tensor[f32, 2], out: DisjointSlice[f32]) -> None:
        h, w, d = img.shape
    """)
    assert "img.shape has 2 value(s); cannot unpack it into 3 names" in wrong_count
    assert "kern.py:7:5" in wrong_count
    bare = compile_error(tmp_path, """
    @ox.kernel
    def k(img: ox.Tensor[f32, 2], out: DisjointSlice[f32]) -> None:
        s = img.shape
    """)
    assert "kern.py:7:9: error: img.shape is not a value on its own" in bare
    assert "unpack it into names (h, w = img.shape)" in bare


def test_math_of_constants_folds_to_a_literal_typed_by_its_use(tmp_path: Path) -> None:
    # PolyBench's `data[...] /= sqrt(FLOAT_N) * std[j]`, Black-Scholes' `1.0f / sqrtf(2.0f * PI)`
    text = ir_text(tmp_path, """
    FLOAT_N = 3214212.01
    PI = 3.141592653589793

    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        inv_sqrt_2pi = 1.0 / ox.math.sqrt(2.0 * PI)
        wide = ox.math.sqrt(FLOAT_N)
        m = ox.math.max(3, 5)
        bad = ox.math.log(0.0)
        if i < len(out):
            out[i] = x[i] * inv_sqrt_2pi / (wide * x[0]) + f32(m) + f32(bad) + ox.math.sqrt(x[i])
    """)
    assert "0.3989422804014327:f32" in text and "1792.8223587405419:f32" in text
    assert "math.max" not in text and "+ 5.0:f32)" in text
    assert "bad: f64 = math.log(0.0:f64)" in text       # -inf: left to run time
    assert "math.sqrt(x[" in text                       # a run-time argument is not folded


@pytest.mark.parametrize("line", [
    "horz: ox.i16 = ur + 2 * mr - ul",          # cuda-samples' Sobel: `short Horz = ur + 2 * mr - ul;`
    "wide: i32 = (ur + mr) >> 1",               # the sum wraps under the shift
    "mix = (ur * mr) + n",                       # meets a wider operand
    "f = (ur - mr) * 0.5",                       # meets a float
    "out[i] = ur + mr",                          # stored into a wider element
])
def test_narrow_arithmetic_that_widens_afterwards_is_an_error(tmp_path: Path, line: str) -> None:
    message = compile_error(tmp_path, f"""
    @ox.kernel
    def k(img: Slice[u8], n: i32, out: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        ur = img[0]
        mr = img[1]
        ul = img[2]
        {line}
    """)
    assert "arithmetic can wrap around in u8 before the result becomes" in message, message
    assert "8- and 16-bit integers are not promoted to int as in C" in message
    assert "kern.py:11:" in message and "convert an operand first" in message


def test_narrow_arithmetic_that_stays_narrow_or_is_converted_is_accepted(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(img: Slice[u8], out: DisjointSlice[u8], wide: DisjointSlice[i32]) -> None:
        i = thread.index_1d()
        ur = img[0]
        mr = img[1]
        s = ur + mr                                  # u8, wraps, as in NumPy
        horz: ox.i16 = ox.i16(ur) + 2 * ox.i16(mr)   # computed in i16
        hashed = i32(ur * mr)                        # an explicit conversion: wrapping is meant
        bits = (ur & mr) | (ur >> 1)                 # no arithmetic that wraps
        out[i] = s
        wide[i] = horz + hashed + bits
    """)
    assert "s: u8 = (ur + mr)" in text and "hashed: i32 = i32((ur * mr))" in text


def test_literal_locals_take_the_type_of_an_assignment_they_made_fail(tmp_path: Path) -> None:
    # Triton/curand Philox: `unsigned c1 = 0, c2 = 0, c3 = 0;` written `c1 = 0`, met first
    # inside a value assigned to a u32 local (through a copy `_c2 = c2`)
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[u32], out: DisjointSlice[u32]) -> None:
        i = thread.index_1d()
        c0 = x[0]
        c1 = 0
        c2 = 0
        c3 = 0
        for r in ox.static_range(2):
            _c2 = c2
            c0 = ox.bits.mulhi(0xCD9E8D57, _c2) ^ c1 ^ c0
            c2 = c0 ^ c3
            c1 = 0xCD9E8D57 * _c2
            c3 = c0 + 1
        if i < len(out):
            out[i] = c0 ^ c1 ^ c2 ^ c3
    """)
    assert "c1: u32 = 0:u32" in text and "c2: u32 = 0:u32" in text and "c3: u32 = 0:u32" in text
    wide = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[u64], out: DisjointSlice[i64]) -> None:
        i = thread.index_1d()
        m = 0
        m = x[0]
        if i < len(out):
            out[i] = i64(m)
    """)
    assert "m: u64 = 0:u64" in wide              # the target itself still learns from a typed value


def test_a_retyped_local_that_no_longer_compiles_keeps_the_literal_type(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[u32], out: DisjointSlice[i64]) -> None:
        i = thread.index_1d()
        d = -1
        d += x[0]
        if i < len(out):
            out[i] = d
    """)
    assert "d: i64 = -1:i64" in text               # -1 does not fit the u32 it met


def test_stores_wrap_integers_into_the_element_type(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[i32], img: DisjointSlice[u8]) -> None:
        i = thread.index_1d()
        if i < len(img):
            img[i] = x[i] * 3
    """)
    assert "img[i] = u8((x[i]!1 * 3:i32))" in text
    bad = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], img: DisjointSlice[u8]) -> None:
        i = thread.index_1d()
        img[i] = x[i]
    """)
    assert "store into img needs u8, got f32" in bad and "convert explicitly with u8(...)" in bad
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        out[i] = float('fast')
    """)
    assert "'fast' is not a number" in text


# ---- diagnostics -----------------------------------------------------------------------------

def test_sync_in_a_device_function_called_under_a_thread_dependent_condition(tmp_path: Path) -> None:
    """Two calls deep (the divergence pass follows calls: passes/divergence.py)."""
    text = compile_error(tmp_path, """
    def inner(k: i64) -> None:
        block.sync()

    def outer(k: i64) -> None:
        inner(k)

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if x[i] > 0.0:
            outer(i64(i))
    """)
    assert "kern.py:15:9: error: outer() reaches block.sync() (at kern.py:6:5)" in text


def test_an_unannotated_device_function_parameter_is_reported_at_the_parameter(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    def f(a, b: f32) -> f32:
        return b

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        out[i] = f(x[i], x[i])
    """)
    assert "kern.py:5:7: error: parameter 'a' of f() has no type annotation" in text


def test_derived_module_constants_and_what_does_not_fold(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    A = 16
    N = int(1e3) + max(A, 4)
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        tile = ox.shared.array(N, f32)
    """)
    assert "tile: shared array[1016] of f32" in text
    bad = compile_error(tmp_path, """
    import os
    N = int(os.environ.get("N", "4"))
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        tile = ox.shared.array(N, f32)
    """)
    assert "'N' (line 6) does not fold to a number" in bad and "use a module-level constant" not in bad
    param = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
        for j in ox.static_range(n):
            pass
    """)
    assert "'n' is a run-time parameter: make it `n: ox.Constexpr[int]`" in param


def test_python_math_and_syntax_are_named_in_words(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        out[i] = math.sqrt(x[i])
    """)
    assert "unknown function 'math.sqrt'" in text and "use ox.math.sqrt(...)" in text
    comp = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        v = [x[j] for j in range(3)]
    """)
    assert "a list comprehension is not supported in kernels or device functions" in comp
    assert "ListComp" not in comp
    contains = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[i32], out: DisjointSlice[f32]) -> None:
        if x[0] in x:
            pass
    """)
    assert "comparison `in` is not supported" in contains


@pytest.mark.parametrize("expr", ["36893488147419103232", "-9223372036854775809 + x[i]",
                                  "x[i] + 9223372036854775808", "u64(-1)"])
def test_integer_literals_past_their_type_are_errors(tmp_path: Path, expr: str) -> None:
    text = compile_error(tmp_path, f"""
    @ox.kernel
    def k(x: Slice[i64], out: DisjointSlice[i64]) -> None:
        i = thread.index_1d()
        big = {expr}
        out[i] = i64(big)
    """)
    assert "does not fit" in text, text


def test_a_tuple_return_converts_each_literal(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    def f(a: f32) -> tuple[f32, i32]:
        return a, 0

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        a, b = f(x[i])
        out[i] = a + f32(b)
    """)
    assert "return (a, 0:i32,)" in text
    bad = compile_error(tmp_path, """
    def f(a: f32) -> tuple[f32, i32]:
        return a, 0.5
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        a, b = f(x[i])
    """)
    assert "element 1 of the return value needs i32, got the float literal 0.5" in bad


def test_shared_memory_past_the_limit_is_reported_at_the_source(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
    def helper(x: Slice[f32]) -> f32:
        big = ox.shared.array(8192, f32)
        big[0] = x[0]
        return big[0]

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        tile = ox.shared.array(6144, f32)
        tile[0] = x[0]
        out[i] = tile[0] + helper(x)
    """)
    assert ("kern.py:6:5: error: the shared arrays of k() take 57344 bytes with 'big' (in helper(), "
            "which it calls); static shared memory holds 49152 bytes (48 KiB) per block") in text
    ir_text(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        tile = ox.shared.array((96, 128), f32)
    """)  # exactly 48 KiB: fine


def test_python_math_constants_are_float_literals(tmp_path: Path) -> None:
    text = ir_text(tmp_path, """
    from math import pi
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        m = -math.inf
        m = max(m, x[i])
        if i < len(out):
            out[i] = 2.0 * math.pi * x[i] + pi + m
    """)
    assert "m: f32 = -inf:f32" in text
    assert "out[i] = (((6.283185307179586:f32 * x[i]!2) + 3.141592653589793:f32) + m)" in text
