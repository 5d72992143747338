// NVIDIA cuda-samples, Samples/0_Introduction/vectorAdd/vectorAdd.cu (vectorAdd), BSD-3-Clause,
// Copyright (c) NVIDIA CORPORATION. As upstream. Upstream size: 50000 elements, 256 threads;
// here 2^26 (50000 is launch latency only).
__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;

  if (i < numElements) {
    C[i] = A[i] + B[i] + 0.0f;
  }
}
