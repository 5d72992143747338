"""Kernels written with CUDA C++ habits (issue 16, items 2, 3, 10, 11), for
tests/test_lang_types.py (compiles them) and tests/test_lang_types_gpu.py (runs them against
NumPy). Each kernel says which habit it exercises."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, i32, i64, u8, u32, thread


@ox.kernel
def int_mix(x: Slice[i32], size: u32, count: u32, lane_out: DisjointSlice[u32], flip_out: DisjointSlice[i32],
            below_out: DisjointSlice[i32], shift_out: DisjointSlice[i32], sum_out: DisjointSlice[i64]) -> None:
    """i32/u32/bool mixes: `threadIdx.x & (size - 1)`, `v ^ (v > 0)`, a signed value against
    an unsigned count, a signed value shifted by an unsigned amount, a loop from an i32 start
    to a u32 count."""
    i = thread.index_1d()
    if i < len(lane_out):
        v = x[i]
        lane_out[i] = thread.idx.x & (size - 1)      # i32 & u32 -> u32
        flip_out[i] = v ^ (v > 0)                    # bool in integer arithmetic -> i32
        below_out[i] = i32(v < count)                # by value: -5 < 3u is true
        shift_out[i] = v >> (size >> 3)              # arithmetic shift of the i32 by a u32
        lo = v % 16                                  # i32, 0..15
        acc = i64(0)
        for j in range(lo, count):                   # i32 start, u32 stop: a u32 loop
            acc += j
        sum_out[i] = acc


ROWS = 4
COLS = 8
CELLS = ROWS * COLS          # a module constant computed from others
R = 2
NEG_R = -R


def window_sum(x: Slice[f32], i: i64, W: ox.Constexpr[int]) -> f32:
    """A Constexpr parameter of a device function sizes a local array and bounds static_range."""
    vals = ox.local.array(2 * W + 1, f32)
    for k in ox.static_range(-W, W + 1):
        j = i + k
        vals[k + W] = x[j] if j >= 0 and j < len(x) else f32(0.0)
    acc: f32 = 0.0
    for k in ox.static_range(2 * W + 1):
        acc += vals[k]
    return acc


@ox.kernel(constexprs={"H": [1, 3], "SCALE": [False, True]})
def constants(x: Slice[f32], out: DisjointSlice[f32], H: ox.Constexpr[int], SCALE: ox.Constexpr[bool]) -> None:
    """Compile-time values: derived module constants, -R, a local derived from a Constexpr,
    Constexpr[bool], a literal local in f32 math, static_range(-R, R + 1), an unroll hint."""
    i = thread.index_1d()
    tile = ox.shared.array(CELLS, f32)
    tile[thread.idx.x % CELLS] = f32(CELLS)
    A1 = 0.319                   # a named constant: the math below stays f32
    W = H + 1                    # derived from a Constexpr: sizes window_sum's array
    if i < len(out):
        s = window_sum(x, i, W)
        for k in ox.static_range(NEG_R, R + 1):
            s += f32(k * k)      # 4 + 1 + 0 + 1 + 4
        extra: f32 = 0.0
        for j in ox.unroll(range(i % 7), 4):
            extra += x[j]
        s += extra
        if SCALE:
            s = s * A1
        out[i] = s


@ox.kernel
def small_syntax(x: Slice[f32], reps: i32, out: MutSlice[f32]) -> None:
    """Chained assignment, numba's keyword arguments, a shared array declared in a loop body,
    swapping array elements: each block reverses its 64 elements `reps` times."""
    assert block.dim.x == 64
    assert len(out) == len(x)
    t = thread.idx.x
    g = i64(block.idx.x) * 64 + t
    lo = hi = x[g] if g < len(x) else f32(0.0)
    for r in range(reps):
        buf = ox.shared.array(shape=64, dtype=f32)
        buf[t] = lo
        block.sync()
        if t < 32:
            buf[t], buf[63 - t] = buf[63 - t], buf[t]
        block.sync()
        lo = buf[t]
        block.sync()
    if g < len(out):
        with ox.unsafe():
            out[g] = lo + hi


@ox.kernel
def literal_locals(x: Slice[f32], n: i32, counts: DisjointSlice[u8], out: DisjointSlice[f32]) -> None:
    """Locals first assigned a literal take the type they meet (acc and m: f32, j: i32), and
    an i32 stored into a u8 element wraps as in C."""
    i = thread.index_1d()
    if i < len(out):
        acc = 0.0
        m = float('-inf')
        j = 0
        while j < n:
            v = x[(i + j) % len(x)]
            acc += v
            m = max(m, v)
            j += 1
        out[i] = acc * m
        counts[i] = j + 250
