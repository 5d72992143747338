"""bounds-elimination: a stencil over module-constant sizes (PolyBench's #define NI, NJ) whose taps
the guards keep within constants: each view is tested against the largest extent its checks need
(len(A) >= NI * NJ, len(B) >= NJ * (NI - 1) - 1), once, and the copy under that test has no
check. The guards bound i * NJ through the product block.idx.y * block.dim.y, which the facts
narrow (i < NI - 1), not only through the atoms' own ranges. In that copy each unchecked tap's
index, exact in i32 there, is its constant apart, ``i64(i * NJ + j) + c``: the taps share one
address and differ by immediate offsets, as nvcc's do (C's signed overflow being undefined)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, thread

NI = 64
NJ = 32


@ox.kernel
def conv(A: Slice[f32], B: MutSlice[f32]) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < NI - 1 and j < NJ - 1 and i > 0 and j > 0:
        with ox.unsafe():
            B[i * NJ + j] = A[(i - 1) * NJ + (j - 1)] + A[(i + 1) * NJ + (j + 1)]

# CHECK-LABEL: kernel conv(
# CHECK: if ((len(A) >= 2048:i64) and (len(B) >= 2015:i64)):  ; launch-versioned
# CHECK: B[((i * 32:i32) + j)] = (A[(i64(((i * 32:i32) + j)) + -33:i64)] + A[(i64(((i * 32:i32) + j)) + 33:i64)])
# CHECK: else:
# CHECK: B[((i * 32:i32) + j)]!{{\d+}} = (A[(((i - 1:i32) * 32:i32) + (j - 1:i32))]!{{\d+}} + A[(((i + 1:i32) * 32:i32) + (j + 1:i32))]!{{\d+}})
