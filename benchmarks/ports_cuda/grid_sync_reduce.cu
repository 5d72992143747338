// NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/reductionMultiBlockCG/
// reductionMultiBlockCG.cu (reduceBlock, reduceSinglePassMultiBlockCG), BSD-3-Clause, Copyright
// (c) NVIDIA CORPORATION. As upstream with the block reduced by warp shuffles (cg::reduce over
// tiled_partition<32>, as the sample does) then through shared memory. Upstream benchmark:
// 2^25 floats, as many 256-thread blocks as fit at once (the port: 132 blocks).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

#define BLOCK 256

__device__ float reduceBlock(float *sdata, const cg::thread_block &cta, float value) {
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  float v = cg::reduce(tile32, value, cg::plus<float>());
  if (tile32.thread_rank() == 0) sdata[tile32.meta_group_rank()] = v;
  cg::sync(cta);
  float total = 0.0f;
  if (tile32.meta_group_rank() == 0) {
    total = tile32.thread_rank() < BLOCK / 32 ? sdata[tile32.thread_rank()] : 0.0f;
    total = cg::reduce(tile32, total, cg::plus<float>());
  }
  cg::sync(cta);
  return total;
}

extern "C" __global__ void reduceSinglePassMultiBlockCG(const float *g_idata, float *g_odata, unsigned int n) {
  // Handle to thread block group
  cg::thread_block block = cg::this_thread_block();
  cg::grid_group grid = cg::this_grid();

  __shared__ float sdata[BLOCK / 32];

  // Stride over grid and add the values to a shared memory buffer
  float s = 0.0f;
  for (unsigned int i = grid.thread_rank(); i < n; i += grid.size()) {
    s += g_idata[i];
  }
  s = reduceBlock(sdata, block, s);
  if (block.thread_rank() == 0) g_odata[blockIdx.x] = s;

  grid.sync();

  if (grid.block_rank() == 0) {
    s = 0.0f;
    for (unsigned int b = block.thread_rank(); b < gridDim.x; b += block.size()) s += g_odata[b];
    s = reduceBlock(sdata, block, s);
    if (block.thread_rank() == 0) g_odata[0] = s;
  }
}
