"""mbarrier-lint: init in one thread, then block.sync(), then use by all is accepted."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel
def k(n: i32) -> None:
    bars = ox.mbarrier.array(2)
    if thread.idx.x == 0:
        ox.mbarrier.init(bars[1], 1)
    block.sync()
    ox.mbarrier.arrive(bars[1])

# UNCHANGED
