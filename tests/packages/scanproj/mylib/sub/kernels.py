raise RuntimeError("kernels must never be imported")

import oxide as ox
from oxide import DisjointSlice, Slice, f32, thread

from mylib.helpers import square
from .. import helpers


def scale(x: f32) -> f32:
    return square(x) * 2.0


@ox.kernel
def k_square(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = scale(x[i]) + helpers.square(1.5)


@ox.kernel(bounds_check=False)
def k_copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i]


def not_a_kernel(x: f32) -> f32:
    return x
