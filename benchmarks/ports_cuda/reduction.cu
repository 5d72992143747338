// NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu (reduce4
// with the warp-synchronous warpReduce of the older samples), BSD-3-Clause, Copyright (c) NVIDIA
// CORPORATION. As upstream for float, with __syncwarp() between the unrolled steps as the port
// has (ox.warp.sync()). Upstream benchmark: 2^24 elements, 256 threads.
template <unsigned int blockSize>
__device__ void warpReduce(volatile float *sdata, unsigned int tid) {
  if (blockSize >= 64) sdata[tid] += sdata[tid + 32];
  __syncwarp();
  if (blockSize >= 32) sdata[tid] += sdata[tid + 16];
  __syncwarp();
  if (blockSize >= 16) sdata[tid] += sdata[tid + 8];
  __syncwarp();
  if (blockSize >= 8) sdata[tid] += sdata[tid + 4];
  __syncwarp();
  if (blockSize >= 4) sdata[tid] += sdata[tid + 2];
  __syncwarp();
  if (blockSize >= 2) sdata[tid] += sdata[tid + 1];
  __syncwarp();
}

template <unsigned int blockSize>
__global__ void reduce4(float *g_idata, float *g_odata, unsigned int n) {
  __shared__ float sdata[blockSize];

  // perform first level of reduction,
  // reading from global memory, writing to shared memory
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;

  float mySum = (i < n) ? g_idata[i] : 0;

  if (i + blockSize < n) mySum += g_idata[i + blockSize];

  sdata[tid] = mySum;
  __syncthreads();

  // do reduction in shared mem
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) {
      sdata[tid] = mySum = mySum + sdata[tid + s];
    }

    __syncthreads();
  }

  if (tid < 32) warpReduce<blockSize>(sdata, tid);

  // write result for this block to global mem
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

template __global__ void reduce4<256>(float *, float *, unsigned int);
