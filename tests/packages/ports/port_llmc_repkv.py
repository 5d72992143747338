"""Replicate the K and V heads of a grouped-query QKV tensor (B, N, (NH + 2 NH/r) HD) into (B, N, 3 NH HD).

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/repkv.cu (`repkv_forward_kernel1`), as first
written in issue 29's second probe: the thread index is decoded in place (`idx /= HD`), as the C
does; `__ldcs` (a streaming load) is a plain read."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread


@ox.kernel
def repkv_forward_kernel1(replicated_qkv: MutSlice[f32], gqa_qkv: Slice[f32], b: i32, n: i32, nh: i32,
                          replicate_factor: i32, hd: i32) -> None:
    idx = thread.index_1d()
    if idx >= b * n * 3 * nh * hd:
        return
    idx_flat = idx
    d_ = idx % hd
    idx //= hd
    nh_ = idx % nh
    idx //= nh
    c = idx % 3
    idx //= 3
    n_ = idx % n
    b_ = idx // n
    nh_total = nh + 2 * (nh // replicate_factor)
    if c == 0:
        inp_idx = b_ * n * nh_total * hd + n_ * nh_total * hd + 0 * nh * hd + nh_ * hd + d_
    elif c == 1:
        inp_idx = b_ * n * nh_total * hd + n_ * nh_total * hd + 1 * nh * hd + (nh_ // replicate_factor) * hd + d_
    else:
        inp_idx = b_ * n * nh_total * hd + n_ * nh_total * hd + (nh * hd + (nh // replicate_factor) * hd) \
            + (nh_ // replicate_factor) * hd + d_
    with ox.unsafe():
        replicated_qkv[idx_flat] = gqa_qkv[inp_idx]
