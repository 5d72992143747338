"""oxide-sample's GPU kernels, compiled into the wheel for every arch of [tool.oxide].

Python kernels here call CUDA C++ device functions (csrc/: a fast tanh, CUB block reductions,
cuRAND's Philox generator), and a CUDA C++ kernel calls the Python device function ``gelu``.
The user-facing API with its checks is ``sample.ops``.
"""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, f64, grid, i32, i64, kernel, thread, u8, u64

T = ox.TypeVar("T", f32, f64)

NEG_INF = -3.4028234663852886e38
SOFTMAX_THREADS = 256  # the CUB reductions are compiled for blocks of this size
HISTOGRAM_BINS = 256


# --- CUDA C++ called from Python (extern "C" in csrc/) -------------------------------------------

@ox.extern("sample_fast_tanh", sources=["../csrc/activations.cu"])
def fast_tanh(x: f32) -> f32: ...


@ox.extern("sample_block_max_256", sources=["../csrc/reductions.cu"])
def block_max_256(x: f32) -> f32: ...


@ox.extern("sample_block_sum_256", sources=["../csrc/reductions.cu"])
def block_sum_256(x: f32) -> f32: ...


@ox.extern("sample_uniform", sources=["../csrc/random.cu"])
def uniform(seed: u64, i: i64) -> f32: ...


# --- a CUDA C++ kernel, launched like a Python one ------------------------------------------------

@ox.extern_kernel("sample_gelu_cpp", sources=["../csrc/activations.cu"])
def gelu_cpp(x: Slice[f32], out: MutSlice[f32]) -> None: ...


# --- kernels ---------------------------------------------------------------------------------------

def axpy(a: T, x: T, y: T) -> T:
    return a * x + y


@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpy(a, x[i], y[i])


@ox.device(export="sample_gelu")
def gelu(x: f32) -> f32:
    """GELU, tanh approximation; exported to C++ as ``float sample_gelu(float)``."""
    return 0.5 * x * (1.0 + fast_tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@kernel
def gelu_forward(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    # no assert: C++ host code launches this kernel too (sample._native)
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = gelu(x[i])


@kernel
def softmax_rows(x: Slice[f32], ncols: i32, out: MutSlice[f32]) -> None:
    """One block of SOFTMAX_THREADS threads per row of a row-major (rows, ncols) matrix."""
    assert len(x) == i64(grid.dim.x) * ncols and len(out) == len(x)
    shared = ox.shared.array(1, f32)
    base = i64(block.idx.x) * ncols
    m = f32(NEG_INF)
    for c in range(thread.idx.x, ncols, block.dim.x):
        m = max(m, x[base + c])
    m = block_max_256(m)
    if thread.idx.x == 0:
        shared[0] = m
    block.sync()
    m = shared[0]
    block.sync()  # everyone has read it before thread 0 writes the sum
    s = f32(0.0)
    for c in range(thread.idx.x, ncols, block.dim.x):
        s += ox.math.exp(x[base + c] - m)
    s = block_sum_256(s)
    if thread.idx.x == 0:
        shared[0] = s
    block.sync()
    inv = f32(1.0) / shared[0]
    for c in range(thread.idx.x, ncols, block.dim.x):
        with ox.unsafe():
            out[base + c] = ox.math.exp(x[base + c] - m) * inv


@kernel
def histogram256(data: Slice[u8], hist: MutSlice[i32]) -> None:
    """Counts of each byte value: a histogram per block in shared memory, merged with one
    atomic per bin and block. ``hist`` (256 bins) must be zero; any grid size works."""
    local_hist = ox.shared.array(HISTOGRAM_BINS, i32)
    for b in range(thread.idx.x, HISTOGRAM_BINS, block.dim.x):
        local_hist[b] = 0
    block.sync()
    stride = i64(grid.dim.x) * block.dim.x
    for j in range(i64(thread.index_1d()), len(data), stride):
        ox.atomic.add(local_hist, i32(data[j]), 1)
    block.sync()
    for b in range(thread.idx.x, HISTOGRAM_BINS, block.dim.x):
        ox.atomic.add(hist, b, local_hist[b])


@kernel
def dropout_forward(x: Slice[f32], p: f32, scale: f32, seed: u64, out: DisjointSlice[f32]) -> None:
    """out[i] = x[i] * scale where Philox's uniform draw for (seed, i) is at least p, else 0."""
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        keep = uniform(seed, i64(i)) >= p
        out[i] = x[i] * scale if keep else f32(0.0)


@kernel
def box_blur3(image: Slice[f32], rows: i32, cols: i32, out: MutSlice[f32]) -> None:
    """3x3 mean of a row-major (rows, cols) image, edges clamped; a 2-D grid of 2-D blocks."""
    assert len(image) == i64(rows) * cols and len(out) == len(image)
    c = i32(block.idx.x * block.dim.x + thread.idx.x)
    r = i32(block.idx.y * block.dim.y + thread.idx.y)
    if r < rows and c < cols:
        acc = f32(0.0)
        for dr in range(-1, 2):
            rr = min(max(r + dr, 0), rows - 1)
            for dc in range(-1, 2):
                cc = min(max(c + dc, 0), cols - 1)
                acc += image[i64(rr) * cols + cc]
        with ox.unsafe():
            out[i64(r) * cols + c] = acc * (1.0 / 9.0)
