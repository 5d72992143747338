"""One Jacobi step of the 5-point Laplace stencil on a rows × cols grid; the border is copied."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, i64, thread


@ox.kernel
def stencil5(x: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
    assert len(x) == i64(rows) * cols and len(out) == len(x)  # proves the accesses below
    c = block.idx.x * block.dim.x + thread.idx.x
    r = block.idx.y * block.dim.y + thread.idx.y
    if r < rows and c < cols:
        i = i64(r) * cols + c
        v = x[i]
        if r > 0 and r < rows - 1 and c > 0 and c < cols - 1:
            v = 0.25 * (x[i - cols] + x[i + cols] + x[i - 1] + x[i + 1])
        with ox.unsafe():
            out[i] = v
