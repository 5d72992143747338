// The Jacobi sweep of numba-cuda's stencil examples (cuda.grid(2), a cuda.shared.array tile with
// a one-cell halo, cuda.atomic.max of the error) in CUDA C++ line by line, row-major float32
// arrays with their shapes as numba passes them (int64). cuda.atomic.max of a float32 is what
// numba-cuda lowers it to (___numba_atomic_float_max): return early when the value is not larger,
// else a compare-and-swap loop. Benchmark: 4096 x 4096.
#define TPB 16

__device__ __forceinline__ float atomic_max_float(float *address, float val) {
  int *addr = (int *)address;
  int old = *(volatile int *)addr;
  while (__int_as_float(old) < val) {
    int assumed = old;
    old = atomicCAS(addr, assumed, __float_as_int(val));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}

__global__ void jacobi_sweep(const float *a, long long n, long long m, float *a_new, float *error) {
  __shared__ float tile[TPB + 2][TPB + 2];
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  int tx = threadIdx.x + 1;
  int ty = threadIdx.y + 1;
  bool inside = i < n && j < m;
  if (inside) {
    tile[ty][tx] = a[i * m + j];
    if (threadIdx.x == 0 && j > 0) tile[ty][0] = a[i * m + j - 1];
    if (threadIdx.x == TPB - 1 && j < m - 1) tile[ty][TPB + 1] = a[i * m + j + 1];
    if (threadIdx.y == 0 && i > 0) tile[0][tx] = a[(i - 1) * m + j];
    if (threadIdx.y == TPB - 1 && i < n - 1) tile[TPB + 1][tx] = a[(i + 1) * m + j];
  }
  __syncthreads();
  if (inside) {
    if (i > 0 && j > 0 && i < n - 1 && j < m - 1) {
      float value = 0.25f * (tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx]);
      a_new[i * m + j] = value;
      atomic_max_float(error, fabsf(value - tile[ty][tx]));
    } else {
      a_new[i * m + j] = tile[ty][tx];
    }
  }
}
