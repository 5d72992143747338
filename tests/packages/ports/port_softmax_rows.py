"""Row softmax, one block per row, shared-memory max and sum.

Ported from the Triton tutorial "Fused Softmax" (python/tutorials/02-fused-softmax.py),
rewritten as SIMT the way a CUDA author writes a row softmax: one block per row, a strided
loop, block reductions through shared memory with `float('-inf')` as the identity."""
import oxide as ox
from oxide import MutTensor, Tensor, block, f32, thread

BLOCK = 256


def block_max(v: f32, red: ox.MutSlice[f32]) -> f32:
    tid = thread.idx.x
    red[tid] = v
    block.sync()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            red[tid] = max(red[tid], red[tid + s])
        block.sync()
        s //= 2
    r = red[0]
    block.sync()
    return r


def block_sum(v: f32, red: ox.MutSlice[f32]) -> f32:
    tid = thread.idx.x
    red[tid] = v
    block.sync()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            red[tid] += red[tid + s]
        block.sync()
        s //= 2
    r = red[0]
    block.sync()
    return r


@ox.kernel
def softmax(x: Tensor[f32, 2], out: MutTensor[f32, 2]) -> None:
    red = ox.shared.array(BLOCK, f32)
    row = block.idx.x
    n_cols = x.shape[1]
    m = float('-inf')
    for c in range(thread.idx.x, n_cols, BLOCK):
        m = max(m, x[row, c])
    m = block_max(m, red)
    s = 0.0
    for c in range(thread.idx.x, n_cols, BLOCK):
        s += ox.math.exp(x[row, c] - m)
    s = block_sum(s, red)
    for c in range(thread.idx.x, n_cols, BLOCK):
        with ox.unsafe():
            out[row, c] = ox.math.exp(x[row, c] - m) / s
