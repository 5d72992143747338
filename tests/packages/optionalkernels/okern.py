"""Kernels of optional views (tests/test_optional_views_gpu.py): a bias that may be None (a
device function takes it as it is), a row scale of a 2-D tensor with a launch precondition that
holds only where it is passed, and an optional output."""
from __future__ import annotations

from typing import Optional

import oxide as ox
from oxide import DisjointSlice, DisjointTensor, MutTensor, Slice, Tensor, f16, f32, i64, thread

T = ox.TypeVar("T", f32, f16)


def bias_at(bias: Optional[Slice[f32]], i: i64) -> f32:
    if bias is None:
        return 0.0
    return bias[i]


@ox.kernel
def add_bias(x: Slice[T], bias: Slice[f32] | None, out: DisjointSlice[T]) -> None:
    assert len(bias) == len(x) and len(out) == len(x)
    i = thread.index_1d()
    if i < len(x):
        out[i] = T(f32(x[i]) + bias_at(bias, i))


@ox.kernel
def scale_rows(x: Tensor[f32, 2], scale: Optional[Tensor[f32, 1]], out: DisjointTensor[f32, 2],
               total: Optional[MutTensor[f32, 1]]) -> None:
    """out = x * scale[row] (x where scale is None); total[0] += each element written, where given."""
    assert scale.shape[0] == x.shape[0]
    assert out.shape[0] == x.shape[0] and out.shape[1] == x.shape[1]
    row, col = thread.index_2d()
    if row < x.shape[0] and col < x.shape[1]:
        v = x[row, col]
        if scale is not None:
            v = v * scale[row]
        out[row, col] = v
        if total is not None:
            ox.atomic.add(total, 0, v)
