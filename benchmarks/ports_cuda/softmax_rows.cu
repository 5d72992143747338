// Row softmax, one block per row (Triton tutorial 02-fused-softmax.py as the SIMT kernel a CUDA
// author writes for it): a strided loop, block max and block sum through shared memory with
// -INFINITY as the identity, the row a row-major float32 matrix with its shape (int64).
// Benchmark: the tutorial's 4096 rows x 4096... columns.
#include <math.h>

#define BLOCK 256

__device__ float block_max(float v, float *red) {
  int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s /= 2) {
    if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

__device__ float block_sum(float v, float *red) {
  int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s /= 2) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

__global__ void softmax(const float *x, long long rows, long long n_cols, float *out, long long out_rows,
                        long long out_cols) {
  __shared__ float red[BLOCK];
  long long row = blockIdx.x;
  float m = -INFINITY;
  for (long long c = threadIdx.x; c < n_cols; c += BLOCK) m = fmaxf(m, x[row * n_cols + c]);
  m = block_max(m, red);
  float s = 0.0f;
  for (long long c = threadIdx.x; c < n_cols; c += BLOCK) s += expf(x[row * n_cols + c] - m);
  s = block_sum(s, red);
  for (long long c = threadIdx.x; c < n_cols; c += BLOCK) out[row * out_cols + c] = expf(x[row * n_cols + c] - m) / s;
}
