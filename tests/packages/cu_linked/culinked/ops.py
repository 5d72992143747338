import oxide as ox
from oxide import DisjointSlice, Slice, f32, kernel, thread


@ox.extern("cl_scale")
def cl_scale(x: f32) -> f32: ...


@kernel
def scale(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = cl_scale(x[i])
