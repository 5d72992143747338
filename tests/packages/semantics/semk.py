"""Kernels for tests/test_semantics_gpu.py: shifts by run-time amounts, integer division by
run-time divisors and float → int conversions, whose results docs/language.md defines for
every input."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, i8, i16, i32, i64, thread, u8, u16, u32, u64

I = ox.TypeVar("I", i8, i32, i64, u8, u32, u64)


@ox.kernel
def shifts(x: Slice[I], s: Slice[I], left: DisjointSlice[I], right: DisjointSlice[I]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(s) and i < len(left) and i < len(right):
        left[i] = x[i] << s[i]
        right[i] = x[i] >> s[i]


@ox.kernel
def divisions(x: Slice[I], y: Slice[I], q: DisjointSlice[I], r: DisjointSlice[I]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(y) and i < len(q) and i < len(r):
        q[i] = x[i] // y[i]
        r[i] = x[i] % y[i]


F = ox.TypeVar("F", f32, f64)


@ox.kernel
def to_ints(x: Slice[F], a: DisjointSlice[i8], b: DisjointSlice[i16], c: DisjointSlice[i32], d: DisjointSlice[i64],
            e: DisjointSlice[u8], f: DisjointSlice[u16], g: DisjointSlice[u32], h: DisjointSlice[u64]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(a) and i < len(b) and i < len(c) and i < len(d):
        if i < len(e) and i < len(f) and i < len(g) and i < len(h):
            v = x[i]
            a[i] = i8(v)
            b[i] = i16(v)
            c[i] = i32(v)
            d[i] = i64(v)
            e[i] = u8(v)
            f[i] = u16(v)
            g[i] = u32(v)
            h[i] = u64(v)
