"""Attention's QKV permute: (B, N, 3, NH, d) into three (B, NH, N, d) tensors.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/attention_forward.cu (`permute_kernel`), the
way its author writes it: the flat index split into (b, nh_, n, d_) by `/` and `%` in int, the
source index summed from its strides, three streaming loads (`__ldcs`: `ox.cache.load(..., "cs")`)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def permute_kernel(q: MutSlice[f32], k: MutSlice[f32], v: MutSlice[f32], inp: Slice[f32],
                   B: i32, N: i32, NH: i32, d: i32) -> None:
    idx = block.idx.x * block.dim.x + thread.idx.x
    if idx < B * NH * N * d:
        b = idx // (NH * N * d)
        rest = idx % (NH * N * d)
        nh_ = rest // (N * d)
        rest = rest % (N * d)
        n = rest // d
        d_ = rest % d
        inp_idx = (b * N * 3 * NH * d) + (n * 3 * NH * d) + (0 * NH * d) + (nh_ * d) + d_
        with ox.unsafe():
            q[idx] = ox.cache.load(inp, inp_idx, "cs")
            k[idx] = ox.cache.load(inp, inp_idx + NH * d, "cs")
            v[idx] = ox.cache.load(inp, inp_idx + 2 * (NH * d), "cs")
