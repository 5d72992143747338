// The CUB warp-scan-smem block scan (cub/block/specializations/block_scan_warp_scans.cuh) as
// NVIDIA's "Faster Parallel Reductions/Scans with shuffle" recipe writes it by hand: a
// Kogge-Stone __shfl_up_sync scan per warp, the warp totals in shared memory scanned by warp 0,
// each warp adding its prefix; one block per 1024 items, the block total written out.
#define WARP_SIZE 32
#define BLOCK_THREADS 1024
#define WARPS (BLOCK_THREADS / WARP_SIZE)

__device__ __forceinline__ unsigned int warp_inclusive_scan(unsigned int value, int lane) {
#pragma unroll
  for (int offset = 1; offset < WARP_SIZE; offset <<= 1) {
    unsigned int n = __shfl_up_sync(0xffffffff, value, offset);
    if (lane >= offset) value += n;
  }
  return value;
}

__global__ void __launch_bounds__(BLOCK_THREADS)
block_inclusive_scan(const unsigned int *d_in, unsigned int *d_out, unsigned int *d_block_totals,
                     unsigned int num_items) {
  __shared__ unsigned int warp_totals[WARPS];
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & (WARP_SIZE - 1);
  int warp_id = threadIdx.x >> 5;

  unsigned int value = i < num_items ? d_in[i] : 0;
  value = warp_inclusive_scan(value, lane);
  if (lane == WARP_SIZE - 1) warp_totals[warp_id] = value;
  __syncthreads();

  if (warp_id == 0) {
    unsigned int total = lane < WARPS ? warp_totals[lane] : 0;
    total = warp_inclusive_scan(total, lane);
    if (lane < WARPS) warp_totals[lane] = total;
  }
  __syncthreads();

  if (warp_id > 0) value += warp_totals[warp_id - 1];
  if (i < num_items) d_out[i] = value;
  if (threadIdx.x == BLOCK_THREADS - 1) d_block_totals[blockIdx.x] = value;
}
