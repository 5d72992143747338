// Activation helpers in CUDA C++, linked with the Python kernels of sample/kernels.py through
// LTO-IR (nvJitLink inlines them). oxide compiles this file against the prototypes the Python
// stubs declare, so a signature that disagrees with sample/kernels.py is a compile error.
#include "oxide_exports.h"  // generated: the Python device functions of sample.kernels (sample_gelu)

// tanh from one fast exponential: 1 - 2 / (e^(2x) + 1). Saturates to +-1 (e^(2x) = inf or 0)
// with no NaN; absolute error a few 1e-7.
extern "C" __device__ float sample_fast_tanh(float x) {
    const float e = __expf(2.0f * x);
    return 1.0f - 2.0f / (e + 1.0f);
}

// A CUDA C++ kernel that calls the Python device function gelu (exported as sample_gelu),
// launched from Python through its @ox.extern_kernel stub gelu_cpp.
extern "C" __global__ void sample_gelu_cpp(const float* x, long long x_len, float* out, long long out_len) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < out_len && i < x_len) out[i] = sample_gelu(x[i]);
}
