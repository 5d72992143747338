"""The bounds-elimination pass: a range loop's facts prove x[r] after the assert, but the
assert inside `with ox.unsafe():` ends with its block; the entry guard of the i32 loop goes
since no proof used the range; each static_range copy has its own scope."""
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
