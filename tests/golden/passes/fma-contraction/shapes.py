"""fma-contraction: the four shapes nvcc contracts in f32/f64; f16, integers and sums without a
product stay; a load moves after a product only when the product is pure."""
import oxide as ox
from oxide import MutSlice, Slice, f16, f32, f64, i64, thread


@ox.kernel
def k(x: Slice[f32], d: Slice[f64], h: Slice[f16], out: MutSlice[f32], dout: MutSlice[f64], n: i64) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(d) and i < len(h) and i < len(out) and i < len(dout):
        a = x[i]
        b = a * 2.0 + 1.0
        c = 3.0 + a * b
        e = a * b - c
        f = c - a * b
        g = a * b + c * e
        p = d[i] * d[i] + 1.0
        q = h[i] * h[i] + h[i]
        m = n * n + n
        s = a + b + c
        with ox.unsafe():
            out[i] = x[i] + a * b
            out[i] = b + c + e + f + g + f32(q) + s + f32(m)
            dout[i] = p

# BEFORE: b: f32 = ((a * 2.0:f32) + 1.0:f32)
# CHECK-LABEL: kernel k(
# CHECK: b: f32 = math.fma(a, 2.0:f32, 1.0:f32):f32
# CHECK-NEXT: c: f32 = math.fma(a, b, 3.0:f32):f32
# CHECK-NEXT: e: f32 = math.fma(a, b, (-c)):f32
# CHECK-NEXT: f: f32 = math.fma((-a), b, c):f32
# CHECK-NEXT: g: f32 = math.fma(c, e, (a * b)):f32
# CHECK-NEXT: p: f64 = math.fma(d[i]{{!\d+}}, d[i]{{!\d+}}, 1.0:f64):f64
# CHECK-NEXT: q: f16 = ((h[i]{{!\d+}} * h[i]{{!\d+}}) + h[i]{{!\d+}})
# CHECK-NEXT: m: i64 = ((n * n) + n)
# CHECK-NEXT: s: f32 = ((a + b) + c)
# CHECK: out[i]{{!\d+}} = (x[i]{{!\d+}} + (a * b))
# CHECK-NOT: math.fma
