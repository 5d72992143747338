"""disjoint-launch-shape: a DisjointSlice written at thread.index_1d() makes a 1-D grid of 1-D
blocks a launch precondition; a kernel that writes none gets none."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, f32, thread


@ox.kernel
def writes(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i]


@ox.kernel
def unsafe_writes(out: MutSlice[f32]) -> None:
    with ox.unsafe():
        out[0] = 1.0

# BEFORE-NOT: precondition
# CHECK-LABEL: kernel writes(
# CHECK-NEXT: ; precondition {{!\d+}} ['and', [['eq', ['block', 1], ['const', 1]], ['eq', ['block', 2], ['const', 1]], ['eq', ['grid', 1], ['const', 1]], ['eq', ['grid', 2], ['const', 1]]]]
# CHECK-NEXT: i: ThreadIndex = index_1d()
# CHECK-LABEL: kernel unsafe_writes(
# CHECK-NOT: precondition
