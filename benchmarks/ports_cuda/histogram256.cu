// NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/histogram/histogram256.cu (addByte,
// addWord, histogram256Kernel), BSD-3-Clause, Copyright (c) NVIDIA CORPORATION, with the
// simplification the port makes: one shared sub-histogram per block instead of one per warp (so
// no tag bits). Upstream benchmark: 64 MB of data (16M words), PARTIAL_HISTOGRAM256_COUNT = 240
// blocks of 192 threads.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

typedef unsigned int uint;

#define HISTOGRAM256_BIN_COUNT 256

inline __device__ void addByte(uint *s_WarpHist, uint data) { atomicAdd(s_WarpHist + data, 1); }

inline __device__ void addWord(uint *s_WarpHist, uint data) {
  addByte(s_WarpHist, (data >> 0) & 0xFFU);
  addByte(s_WarpHist, (data >> 8) & 0xFFU);
  addByte(s_WarpHist, (data >> 16) & 0xFFU);
  addByte(s_WarpHist, (data >> 24) & 0xFFU);
}

__global__ void histogram256Kernel(uint *d_PartialHistograms, uint *d_Data, uint dataCount) {
  // Handle to thread block group
  cg::thread_block cta = cg::this_thread_block();
  __shared__ uint s_Hist[HISTOGRAM256_BIN_COUNT];

// Clear shared memory storage for current threadblock before processing
  for (uint i = threadIdx.x; i < HISTOGRAM256_BIN_COUNT; i += blockDim.x) s_Hist[i] = 0;

  cg::sync(cta);

  for (uint pos = (blockIdx.x * blockDim.x) + threadIdx.x; pos < dataCount; pos += (blockDim.x * gridDim.x)) {
    uint data = d_Data[pos];
    addWord(s_Hist, data);
  }

  // Merge per-warp histograms into per-block and write to global memory
  cg::sync(cta);

  for (uint bin = threadIdx.x; bin < HISTOGRAM256_BIN_COUNT; bin += blockDim.x) {
    d_PartialHistograms[blockIdx.x * HISTOGRAM256_BIN_COUNT + bin] = s_Hist[bin];
  }
}
