"""Gaussian elimination, one step: the multipliers of column t (Fan1), then the update of the rows
below it and of b (Fan2).

Ported from Rodinia 3.1 (University of Virginia, BSD-style), cuda/gaussian/gaussian.cu (`Fan1`,
`Fan2`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block


@ox.kernel
def fan1(m_cuda: MutSlice[f32], a_cuda: Slice[f32], size: i32, t: i32) -> None:
    if thread.idx.x + block.idx.x * block.dim.x >= size - 1 - t:
        return
    with ox.unsafe():
        m_cuda[size * (block.dim.x * block.idx.x + thread.idx.x + t + 1) + t] = \
            a_cuda[size * (block.dim.x * block.idx.x + thread.idx.x + t + 1) + t] / a_cuda[size * t + t]


@ox.kernel
def fan2(m_cuda: Slice[f32], a_cuda: MutSlice[f32], b_cuda: MutSlice[f32], size: i32, j1: i32, t: i32) -> None:
    if thread.idx.x + block.idx.x * block.dim.x >= size - 1 - t:
        return
    if thread.idx.y + block.idx.y * block.dim.y >= size - t:
        return
    x_idx = block.idx.x * block.dim.x + thread.idx.x
    y_idx = block.idx.y * block.dim.y + thread.idx.y
    with ox.unsafe():
        a_cuda[size * (x_idx + 1 + t) + (y_idx + t)] -= m_cuda[size * (x_idx + 1 + t) + t] * a_cuda[size * t + (y_idx + t)]
        if y_idx == 0:
            b_cuda[x_idx + 1 + t] -= m_cuda[size * (x_idx + 1 + t) + (y_idx + t)] * b_cuda[t]
