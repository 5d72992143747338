// The digit histogram of a radix-sort pass (the upsweep of CUB's DeviceRadixSort,
// cub/agent/agent_radix_sort_histogram.cuh, as a hand-written radix sort has it): shared counts
// per digit, a grid-stride loop over the keys with block-scope shared atomics, the block's counts
// added to the global histogram. Benchmark: 2^26 32-bit keys, 8-bit digits, 264 blocks of 256.
#define RADIX_BITS 8
#define RADIX_DIGITS (1 << RADIX_BITS)

template <typename KeyT>
__global__ void radix_histogram(const KeyT *keys, size_t num_keys, unsigned int *counts, unsigned int shift) {
  __shared__ unsigned int s_counts[RADIX_DIGITS];
  for (int d = threadIdx.x; d < RADIX_DIGITS; d += blockDim.x) s_counts[d] = 0;
  __syncthreads();
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_keys; i += (size_t)gridDim.x * blockDim.x) {
    unsigned int digit = (unsigned int)((keys[i] >> shift) & (RADIX_DIGITS - 1));
    atomicAdd_block(&s_counts[digit], 1u);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < RADIX_DIGITS; d += blockDim.x) atomicAdd(&counts[d], s_counts[d]);
}

template __global__ void radix_histogram<unsigned int>(const unsigned int *, size_t, unsigned int *, unsigned int);
template __global__ void radix_histogram<unsigned long long>(const unsigned long long *, size_t, unsigned int *,
                                                             unsigned int);
