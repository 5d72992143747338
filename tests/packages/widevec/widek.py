"""Kernels for tests/test_wide_vectors_gpu.py: 32-byte vectors (CUDA's double4, two 16-byte
accesses) and 16-byte vectors of 8 halves (the "x128" idiom: bf16x8 / f16x8 with lane-wise
conversions to f32x8 and back)."""
import oxide as ox
from oxide import DisjointSlice, Slice, bf16, bf16x8, f16, f16x8, f32, f32x8, f64, thread


@ox.kernel
def double4_axpy(a: f64, x: Slice[f64], y: Slice[f64], out: DisjointSlice[f64]) -> None:
    i = thread.index_1d()
    if 4 * i + 3 < len(x) and 4 * i + 3 < len(y) and 4 * i + 3 < len(out):
        v = x.load4(i)              # an f64x4 (double4): two ld.global.v2.f64
        out.store4(i, v * a + y.load4(i))


@ox.kernel
def float8_scale(x: Slice[f32], out: DisjointSlice[f32], s: f32) -> None:
    i = thread.index_1d()
    if 8 * i + 7 < len(x) and 8 * i + 7 < len(out):
        v = x.load8(i)              # an f32x8: two ld.global.v4.f32
        for k in ox.static_range(8):
            v[k] = v[k] * s + f32(k)
        out.store8(i, v)


def lanes_affine(v: f32x8, s: f32) -> f32x8:
    for k in ox.static_range(8):
        v[k] = v[k] * s + f32(k)
    return v


@ox.kernel
def bf16x128(x: Slice[bf16], out: DisjointSlice[bf16], widened: DisjointSlice[f32], s: f32) -> None:
    i = thread.index_1d()
    if 8 * i + 7 < len(x) and 8 * i + 7 < len(out) and 8 * i + 7 < len(widened):
        packed = x.load8(i)         # 8 bf16 in one 16-byte load
        v = f32x8(packed)           # exact
        widened.store8(i, v)
        out.store8(i, bf16x8(lanes_affine(v, s)))  # each lane rounded to nearest even


@ox.kernel
def f16x128(x: Slice[f16], out: DisjointSlice[f16], s: f32) -> None:
    i = thread.index_1d()
    if 8 * i + 7 < len(x) and 8 * i + 7 < len(out):
        out.store8(i, f16x8(lanes_affine(f32x8(x.load8(i)), s)))
