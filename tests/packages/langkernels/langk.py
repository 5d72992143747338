"""Kernels exercising the language on the GPU (tests/test_language_gpu.py)."""
import oxide as ox
from oxide import (DisjointSlice, DisjointTensor, MutSlice, Slice, Tensor, bf16, block, f16, f32, f64,
                   i32, i64, thread, u32, warp)

T = ox.TypeVar("T", f32, f64)
SCALE = 1 << 3


def divmod_py(a: i64, b: i64) -> tuple[i64, i64]:
    return a // b, a % b


@ox.kernel
def int_semantics(a: Slice[i64], b: Slice[i64], q: DisjointSlice[i64], r: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(q) and i < len(r) and i < len(a) and i < len(b):
        qq, rr = divmod_py(a[i], b[i])
        q[i] = qq
        r[i] = rr


@ox.kernel
def float_mod(a: Slice[f64], b: Slice[f64], q: DisjointSlice[f64], r: DisjointSlice[f64]) -> None:
    i = thread.index_1d()
    if i < len(q) and i < len(r) and i < len(a) and i < len(b):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@ox.kernel
def math_fns(x: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        v = x[i]
        out[i] = (ox.math.exp(v) + ox.math.sqrt(abs(v)) + ox.math.sin(v) * ox.math.cos(v)
                  + ox.math.tanh(v) + ox.math.log(abs(v) + 1.0) + ox.math.erf(v) + ox.math.pow(abs(v), 1.5)
                  + ox.math.floor(v) + ox.math.fma(v, v, 1.0))


@ox.kernel
def warp_ops(x: Slice[i32], sums: DisjointSlice[i32], maxes: DisjointSlice[i32], ballots: DisjointSlice[u32],
             shifted: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    v = x[i] if i < len(x) else i32(0)
    s = warp.reduce_sum(v)
    m = warp.reduce_max(v)
    bal = warp.ballot(v > 0)
    up = warp.shfl_down(v, 1)
    if i < len(sums) and i < len(maxes) and i < len(ballots) and i < len(shifted):
        sums[i] = s
        maxes[i] = m
        ballots[i] = bal
        shifted[i] = up


@ox.kernel
def atomics(x: Slice[i32], counters: MutSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        ox.atomic.add(counters, 0, x[i])
        ox.atomic.min(counters, 1, x[i])
        ox.atomic.max(counters, 2, x[i])
        ox.atomic.xor(counters, 3, x[i])
        old = ox.atomic.cas(counters, 4, 0, 7)
        if old == 0:
            ox.atomic.add(counters, 5, 1)


@ox.kernel
def halves(x: Slice[bf16], y: Slice[f16], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x) and i < len(y):
        out[i] = f32(x[i] * bf16(2.0)) + f32(y[i] * f16(0.5))


@ox.kernel
def tensor_add(a: Tensor[f32, 2], b: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
    r, c = thread.index_2d()
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a[r, c] + b[c, r] * f32(SCALE)


@ox.kernel(constexprs={"REPS": [1, 3]})
def repeat(x: Slice[f32], REPS: ox.Constexpr[int], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        acc = f32(0.0)
        for k in ox.static_range(REPS):
            acc += x[i]
        out[i] = acc


@ox.kernel
def checked_read(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i + 1]


@ox.kernel
def asserts(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        assert x[i] >= 0.0, "inputs must be non-negative"
        out[i] = ox.math.sqrt(x[i])
