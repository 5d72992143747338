"""Kernels taking structs and vectors by value (tests/test_struct_params_gpu.py)."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f32x2, f32x4, i32, i32x2, thread, u8


@ox.struct
class Affine:
    scale: f32
    offset: f32
    shift: f32x2


@ox.struct
class Tagged:
    a: Affine
    tag: i32
    on: bool


@ox.kernel
def affine(t: Affine, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        out[i] = x[i] * t.scale + t.offset + t.shift.x * x[i] * x[i] - t.shift.y


@ox.kernel
def tagged(t: Tagged, n: i32, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        if t.on:
            out[i] = x[i] * t.a.scale + t.a.offset + t.a.shift.x - t.a.shift.y + f32(t.tag * n)
        else:
            out[i] = f32(n) - x[i]


@ox.kernel
def cubic(v: f32x4, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        out[i] = ((v.x * x[i] + v.y) * x[i] + v.z) * x[i] + v.w


@ox.kernel
def mixed(w: i32x2, b: u8, v: f32x4, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        out[i] = x[i] * f32(w.x) + f32(w.y - i32(b)) + v.x - v.y + v.z - v.w
