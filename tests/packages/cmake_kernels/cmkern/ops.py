"""Kernels calling the device library cmk_fastmath (no sources=: CMake links it)."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, kernel, thread


@ox.extern("cmk_fast_tanh")
def fast_tanh(x: f32) -> f32: ...


@ox.extern("cmk_scale")
def scale(x: f32) -> f32: ...


@ox.device(export="cmk_py_gelu")
def gelu(x: f32) -> f32:
    return 0.5 * x * (1.0 + fast_tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@kernel
def gelu_scaled(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = scale(gelu(x[i]))
