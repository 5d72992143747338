"""The examples' algorithms in CUDA C++, compiled by NVRTC through ``cupy.RawModule``.

Each kernel is a line-by-line transcription of its oxide example (``examples/*.py``): the same
block sizes, tiles, loads (``float4`` in the reduction), warp shuffles (butterfly reductions,
``shfl_up`` scans), shared slots, atomics and launch geometry (``benchmarks.gpu_suite`` launches
all three versions with the same grid). The one liberty is idiomatic C++: read-only inputs are
``const float* __restrict__`` (set ``restrict=False`` for plain pointers), which lets NVRTC use
the read-only data path (``ld.global.nc``) that oxide's ``Slice`` could use too.

Views are passed as raw device pointers (``np.uint64(tensor.data_ptr())``) and lengths as
``long long``, so the kernels take any torch tensor whatever its dtype's CUDA-array-interface
support.
"""
from __future__ import annotations

from typing import Any

from benchmarks.env import require_cupy

__all__ = ["CUDA_SOURCE", "CudaKernels", "compile_cuda_kernels"]

CUDA_SOURCE = r"""
#ifndef RESTRICT
#define RESTRICT __restrict__
#endif
#define FULL_MASK 0xffffffffu

// examples/saxpy.py: saxpy (f32)
extern "C" __global__ void saxpy(float a, const float* RESTRICT x, long long x_len,
                                 const float* RESTRICT y, long long y_len,
                                 float* RESTRICT out, long long out_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_len) out[i] = a * x[i] + y[i];
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
    // oxide's warp.reduce_sum: butterfly (shfl.sync.bfly) 16, 8, 4, 2, 1
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_reduce_max(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

__device__ __forceinline__ int lane_id() {
    int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));  // oxide's warp.lane() reads %laneid
    return lane;
}

// examples/reduce.py: block_sum
extern "C" __global__ void block_sum(const float* RESTRICT x, long long n, float* out) {
    __shared__ float partial[32];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)(int)(gridDim.x * blockDim.x);
    float acc = 0.0f;
    long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (long long j = i; j < n4; j += stride) {
        float4 v = x4[j];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    for (long long j = n4 * 4 + i; j < n; j += stride) acc += x[j];
    acc = warp_reduce_sum(acc);
    int lane = lane_id();
    int wid = threadIdx.x / 32;
    if (lane == 0) partial[wid] = acc;
    __syncthreads();
    if (wid == 0) {
        float v = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0f;
        v = warp_reduce_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

// examples/scan.py: scan_blocks + add_block_offsets (the host recursion is in gpu_suite)
extern "C" __global__ void scan_blocks(const float* RESTRICT x, long long n, float* out, long long out_len,
                                       float* block_sums) {
    __shared__ float warp_sums[32];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    int lane = lane_id();
    int wid = threadIdx.x / 32;
    #pragma unroll
    for (int k = 0; k < 5; ++k) {
        int d = 1 << k;
        float t = __shfl_up_sync(FULL_MASK, v, d);
        if (lane >= d) v += t;
    }
    if (lane == 31) warp_sums[wid] = v;
    __syncthreads();
    if (wid == 0) {
        float s = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
        #pragma unroll
        for (int k = 0; k < 5; ++k) {
            int d = 1 << k;
            float t = __shfl_up_sync(FULL_MASK, s, d);
            if (lane >= d) s += t;
        }
        warp_sums[lane] = s;
    }
    __syncthreads();
    if (wid > 0) v += warp_sums[wid - 1];
    if (i < out_len) out[i] = v;
    if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = v;
}

extern "C" __global__ void add_block_offsets(const float* RESTRICT scanned_sums, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && blockIdx.x > 0) out[i] = out[i] + scanned_sums[blockIdx.x - 1];
}

// examples/histogram.py: histogram (256 bins)
extern "C" __global__ void histogram(const unsigned char* RESTRICT data, long long n, unsigned int* hist) {
    __shared__ unsigned int local_hist[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local_hist[b] = 0;
    __syncthreads();
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)(int)(gridDim.x * blockDim.x);
    for (long long j = i; j < n; j += stride) atomicAdd(&local_hist[(int)data[j]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&hist[b], local_hist[b]);
}

// examples/transpose.py: transpose (32x33 tile, 32x8 threads)
extern "C" __global__ void transpose(const float* RESTRICT x, int rows, int cols, float* out) {
    __shared__ float tile[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * 32 + tx;
    #pragma unroll
    for (int k = 0; k < 32; k += 8) {
        int row = blockIdx.y * 32 + ty + k;
        if (row < rows && col < cols) tile[ty + k][tx] = x[(long long)row * cols + col];
    }
    __syncthreads();
    int out_col = blockIdx.y * 32 + tx;
    #pragma unroll
    for (int k = 0; k < 32; k += 8) {
        int out_row = blockIdx.x * 32 + ty + k;
        if (out_row < cols && out_col < rows) out[(long long)out_row * rows + out_col] = tile[tx][ty + k];
    }
}

// examples/softmax.py: softmax_rows (one block per row)
extern "C" __global__ void softmax_rows(const float* RESTRICT x, int ncols, float* out) {
    __shared__ float red[32];
    const float NEG_INF = -3.4028234663852886e38f;
    long long base = (long long)blockIdx.x * ncols;
    int lane = lane_id();
    int wid = threadIdx.x / 32;
    int nwarps = blockDim.x / 32;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < ncols; c += blockDim.x) {
        float v = x[base + c];
        m = m > v ? m : v;  // Python's max(m, v)
    }
    m = warp_reduce_max(m);
    if (lane == 0) red[wid] = m;
    __syncthreads();
    m = lane < nwarps ? red[lane] : NEG_INF;
    m = warp_reduce_max(m);
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += blockDim.x) s += expf(x[base + c] - m);
    s = warp_reduce_sum(s);
    if (lane == 0) red[wid] = s;
    __syncthreads();
    s = lane < nwarps ? red[lane] : 0.0f;
    s = warp_reduce_sum(s);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < ncols; c += blockDim.x) out[base + c] = expf(x[base + c] - m) * inv;
}

// examples/stencil.py: stencil5 (32x8 threads)
extern "C" __global__ void stencil5(const float* RESTRICT x, int rows, int cols, float* out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        long long i = (long long)r * cols + c;
        float v = x[i];
        if (r > 0 && r < rows - 1 && c > 0 && c < cols - 1)
            v = 0.25f * (x[i - cols] + x[i + cols] + x[i - 1] + x[i + 1]);
        out[i] = v;
    }
}

// examples/sgemm.py: sgemm (32x32 tiles, 32x32 threads, one output per thread)
extern "C" __global__ void sgemm(const float* RESTRICT a, const float* RESTRICT b, int m, int n, int k, float* c) {
    __shared__ float a_tile[32][32];
    __shared__ float b_tile[32][32];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 32 + ty;
    int col = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += 32) {
        a_tile[ty][tx] = (row < m && t + tx < k) ? a[(long long)row * k + t + tx] : 0.0f;
        b_tile[ty][tx] = (t + ty < k && col < n) ? b[(long long)(t + ty) * n + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 32; ++kk) acc += a_tile[ty][kk] * b_tile[kk][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[(long long)row * n + col] = acc;
}

// the LTO benchmark: the C++ kernel calling the device function the Python kernel calls
// through LTO (benchmarks/lto_package.py writes the same function into its .cu source)
__device__ float ox_axpb(float a, float x, float b) { return a * x + b; }

extern "C" __global__ void axpb_cpp(float a, const float* RESTRICT x, long long x_len, float b,
                                    float* RESTRICT out, long long out_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_len) out[i] = ox_axpb(a, x[i], b);
}
"""

