"""out = a * x + y, one element per thread."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, kernel, thread

T = ox.TypeVar("T", f32, f64)


@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    assert len(x) == len(out) and len(y) == len(out)  # also proves x[i] and y[i] in bounds
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel(bounds_check=False)
def saxpy_unchecked(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]
