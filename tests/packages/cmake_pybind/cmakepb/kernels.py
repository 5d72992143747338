from oxide import DisjointSlice, Slice, f32, kernel, thread


@kernel
def negate(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = -x[i]
