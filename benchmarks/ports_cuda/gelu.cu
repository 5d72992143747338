// PyTorch, aten/src/ATen/native/cuda/ActivationGeluKernel.cu (GeluCUDAKernelImpl,
// GeluType::None), BSD-3-Clause: the functor's body, [](scalar_t x) { constexpr opmath_t kAlpha =
// M_SQRT1_2; return static_cast<opmath_t>(x) * 0.5 * (1 + c10::cuda::compat::erf(x * kAlpha)); },
// as the plain templated grid-stride kernel the port is (ATen runs it through gpu_kernel's
// vectorized elementwise loop). Benchmark: 2^26 float elements.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>

template <typename T> struct opmath { using type = T; };
template <> struct opmath<__half> { using type = float; };
template <> struct opmath<__nv_bfloat16> { using type = float; };

template <typename scalar_t>
__global__ void gelu_kernel(const scalar_t *x, scalar_t *y, int64_t n) {
  using opmath_t = typename opmath<scalar_t>::type;
  constexpr opmath_t kAlpha = M_SQRT1_2;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
    opmath_t v = static_cast<opmath_t>(x[i]);
    y[i] = static_cast<scalar_t>(v * opmath_t(0.5) * (opmath_t(1) + erf(v * kAlpha)));
  }
}

template __global__ void gelu_kernel<float>(const float *, float *, int64_t);
template __global__ void gelu_kernel<double>(const double *, double *, int64_t);
template __global__ void gelu_kernel<__half>(const __half *, __half *, int64_t);
template __global__ void gelu_kernel<__nv_bfloat16>(const __nv_bfloat16 *, __nv_bfloat16 *, int64_t);
