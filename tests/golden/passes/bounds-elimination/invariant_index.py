"""bounds-elimination: FDTD's first step (PolyBench). ``src[t]``, with t an argument, is the same in
every thread: the kernel is versioned on ``len(src) >= t + 1`` and ``t >= 0`` (t an i32), which
the launcher tests once, and the copy under it reads src unchecked. In the ``else`` of
``i == 0``, with i >= 0 from the thread index, the prover knows i >= 1, so ``h[(i - 1) * N + j]``
is proven there too (and its index is ``i64(i * N + j) + -N``)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

N = 64


@ox.kernel
def step(src: Slice[f32], e: MutSlice[f32], h: Slice[f32], t: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < N and j < N:
        with ox.unsafe():
            if i == 0:
                e[i * N + j] = src[t]
            else:
                e[i * N + j] = h[i * N + j] - h[(i - 1) * N + j]

# CHECK-LABEL: kernel step(
# CHECK: if ((len(src) >= (1:i64 + i64(t))) and (i64(t) >= 0:i64) and (len(e) >= 4096:i64) and (len(h) >= 4096:i64)):  ; launch-versioned
# CHECK: e[((i * 64:i32) + j)] = src[t]
# CHECK: e[((i * 64:i32) + j)] = (h[((i * 64:i32) + j)] - h[(i64(((i * 64:i32) + j)) + -64:i64)])
# CHECK: else:
# CHECK: e[((i * 64:i32) + j)]!{{\d+}} = src[t]!{{\d+}}
