"""mbarrier-lint: a barrier array used and never initialized is refused at the use."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


@ox.kernel
def k(n: i32) -> None:
    bars = ox.mbarrier.array(2)
    block.sync()
    ox.mbarrier.arrive(bars[1])

# ERROR: never_initialized.py:10:5: ox.mbarrier.arrive() uses the barrier array 'bars' (declared at line 8), which is never initialized
