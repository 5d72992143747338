"""The bounds-elimination pass: a range loop's facts prove x[r] after the assert, but the
assert inside `with ox.unsafe():` ends with its block; the entry guard of the i32 loop goes
since no proof used the range; each static_range copy has its own scope."""
# OPTIONS: launch_versioning=0
import oxide as ox
from oxide import MutSlice, Slice, f32, i32


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
    for r in range(n):
        with ox.unsafe():
            assert r < len(x)
            out[r] = x[r]
        y = x[r]
    for c in ox.static_range(2):
        if c < len(x):
            z = x[c]

# BEFORE: check ((i64($stop1) + i64($step2)) <= 2147483648:i64)!5
# CHECK-LABEL: kernel k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None
# BEFORE: scope:
# BEFORE: check (i64(r) < len(x))!1
# BEFORE: out[r]!3 = x[r]!2
# BEFORE: y: f32 = x[r]!4
# CHECK: check (i64(r) < len(x))!1
# CHECK-NEXT: out[r]!2 = x[r]
# CHECK-NEXT: y: f32 = x[r]!3
# BEFORE: scope (static_range c):
# BEFORE: if (0:i64 < len(x)):
# BEFORE: z: f32 = x[0:i64?]!6
# BEFORE: scope (static_range c):
# BEFORE: if (1:i64 < len(x)):
# BEFORE: z: f32 = x[1:i64?]!7
# CHECK: if (0:i64 < len(x)):
# CHECK-NEXT: z: f32 = x[0:i64?]
# CHECK-NEXT: if (1:i64 < len(x)):
# CHECK-NEXT: z: f32 = x[1:i64?]
