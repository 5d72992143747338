"""fma-contraction: a * b + c in f32/f64 becomes math.fma where nvcc contracts it; integers,
halves and sums without a product stay as they are; a load moves after a product only when
the product is pure."""
import oxide as ox
from oxide import MutSlice, Slice, f16, f32, f64, i64, thread


@ox.kernel
def k(x: Slice[f32], d: Slice[f64], h: Slice[f16], out: MutSlice[f32], dout: MutSlice[f64], n: i64) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(d) and i < len(h) and i < len(out) and i < len(dout):
        a = x[i]
        b = a * 2.0 + 1.0          # a * b + c
        c = 3.0 + a * b            # c + a * b
        e = a * b - c              # a * b - c: fma(a, b, -c)
        f = c - a * b              # c - a * b: fma(-a, b, c)
        g = a * b + c * e          # both products: the right one is fused
        p = d[i] * d[i] + 1.0      # f64
        q = h[i] * h[i] + h[i]     # f16: left to the backends (which fuse it)
        m = n * n + n              # integers: no fma
        s = a + b + c              # no product
        with ox.unsafe():
            out[i] = x[i] + a * b  # x[i] is read first: contracted only because a * b is pure
            out[i] = b + c + e + f + g + f32(q) + s + f32(m)
            dout[i] = p
