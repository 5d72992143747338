// NVIDIA cuda-samples, Samples/6_Performance/transpose/transpose.cu (transposeNaive),
// BSD-3-Clause, Copyright (c) NVIDIA CORPORATION. As upstream. Upstream size: 1024 x 1024; here
// 8192 x 8192.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transposeNaive(float *odata, float *idata, int width, int height) {
  int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
  int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;

  int index_in = xIndex + width * yIndex;
  int index_out = yIndex + height * xIndex;

  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) {
    odata[index_out + i] = idata[index_in + i * width];
  }
}
