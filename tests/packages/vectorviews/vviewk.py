"""Kernels whose parameters are views of vector elements (CUDA's ``const float4*``,
``__nv_bfloat162*``): the host passes arrays of the lanes (tests/test_vector_views.py,
tests/test_vector_views_gpu.py)."""
import oxide as ox
from oxide import Slice, DisjointSlice, MutSlice, Tensor, MutTensor, DisjointTensor, f32, i32, thread


@ox.kernel
def reverse_scale(x: Slice[ox.f32x4], a: f32, out: DisjointSlice[ox.f32x4]) -> None:
    """``out[i] = (x[i].w, x[i].z, x[i].y, x[i].x) * a``: one 16-byte load and store per thread."""
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        v = x[i]
        out[i] = ox.f32x4(v.w, v.z, v.y, v.x) * a


@ox.kernel
def swap_pairs(x: Tensor[ox.bf16x2, 2], out: MutTensor[ox.bf16x2, 2]) -> None:
    """``out[r, c] = (x[r, c].y, x[r, c].x + 1)``, with strides in pairs."""
    r, c = thread.index_2d()
    if r < x.shape[0] and c < x.shape[1] and r < out.shape[0] and c < out.shape[1]:
        v = x[r, c]
        with ox.unsafe():
            out[r, c] = ox.bf16x2(v.y, ox.bf16(f32(v.x) + 1.0))


@ox.kernel
def widen_halves(x: Slice[ox.f16x8], out: DisjointTensor[ox.f32x4, 2]) -> None:
    """Row ``i`` of ``out`` is ``x[i]``'s 8 halves as f32, in two f32x4: ``out[i, 0]`` lanes 0-3
    and ``out[i, 1]`` lanes 4-7 (the column is ``thread.idx.y``: blocks of (x, 2))."""
    i = thread.index_1d()
    half = thread.idx.y
    if i < len(x) and i < out.shape[0] and half < out.shape[1]:
        w = ox.f32x8(x[i])
        if half == 0:
            out[i, half] = ox.f32x4(w[0], w[1], w[2], w[3])
        else:
            out[i, half] = ox.f32x4(w[4], w[5], w[6], w[7])


@ox.kernel
def accumulate_pairs(x: Slice[ox.i32x2], out: MutSlice[ox.i32x2], n: i32) -> None:
    """``out[i] += (x[i].x * n, x[i].y - n)`` for the pair at each thread (a read-write view)."""
    i = thread.index_1d()
    if i < len(x) and i < len(out):
        v = x[i]
        with ox.unsafe():
            out[i] = out[i] + ox.i32x2(v.x * n, v.y - n)
