"""Attention's output unpermute: (B, NH, N, d) back into (B, N, NH, d).

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/attention_forward.cu (`unpermute_kernel`), the
way its author writes it: the flat index split by `/` and `%` in int, the streaming load (`__ldcs`: `ox.cache.load(..., "cs")`),
the scattered store."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def unpermute_kernel(inp: Slice[f32], out: MutSlice[f32], B: i32, N: i32, NH: i32, d: i32) -> None:
    idx = block.idx.x * block.dim.x + thread.idx.x
    if idx < B * NH * N * d:
        b = idx // (NH * N * d)
        rest = idx % (NH * N * d)
        nh_ = rest // (N * d)
        rest = rest % (N * d)
        n = rest // d
        d_ = rest % d
        other_idx = (b * NH * N * d) + (n * NH * d) + (nh_ * d) + d_
        with ox.unsafe():
            out[other_idx] = ox.cache.load(inp, idx, "cs")
