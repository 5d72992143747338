// Layer normalization forward, one block per row (Triton tutorial 05-layer-norm.py,
// _layer_norm_fwd_fused, as the SIMT kernel of apex/PyTorch's LayerNorm forward a CUDA author
// writes for it): a block strides over its row, mean then variance reduced through shared memory,
// f32 statistics whatever the element type. Benchmark: the tutorial's M = 4096 rows, N = 4096, f16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define BLOCK 256

template <typename T> struct acc { using type = T; };
template <> struct acc<__half> { using type = float; };
template <> struct acc<__nv_bfloat16> { using type = float; };

__device__ float block_sum(float *buf, float v) {
  int tid = threadIdx.x;
  buf[tid] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  float total = buf[0];
  __syncthreads();
  return total;
}

template <typename T>
__global__ void __launch_bounds__(BLOCK)
layer_norm_fwd(const T *X, T *Y, const T *W, const T *B, float *Mean, float *Rstd, int N, float eps) {
  using acc_t = typename acc<T>::type;
  int row = blockIdx.x;
  __shared__ float buf[BLOCK];
  const T *x = X + (size_t)row * N;
  acc_t sum = 0;
  for (int col = threadIdx.x; col < N; col += BLOCK) sum += (acc_t)x[col];
  float mean = block_sum(buf, sum) / N;
  acc_t var_acc = 0;
  for (int col = threadIdx.x; col < N; col += BLOCK) {
    acc_t d = (acc_t)x[col] - mean;
    var_acc += d * d;
  }
  float var = block_sum(buf, var_acc) / N;
  float rstd = 1.0f / sqrtf(var + eps);
  if (threadIdx.x == 0) {
    Mean[row] = mean;
    Rstd[row] = rstd;
  }
  for (int col = threadIdx.x; col < N; col += BLOCK) {
    acc_t x_hat = ((acc_t)x[col] - mean) * rstd;
    Y[(size_t)row * N + col] = (T)(x_hat * (acc_t)W[col] + (acc_t)B[col]);
  }
}

template __global__ void layer_norm_fwd<__half>(const __half *, __half *, const __half *, const __half *, float *,
                                                 float *, int, float);
template __global__ void layer_norm_fwd<float>(const float *, float *, const float *, const float *, float *, float *,
                                                int, float);
