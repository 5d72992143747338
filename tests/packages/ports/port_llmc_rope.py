"""Rotary position embedding (RoPE), forward and in-place backward, a thread per (b, t, h, d/2).

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/rope.cu (`rope_forward_kernel1`,
`rope_backward_inplace_kernel1`), as first written in issue 29's second probe; the two kernels' decoding of the thread's
(b, t, h, d/2) is one device function, pair_position."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, i64, thread


def pair_position(idx: i64, t: i32, n_head: i32, head_dim: i32) -> tuple[i64, i64, i64]:
    """The (b, t, h, d/2) of thread ``idx``, decoded from its index: its position ``tt``, its pair
    ``d`` and the offset of its (real, imaginary) pair in the (b, t, n_head, head_dim) input."""
    head_dim_half = head_dim // 2
    bb = idx // (t * n_head * head_dim_half)
    tt = (idx // (n_head * head_dim_half)) % t
    h = (idx // head_dim_half) % n_head
    d = idx % head_dim_half
    idx_bt = bb * (t * n_head * head_dim) + tt * (n_head * head_dim)
    idx_bth = idx_bt + h * head_dim
    return tt, d, idx_bth + 2 * d


@ox.kernel
def rope_forward_kernel1(out: MutSlice[f32], inp: Slice[f32], freqs_cis: Slice[f32], b: i32, t: i32, n_head: i32,
                         head_dim: i32) -> None:
    idx = thread.index_1d()
    head_dim_half = head_dim // 2
    if idx >= b * t * n_head * head_dim_half:
        return
    tt, d, idxi = pair_position(idx, t, n_head, head_dim)
    x_real = inp[idxi]
    x_imag = inp[idxi + 1]
    freqs_idx = tt * head_dim + 2 * d
    freqs_cos = freqs_cis[freqs_idx]
    freqs_sin = freqs_cis[freqs_idx + 1]
    with ox.unsafe():
        out[idxi] = x_real * freqs_cos - x_imag * freqs_sin
        out[idxi + 1] = x_real * freqs_sin + x_imag * freqs_cos


@ox.kernel
def rope_backward_inplace_kernel1(dinp: MutSlice[f32], dout: MutSlice[f32], freqs_cis: Slice[f32], b: i32, t: i32,
                                  n_head: i32, head_dim: i32) -> None:
    idx = thread.index_1d()
    head_dim_half = head_dim // 2
    if idx >= b * t * n_head * head_dim_half:
        return
    tt, d, idxi = pair_position(idx, t, n_head, head_dim)
    freqs_idx = tt * head_dim + 2 * d
    freqs_cos = freqs_cis[freqs_idx]
    freqs_sin = freqs_cis[freqs_idx + 1]
    dout_real = f32(dout[idxi])
    dout_imag = f32(dout[idxi + 1])
    with ox.unsafe():
        dinp[idxi] = dout_real * freqs_cos + dout_imag * freqs_sin
        dinp[idxi + 1] = -dout_real * freqs_sin + dout_imag * freqs_cos
