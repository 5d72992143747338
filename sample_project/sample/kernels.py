import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, kernel, thread

T = ox.TypeVar("T", f32, f64)

def axpy(a: T, x: T, y: T) -> T:
    return a * x + y

@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpy(a, x[i], y[i])
