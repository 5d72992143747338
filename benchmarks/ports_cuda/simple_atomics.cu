// NVIDIA cuda-samples, Samples/0_Introduction/simpleAtomicIntrinsics/simpleAtomicIntrinsics_kernel.cuh
// (testKernel), BSD-3-Clause, Copyright (c) NVIDIA CORPORATION. As upstream, with atomicInc and
// atomicDec on a separate unsigned array as the port has them (upstream: casts of the int array).
// Upstream launch: 64 blocks of 256 threads.
__global__ void testKernel(int *g_odata, unsigned int *g_udata) {
  // access thread id
  const unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;

  // Test various atomic instructions

  // Arithmetic atomic instructions

  // Atomic addition
  atomicAdd(&g_odata[0], 10);

  // Atomic subtraction (final should be 0)
  atomicSub(&g_odata[1], 10);

  // Atomic exchange
  atomicExch(&g_odata[2], tid);

  // Atomic maximum
  atomicMax(&g_odata[3], tid);

  // Atomic minimum
  atomicMin(&g_odata[4], tid);

  // Atomic increment (modulo 17+1)
  atomicInc(&g_udata[5], 17);

  // Atomic decrement
  atomicDec(&g_udata[6], 137);

  // Atomic compare-and-swap
  atomicCAS(&g_odata[7], tid - 1, tid);

  // Bitwise atomic instructions

  // Atomic AND
  atomicAnd(&g_odata[8], 2 * tid + 7);

  // Atomic OR
  atomicOr(&g_odata[9], 1 << tid);

  // Atomic XOR
  atomicXor(&g_odata[10], tid);
}
