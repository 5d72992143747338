// Small CUDA C++ device functions and a kernel, called from the Python kernels in ffi_kernels.py.
// C linkage: the Python stubs (@oxide.extern / @oxide.extern_kernel) name these symbols.
#include "fastmath_impl.cuh"

// small enough to be inlined into the Python kernel by nvJitLink -lto
extern "C" __device__ float ox_axpb(float a, float x, float b) { return a * x + b; }

extern "C" __device__ float ox_softplus(float x) { return oxide_test::softplus(x); }

// a view argument arrives as a pointer and a length
extern "C" __device__ float ox_window_sum(const float* x, long long n, long long i, int w) {
    float s = 0.0f;
    for (long long k = i; k < i + w && k < n; ++k) s += x[k];
    return s;
}

// a CUDA C++ kernel launched from Python like a Python kernel (views: pointer, length)
extern "C" __global__ void ox_scale_add(float a, const float* x, long long x_len, float* out, long long out_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_len && i < x_len) out[i] = a * x[i] + out[i];
}
