"""oxide-sample's GPU kernels, compiled into the wheel for every arch of [tool.oxide].

Python kernels here call CUDA C++ device functions (csrc/: a fast tanh, CUB block reductions,
cuRAND's Philox generator), and a CUDA C++ kernel calls the Python device function ``gelu``.
Each C++ declaration names the Python implementation the CPU device (``OXIDE_DEVICE=cpu``) runs
in its place (``cpu=``).
The user-facing API with its checks is ``sample.ops``.
"""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, f64, grid, i32, i64, kernel, thread, u8, u32, u64

T = ox.TypeVar("T", f32, f64)

NEG_INF = -3.4028234663852886e38
SOFTMAX_THREADS = 256  # the CUB reductions are compiled for blocks of this size
HISTOGRAM_BINS = 256


# --- Python implementations of the C++ below, for the CPU device (cpu= of each declaration) ------
# The GPU build links the C++ and never compiles these; with OXIDE_DEVICE=cpu they run in its place.

def fast_tanh_on_cpu(x: f32) -> f32:
    """sample_fast_tanh's formula: 1 - 2 / (e^(2x) + 1) (``fast_exp`` is the accurate exp there)."""
    e = ox.math.fast_exp(2.0 * x)
    return 1.0 - 2.0 / (e + 1.0)


def block_max_256_on_cpu(x: f32) -> f32:
    """The maximum of ``x`` over a block of 256 threads, as sample_block_max_256 (CUB's result is
    valid in thread 0; this one in every thread): a tree over shared memory."""
    values = ox.shared.array(SOFTMAX_THREADS, f32)
    t = thread.idx.x
    values[t] = x
    block.sync()
    half = SOFTMAX_THREADS // 2
    while half > 0:
        if t < half:
            values[t] = max(values[t], values[t + half])
        block.sync()
        half //= 2
    result = values[0]
    block.sync()  # every thread has read it before the next call writes
    return result


def block_sum_256_on_cpu(x: f32) -> f32:
    """The sum of ``x`` over a block of 256 threads, as sample_block_sum_256 (summed in another
    order than CUB's: the last bits may differ)."""
    values = ox.shared.array(SOFTMAX_THREADS, f32)
    t = thread.idx.x
    values[t] = x
    block.sync()
    half = SOFTMAX_THREADS // 2
    while half > 0:
        if t < half:
            values[t] = values[t] + values[t + half]
        block.sync()
        half //= 2
    result = values[0]
    block.sync()
    return result


# Philox4x32's round multipliers and key increments (Salmon et al., SC'11; cuRAND's PHILOX_*)
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
CURAND_2POW32_INV = 2.3283064e-10  # cuRAND's float scale of a 32-bit draw


def uniform_on_cpu(seed: u64, i: i64) -> f32:
    """sample_uniform's draw, computed as cuRAND computes it: curand_init(seed, i, 0) sets
    Philox4x32-10's counter to (0, 0, i) and its key to seed; curand_uniform maps the first
    32-bit output x to x * 2^-32 + 2^-33 (one fused multiply-add, as nvcc compiles it)."""
    c0 = u32(0)
    c1 = u32(0)
    c2 = u32(u64(i))
    c3 = u32(u64(i) >> 32)
    k0 = u32(seed)
    k1 = u32(seed >> 32)
    for _ in range(10):
        hi0 = ox.bits.mulhi(u32(PHILOX_M0), c0)
        lo0 = u32(PHILOX_M0) * c0
        hi1 = ox.bits.mulhi(u32(PHILOX_M1), c2)
        lo1 = u32(PHILOX_M1) * c2
        c0 = hi1 ^ c1 ^ k0
        c1 = lo1
        c2 = hi0 ^ c3 ^ k1
        c3 = lo0
        k0 += u32(PHILOX_W0)
        k1 += u32(PHILOX_W1)
    return ox.math.fma(f32(c0), f32(CURAND_2POW32_INV), f32(CURAND_2POW32_INV / 2))


def gelu_cpp_on_cpu(x: Slice[f32], out: MutSlice[f32]) -> None:
    """sample_gelu_cpp's body, launched by the CPU device in its place."""
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        with ox.unsafe():
            out[i] = gelu(x[i])


# --- CUDA C++ called from Python (extern "C" in csrc/) -------------------------------------------

@ox.extern("sample_fast_tanh", sources=["../csrc/activations.cu"], cpu=fast_tanh_on_cpu)
def fast_tanh(x: f32) -> f32: ...


@ox.extern("sample_block_max_256", sources=["../csrc/reductions.cu"], cpu=block_max_256_on_cpu)
def block_max_256(x: f32) -> f32: ...


@ox.extern("sample_block_sum_256", sources=["../csrc/reductions.cu"], cpu=block_sum_256_on_cpu)
def block_sum_256(x: f32) -> f32: ...


@ox.extern("sample_uniform", sources=["../csrc/random.cu"], cpu=uniform_on_cpu)
def uniform(seed: u64, i: i64) -> f32: ...


# --- a CUDA C++ kernel, launched like a Python one ------------------------------------------------

@ox.extern_kernel("sample_gelu_cpp", sources=["../csrc/activations.cu"], cpu=gelu_cpp_on_cpu)
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
