"""Vector types (docs/language.md, "Vector types"): float4 loads and stores with arithmetic
(NVIDIA's "CUDA Pro Tip: Increase Performance with Vectorized Memory Access", ported), uchar4
pixels, double2 complex numbers, int2 pairs. Checked against NumPy by tests/test_lang_memory_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, f32x4, f64x2, i32x2, i64, u8x4, thread
from oxide import MutSlice, u8, i32


def lerp(a: f32x4, b: f32x4, t: f32) -> f32x4:
    return a + (b - a) * t


@ox.kernel
def saxpy4(a: f32, x: Slice[f32], y: Slice[f32], out: MutSlice[f32]) -> None:
    """out[4k..4k+3] = lerp(a * x + y, x, 0.25) with the lane y plus 1 and the lane w negated."""
    k = thread.index_1d()
    if 4 * k + 3 < len(x) and 4 * k + 3 < len(y) and 4 * k + 3 < len(out):
        v = a * x.load4(k) + y.load4(k)
        w = lerp(v, x.load4(k), 0.25)
        w.y += 1.0
        w.w = -w.w
        with ox.unsafe():
            out.store4(k, w)


@ox.kernel
def invert_rgb(pixels: Slice[u8], out: MutSlice[u8]) -> None:
    """RGBA pixels: the colour lanes inverted, alpha kept (uchar4)."""
    k = thread.index_1d()
    if 4 * k + 3 < len(pixels) and 4 * k + 3 < len(out):
        p = pixels.load4(k)
        q = u8x4(255) - p
        q.w = p.w
        with ox.unsafe():
            out.store4(k, q)


def cmul(a: f64x2, b: f64x2) -> f64x2:
    return f64x2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)


@ox.kernel
def complex_multiply(x: Slice[f64], y: Slice[f64], out: MutSlice[f64]) -> None:
    """Interleaved complex numbers (re, im): out = x * y + conj(x) (double2)."""
    k = thread.index_1d()
    if 2 * k + 1 < len(x) and 2 * k + 1 < len(y) and 2 * k + 1 < len(out):
        a = x.load2(k)
        b = y.load2(k)
        conj = a * f64x2(1.0, -1.0)
        z = cmul(a, b) + conj
        with ox.unsafe():
            out.store2(k, z.x, z.y)


@ox.kernel
def pair_min_max(x: Slice[i32], out: MutSlice[i32]) -> None:
    """Pairs (a, b) -> (min, max), through an int2 chosen by a conditional expression."""
    k = thread.index_1d()
    if 2 * k + 1 < len(x) and 2 * k + 1 < len(out):
        p = x.load2(k)
        swapped = i32x2(p.y, p.x)
        q = p if p.x <= p.y else swapped
        lo, hi = q
        with ox.unsafe():
            out.store2(k, lo, hi)
