"""a * b + c, contracted into one fma or not ([tool.oxide] fma): tests/test_fma_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, thread

T = ox.TypeVar("T", f32, f64)


@ox.kernel
def muladd(a: Slice[T], b: Slice[T], c: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(a) and i < len(b) and i < len(c) and i < len(out):
        out[i] = a[i] * b[i] + c[i]
