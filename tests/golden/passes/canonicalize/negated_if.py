"""canonicalize: an if without else on integer comparisons becomes `if <negated>: pass / else:
<body>`, the negation pushed through and/or; a float comparison and an if with an else stay."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i64, thread


@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32], n: i64) -> None:
    i = thread.index_1d()
    if i < len(out) and (n > 0 or n == -1):
        out[i] = x[0] if len(x) > 0 else 0.0
    if i < len(out):
        if x[0] < 1.0:
            out[i] = 1.0
        else:
            out[i] = 2.0

# BEFORE: if ((i64(i) < len(out)) and ((n > 0:i64) or (n == -1:i64))):
# CHECK: if ((i64(i) >= len(out)) or ((n <= 0:i64) and (n != -1:i64))):
# CHECK-NEXT: pass
# CHECK-NEXT: else:
# CHECK-NEXT: out[i]{{!\d+}} = select((len(x) > 0:i64),
# CHECK-NEXT: if (i64(i) >= len(out)):
# CHECK-NEXT: pass
# CHECK-NEXT: else:
# CHECK-NEXT: if (x[0:i64?]{{!\d+}} < 1.0:f32):
# CHECK-NEXT: out[i]{{!\d+}} = 1.0:f32
# CHECK-NEXT: else:
# CHECK-NEXT: out[i]{{!\d+}} = 2.0:f32
