"""barrier-divergence: the same call under a condition on the thread's index is refused at
the call: the frontend sees no block.sync() there, the pass sees through the call."""
import oxide as ox
from oxide import MutSlice, f16, f32, i32, thread, block


def step() -> None:
    block.sync()


@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    if thread.idx.x < 3:
        step()

# ERROR: through_a_call.py:14:9: step() reaches block.sync() (at through_a_call.py:8:5), and this call is under a condition that differs between threads
