// numba-cuda documentation, "Cooperative Groups" (sequential_rows): the numba kernel in CUDA C++
// line by line (cg::this_grid().sync() for cuda.cg.this_grid().sync()), the int32 matrix with its
// shape (int64) as numba passes it. Documentation size: 128 x 1024... benchmark: 1024 rows x 1024.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void sequential_rows(int *M, long long rows, long long cols) {
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  cg::grid_group g = cg::this_grid();
  for (long long row = 1; row < rows; row++) {
    long long opposite = cols - col - 1;
    // Each row's elements are one greater than the previous row
    M[row * cols + col] = M[(row - 1) * cols + opposite] + 1;
    // Wait until all threads have written their column element,
    // and that the write is visible to all other threads
    g.sync();
  }
}
