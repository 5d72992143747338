"""A kernel calling a device function of another module, and one calling CUB through C++."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, f32, kernel, thread

from .devfuncs import axpy


@ox.extern("fkern_block_sum", sources=["csrc/block_sum.cu"])
def block_sum(x: f32) -> f32: ...


@kernel
def saxpy(a: f32, x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpy(a, x[i], y[i])


@kernel
def total(x: Slice[f32], out: MutSlice[f32]) -> None:
    i = thread.index_1d()
    v = f32(0.0)
    if i < len(x):
        v = x[i]
    s = block_sum(v)  # every thread of the 256-thread block takes part
    if thread.idx.x == 0:
        ox.atomic.add(out, 0, s)
