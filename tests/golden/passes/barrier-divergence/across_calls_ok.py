"""barrier-divergence: calls that every thread of the block makes reach block.sync() freely."""
import oxide as ox
from oxide import MutSlice, Slice, f32, i64, thread, block


def stage(tile: MutSlice[f32], k: i64) -> None:
    with ox.unsafe():
        tile[k] = 0.0
    block.sync()


@ox.kernel
def k(x: Slice[f32], tile: MutSlice[f32], n: i64) -> None:
    i = thread.index_1d()
    stage(tile, i)
    if n > 4:
        stage(tile, 0)
    for r in range(n):
        stage(tile, r)

# UNCHANGED
