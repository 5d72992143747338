"""barrier-divergence: a device function that reaches block.sync(), called under a condition
the same in every thread, is accepted."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


def step() -> None:
    block.sync()


@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    if n > 0:
        step()

# UNCHANGED
