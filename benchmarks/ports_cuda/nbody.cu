// NVIDIA cuda-samples, Samples/5_Domain_Specific/nbody/bodysystemcuda_impl.h (bodyBodyInteraction,
// computeBodyAccel; GPU Gems 3 chapter 31), BSD-3-Clause, Copyright (c) NVIDIA CORPORATION. As
// upstream for float, one body per thread (numDevices 1, no multithreadBodies split), the
// acceleration written as float4 (w = 0), as the port does. Upstream benchmark: -benchmark
// -numbodies=... default 16384 x 4 per SM; this benchmark: 32768 bodies, 128 threads per block.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define BLOCK 128

__device__ float3 bodyBodyInteraction(float3 ai, float4 bi, float4 bj, float softeningSquared) {
  float3 r;

  // r_ij  [3 FLOPS]
  r.x = bj.x - bi.x;
  r.y = bj.y - bi.y;
  r.z = bj.z - bi.z;

  // distSqr = dot(r_ij, r_ij) + EPS^2  [6 FLOPS]
  float distSqr = r.x * r.x + r.y * r.y + r.z * r.z;
  distSqr += softeningSquared;

  // invDistCube =1/distSqr^(3/2)  [4 FLOPS (2 mul, 1 sqrt, 1 inv)]
  float invDist = rsqrtf(distSqr);
  float invDistCube = invDist * invDist * invDist;

  // s = m_j * invDistCube [1 FLOP]
  float s = bj.w * invDistCube;

  // a_i =  a_i + s * r_ij [6 FLOPS]
  ai.x += r.x * s;
  ai.y += r.y * s;
  ai.z += r.z * s;

  return ai;
}

__device__ float3 computeBodyAccel(float4 bodyPos, const float4 *positions, int numTiles, int numBodies,
                                   float softeningSquared, cg::thread_block cta) {
  __shared__ float4 sharedPos[BLOCK];

  float3 acc = {0.0f, 0.0f, 0.0f};

  for (int tile = 0; tile < numTiles; tile++) {
    int j = tile * blockDim.x + threadIdx.x;
    sharedPos[threadIdx.x] = j < numBodies ? positions[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    cg::sync(cta);

    // This is the "tile_calculation" from the GPUG3 article.
#pragma unroll 128

    for (unsigned int counter = 0; counter < blockDim.x; counter++) {
      acc = bodyBodyInteraction(acc, bodyPos, sharedPos[counter], softeningSquared);
    }

    cg::sync(cta);
  }

  return acc;
}

__global__ void __launch_bounds__(BLOCK)
integrateBodiesAccel(const float4 *oldPos, float4 *accel, int numBodies, float softeningSquared) {
  // Handle to thread block group
  cg::thread_block cta = cg::this_thread_block();
  int index = blockIdx.x * blockDim.x + threadIdx.x;

  int numTiles = (numBodies + blockDim.x - 1) / blockDim.x;
  float4 position = index < numBodies ? oldPos[index] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  float3 accel3 = computeBodyAccel(position, oldPos, numTiles, numBodies, softeningSquared, cta);

  if (index < numBodies) accel[index] = make_float4(accel3.x, accel3.y, accel3.z, 0.0f);
}
