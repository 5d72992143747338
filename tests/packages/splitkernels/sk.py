"""DisjointTensor writes at the digits of a split ThreadIndex (tests/test_split_indices.py): a
3-D output with the channel or the position fastest (chosen by a parameter), and a 2-D one whose
second radix is a scalar parameter."""
from __future__ import annotations

import oxide as ox
from oxide import DisjointTensor, Tensor, f32, i32, i64, thread


@ox.kernel
def scale3(x: Tensor[f32, 3], out: DisjointTensor[f32, 3], channel_fastest: bool) -> None:
    """out[b, c, l] = 2 x[b, c, l] + (b * 10000 + c * 100 + l); a thread per element, its index
    split into (b, c, l) with c or l fastest."""
    assert out.shape[0] == x.shape[0] and out.shape[1] == x.shape[1] and out.shape[2] == x.shape[2]
    i = thread.index_1d()
    dim = x.shape[1]
    seqlen = x.shape[2]
    if i < x.shape[0] * dim * seqlen:
        inner = dim if channel_fastest else seqlen
        outer = seqlen if channel_fastest else dim
        d0 = i % inner
        r = i // inner
        d1 = r % outer
        b = r // outer
        c = d0 if channel_fastest else d1
        l = d1 if channel_fastest else d0
        out[b, c, l] = 2.0 * x[b, c, l] + f32(b * 10000 + c * 100 + l)


@ox.kernel
def tiles(out: DisjointTensor[f32, 2], width: i32) -> None:
    """out[r, c] = r * 1000 + c over rows of ``width`` (a parameter) columns."""
    i = thread.index_1d()
    if i < out.shape[0] * i64(width):
        out[i // width, i % width] = f32(i // width * 1000 + i % width)


