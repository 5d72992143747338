// numba-cuda documentation, "Matrix multiplication" (docs/source/cuda/examples.rst, fast_matmul),
// BSD-2-Clause, Anaconda Inc.: the numba kernel written in CUDA C++ line by line (the original is
// Python; this is what numba compiles it to, with int64 array indices as numba's are), row-major
// float32 arrays with their shapes passed as numba passes them.
#define TPB 16

__global__ void fast_matmul(const float *A, long long A_rows, long long A_cols,
                            const float *B, long long B_rows, long long B_cols,
                            float *C, long long C_rows, long long C_cols) {
  // Define an array in the shared memory
  // The size and type of the arrays must be known at compile time
  __shared__ float sA[TPB][TPB];
  __shared__ float sB[TPB][TPB];

  long long x = (long long)blockIdx.y * blockDim.y + threadIdx.y;  // cuda.grid(2): x is the row here
  long long y = (long long)blockIdx.x * blockDim.x + threadIdx.x;

  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int bpg = gridDim.x;  // blocks per grid

  // Each thread computes one element in the result matrix.
  // The dot product is chunked into dot products of TPB-long vectors.
  float tmp = 0.;
  for (int i = 0; i < bpg; i++) {
    // Preload data into shared memory
    sA[ty][tx] = 0;
    sB[ty][tx] = 0;
    if (x < A_rows && (tx + i * TPB) < A_cols) sA[ty][tx] = A[x * A_cols + tx + i * TPB];
    if (y < B_cols && (ty + i * TPB) < B_rows) sB[ty][tx] = B[(ty + i * TPB) * B_cols + y];

    // Wait until all threads finish preloading
    __syncthreads();

    // Computes partial product on the shared memory
    for (int j = 0; j < TPB; j++) tmp += sA[ty][j] * sB[j][tx];

    // Wait until all threads finish computing
    __syncthreads();
  }
  if (x < C_rows && y < C_cols) C[x * C_cols + y] = tmp;
}
