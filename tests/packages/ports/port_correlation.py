"""Correlation matrix of the columns of a data matrix, in four kernels.

Ported from PolyBench-GPU 1.0, CUDA/CORR/correlation.cu (`mean_kernel`, `std_kernel`,
`reduce_kernel`, `corr_kernel`), the way its author writes it: DATA_TYPE float, FLOAT_N and
EPS as #define'd double constants, 1-based indices into an (N+1) x (M+1) array
(`data[i * (M + 1) + j]`), every sum accumulated in the output array itself, the column
standard deviation clamped to 1.0 below EPS, `sqrt(FLOAT_N)` in the normalisation. M and N are
run-time parameters here (#defines in the original)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

FLOAT_N = 3214212.01
EPS = 0.005


@ox.kernel
def mean_kernel(mean: MutSlice[f32], data: Slice[f32], M: i32, N: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x + 1
    if j >= 1 and j < M + 1:
        with ox.unsafe():
            mean[j] = 0.0
            for i in range(1, N + 1):
                mean[j] += data[i * (M + 1) + j]
            mean[j] /= f32(FLOAT_N)


@ox.kernel
def std_kernel(mean: Slice[f32], std: MutSlice[f32], data: Slice[f32], M: i32, N: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x + 1
    if j >= 1 and j < M + 1:
        with ox.unsafe():
            std[j] = 0.0
            for i in range(1, N + 1):
                std[j] += (data[i * (M + 1) + j] - mean[j]) * (data[i * (M + 1) + j] - mean[j])
            std[j] /= FLOAT_N
            std[j] = ox.math.sqrt(std[j])
            if std[j] <= EPS:
                std[j] = 1.0


@ox.kernel
def reduce_kernel(mean: Slice[f32], std: Slice[f32], data: MutSlice[f32], M: i32, N: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x + 1
    i = block.idx.y * block.dim.y + thread.idx.y + 1
    if i >= 1 and i < N + 1 and j >= 1 and j < M + 1:
        with ox.unsafe():
            data[i * (M + 1) + j] -= mean[j]
            data[i * (M + 1) + j] /= ox.math.sqrt(FLOAT_N) * std[j]


@ox.kernel
def corr_kernel(symmat: MutSlice[f32], data: Slice[f32], M: i32, N: i32) -> None:
    j1 = block.idx.x * block.dim.x + thread.idx.x + 1
    if j1 >= 1 and j1 < M:
        with ox.unsafe():
            symmat[j1 * (M + 1) + j1] = 1.0
            for j2 in range(j1 + 1, M + 1):
                symmat[j1 * (M + 1) + j2] = 0.0
                for i in range(1, N + 1):
                    symmat[j1 * (M + 1) + j2] += data[i * (M + 1) + j1] * data[i * (M + 1) + j2]
                symmat[j2 * (M + 1) + j1] = symmat[j1 * (M + 1) + j2]
