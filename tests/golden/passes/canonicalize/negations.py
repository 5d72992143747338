"""The canonicalize pass: an if without else over integer tests branches past its body on the
negated test; a float test and an if with an else stay as written."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i64, thread


@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
    i = thread.index_1d()
    if i < len(out) and not n == 3:
        if x[i] > 0.5:
            out[i] = x[i]
        elif n > 2 or n < -2:
            out[i] = 1.0
    while n > 0:
        if n % 2 == 0:
            break
        n = n - 1

# BEFORE: if ((i64(i) < len(out)) and (not (n == 3:i64))):
# CHECK-LABEL: kernel k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None
# CHECK: if ((i64(i) >= len(out)) or (n == 3:i64)):
# CHECK-NEXT: pass
# CHECK-NEXT: else:
# BEFORE: if ((n > 2:i64) or (n < -2:i64)):
# CHECK: if ((n <= 2:i64) and (n >= -2:i64)):
# CHECK-NEXT: pass
# CHECK-NEXT: else:
# BEFORE: if ((n % 2:i64) == 0:i64):
# CHECK: if ((n % 2:i64) != 0:i64):
# CHECK-NEXT: pass
# CHECK-NEXT: else:
