"""Sparse matrix times vector, CSR, one warp per row.

Ported from CUSP (github.com/cusplibrary/cusplibrary), cusp/system/cuda/detail/multiply/
csr_vector_spmv.h (`spmv_csr_vector_kernel`), the way its author writes it: lane and warp ids
from `threadIdx.x & (WARP_SIZE - 1)`, a grid-stride loop over rows, the row split in two
halves so the loads are aligned, a shuffle reduction."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i32, thread, warp

WARP_SIZE = 32
THREADS_PER_VECTOR = 32


@ox.kernel
def spmv_csr_vector(num_rows: i32, ap: Slice[i32], aj: Slice[i32], ax: Slice[f32], x: Slice[f32],
                    y: MutSlice[f32]) -> None:
    thread_id = block.dim.x * block.idx.x + thread.idx.x
    thread_lane = thread.idx.x & (THREADS_PER_VECTOR - 1)
    vector_id = thread_id // THREADS_PER_VECTOR
    num_vectors = (block.dim.x // THREADS_PER_VECTOR) * grid.dim.x
    row = vector_id
    while row < num_rows:
        row_start = ap[row]
        row_end = ap[row + 1]
        sum = f32(0.0)
        jj = row_start + thread_lane
        while jj < row_end:
            sum += ax[jj] * x[aj[jj]]
            jj += THREADS_PER_VECTOR
        offset = THREADS_PER_VECTOR // 2
        while offset > 0:
            sum += warp.shfl_down(sum, offset)
            offset //= 2
        if thread_lane == 0:
            with ox.unsafe():
                y[row] = sum
        row += num_vectors
