"""bounds-elimination: an index split by `//` and `%` (by constants, by a size parameter that an
assert says is >= 1) is in range from the ranges of its parts; divisions whose operands are
proven >= 0 are marked unsigned (`//u`), and without the zero guard where the divisor is >= 1
(`//u+`); a divisor of unknown sign keeps the signed division and the check."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread


@ox.kernel
def k(x: Slice[f32], w: Slice[f32], out: DisjointSlice[f32], C: i32, S: i32) -> None:
    assert len(w) >= 1024 and C >= 1 and len(w) >= C and len(x) == len(out)
    i = thread.index_1d()
    if i < len(out):
        t = (i // 64) % 16
        v = i % 64
        out[i] = x[i] * w[t * 64 + v] + w[i % C] + w[i % S]

# BEFORE: t: i64 = ((i64(i) // 64:i64) % 16:i64)
# CHECK: t: i64 = ((i64(i) //u+ 64:i64) %u+ 16:i64)
# CHECK-NEXT: v: i64 = (i64(i) %u+ 64:i64)
# CHECK-NEXT: out[i] = (((x[i] * w[((t * 64:i64) + v)]) + w[(i64(i) %u+ i64(C))]) + w[(i64(i) % i64(S))]!{{\d+}})
