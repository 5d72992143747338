from oxide import DisjointSlice, f64, kernel, thread


@kernel
def fill(value: f64, out: DisjointSlice[f64]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = value
