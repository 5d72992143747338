"""Kernels for tests/test_index32_gpu.py: tensor reads through a device function, and a tensor's
shape and strides read as values (which the index32 instance takes as 32-bit parameters)."""
import oxide as ox
from oxide import DisjointTensor, Slice, Tensor, f32, i64, thread


def at(x: Tensor[f32, 2], r: i64, c: i64) -> f32:
    return x[r, c]


@ox.kernel
def shifted(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
    """out[r, c] = x[r, c] + x[r, 0] + (x.strides[0] - x.strides[1] + x.shape[1]) % 1021 / 1024"""
    assert x.shape[0] == out.shape[0] and x.shape[1] == out.shape[1]
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        dims = (x.strides[0] - x.strides[1] + x.shape[1]) % 1021
        out[row, col] = at(x, row, col) + x[row, 0] + f32(dims) / 1024.0


@ox.kernel
def mixed(a: Tensor[f32, 2], unused: f32, b: Tensor[f32, 2], bias: Slice[f32], s: f32,
          out: DisjointTensor[f32, 2]) -> None:
    """out[r, c] = a[r, c] * s + b[r, c] + bias[c] + b.shape[1] % 7: the entry points keep what
    the code reads (lower/entry_params.py) — a's pointer and strides, b's too and its
    shape[1], bias's pointer, s, out's pointer, shape and strides — and drop the rest (the
    asserts are launch preconditions, which prove every bounds check)."""
    assert a.shape[0] == out.shape[0] and a.shape[1] == out.shape[1]
    assert b.shape[0] == out.shape[0] and b.shape[1] == out.shape[1]
    assert len(bias) == out.shape[1]
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = a[row, col] * s + b[row, col] + bias[col] + f32(b.shape[1] % 7)