KERNEL_NAMES = (
    "saxpy", "block_sum", "scan_blocks", "add_block_offsets", "histogram", "transpose",
    "softmax_rows", "stencil5", "sgemm", "axpb_cpp",
)


class CudaKernels:
    """The compiled C++ kernels: ``k.saxpy(grid, block, args)`` launches on the default stream."""

    def __init__(self, module: Any, arch: str, options: tuple[str, ...]) -> None:
        self.module = module
        self.arch = arch
        self.options = options
        self._functions: dict[str, Any] = {}

    def function(self, name: str) -> Any:
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = self.module.get_function(name)
        return fn

    def launch(self, name: str, grid: tuple[int, ...] | int, block: tuple[int, ...] | int, args: tuple[Any, ...]) -> None:
        g = grid if isinstance(grid, tuple) else (grid,)
        b = block if isinstance(block, tuple) else (block,)
        self.function(name)(g, b, args)


def compile_cuda_kernels(restrict: bool = True) -> CudaKernels:
    """Compiles :data:`CUDA_SOURCE` with NVRTC (CuPy picks ``-arch`` from the current device)."""
    cupy = require_cupy()
    options: tuple[str, ...] = ("-std=c++17",)
    if not restrict:
        options += ("-DRESTRICT=",)
    module = cupy.RawModule(code=CUDA_SOURCE, options=options, backend="nvrtc")
    kernels = CudaKernels(module, f"sm_{cupy.cuda.Device().compute_capability}", options)
    for name in KERNEL_NAMES:  # compile and load now: a C++ error shows here, not mid-benchmark
        kernels.function(name)
    return kernels
