"""f16x2 / bf16x2 (CUDA's __half2 / __nv_bfloat162) arithmetic for tests/test_half2*.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, bf16, bf16x2, f16, f16x2, thread


@ox.kernel
def axpy_half2(a: f16, x: Slice[f16], y: Slice[f16], lo: DisjointSlice[f16], hi: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if 2 * i + 1 < len(x) and 2 * i + 1 < len(y) and i < len(lo) and i < len(hi):
        v = f16x2(x[2 * i], x[2 * i + 1])
        w = f16x2(y[2 * i], y[2 * i + 1])
        r = v * f16x2(a, a) + w
        lo[i] = r.x
        hi[i] = r.y


@ox.kernel
def sub_mul_bf162(x: Slice[bf16], y: Slice[bf16], lo: DisjointSlice[bf16], hi: DisjointSlice[bf16]) -> None:
    i = thread.index_1d()
    if 2 * i + 1 < len(x) and 2 * i + 1 < len(y) and i < len(lo) and i < len(hi):
        v = bf16x2(x[2 * i], x[2 * i + 1])
        w = bf16x2(y[2 * i], y[2 * i + 1])
        r = (v - w) * w
        lo[i] = r.x
        hi[i] = r.y
