// CUSP, cusp/system/cuda/detail/multiply/csr_vector_spmv.h (spmv_csr_vector_kernel), Apache-2.0,
// Copyright NVIDIA Corporation: THREADS_PER_VECTOR = 32, int indices, float values, the
// warp-shuffle reduction of CUSP's later versions, written as the port has it (one row per warp,
// a grid-stride loop over rows). Benchmark: a random CSR matrix of 2^20 rows, 2^20 columns, 32
// non-zeros a row.
#define WARP_SIZE 32
#define THREADS_PER_VECTOR 32

__global__ void spmv_csr_vector_kernel(const int num_rows, const int *Ap, const int *Aj, const float *Ax,
                                       const float *x, float *y) {
  const int thread_id = blockDim.x * blockIdx.x + threadIdx.x;  // global thread index
  const int thread_lane = threadIdx.x & (THREADS_PER_VECTOR - 1);  // thread index within the vector
  const int vector_id = thread_id / THREADS_PER_VECTOR;  // global vector index
  const int num_vectors = (blockDim.x / THREADS_PER_VECTOR) * gridDim.x;  // total number of active vectors

  for (int row = vector_id; row < num_rows; row += num_vectors) {
    const int row_start = Ap[row];
    const int row_end = Ap[row + 1];

    // initialize local sum
    float sum = 0;

    // accumulate local sums
    for (int jj = row_start + thread_lane; jj < row_end; jj += THREADS_PER_VECTOR) sum += Ax[jj] * x[Aj[jj]];

    // reduce local sums to row sum
    for (int offset = THREADS_PER_VECTOR / 2; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xffffffff, sum, offset);

    // first thread writes the result
    if (thread_lane == 0) y[row] = sum;
  }
}
