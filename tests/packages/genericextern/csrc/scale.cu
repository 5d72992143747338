// A C++ template the Python kernels call once per TypeVar constraint: oxide instantiates
// scale_add<T> behind an extern "C" wrapper per type (docs/interop.md, "Generic externs").
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename T>
__device__ T scale_add(T x, T a) {
    return x * a + T(1.0f);
}

// Reads a view through the ABI (pointer + length), in its own type.
template <typename T>
__device__ float mean_of(const T* x, long long n) {
    float s = 0.0f;
    for (long long i = 0; i < n; ++i) s += static_cast<float>(x[i]);
    return s / static_cast<float>(n);
}

// One extern "C" function per type, named by a pattern.
extern "C" __device__ float twice_f32(float x) { return 2.0f * x; }
extern "C" __device__ double twice_f64(double x) { return 2.0 * x; }

// A plain extern "C" function over __half (a 2-byte struct in C++): oxide calls it through a
// shim that passes the bits.
extern "C" __device__ __half half_fma(__half x, __half a, float b) {
    return __float2half(__half2float(x) * __half2float(a) + b);
}
