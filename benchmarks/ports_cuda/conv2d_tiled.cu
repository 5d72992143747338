// Kirk and Hwu, "Programming Massively Parallel Processors" (3rd ed.), chapter 7:
// convolution_2D_tiled_kernel (input tiles of BLOCK_WIDTH = O_TILE_WIDTH + MASK_WIDTH - 1, the
// mask in constant memory), as the book writes it.
#define MASK_WIDTH 5
#define O_TILE_WIDTH 12
#define BLOCK_WIDTH (O_TILE_WIDTH + (MASK_WIDTH - 1))

__constant__ float M[MASK_WIDTH][MASK_WIDTH];

__global__ void convolution_2D_tiled_kernel(float *P, float *N, int height, int width, int pitch) {
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int row_o = blockIdx.y * O_TILE_WIDTH + ty;
  int col_o = blockIdx.x * O_TILE_WIDTH + tx;
  int row_i = row_o - MASK_WIDTH / 2;
  int col_i = col_o - MASK_WIDTH / 2;

  __shared__ float N_ds[BLOCK_WIDTH][BLOCK_WIDTH];
  if ((row_i >= 0) && (row_i < height) && (col_i >= 0) && (col_i < width)) {
    N_ds[ty][tx] = N[row_i * pitch + col_i];
  } else {
    N_ds[ty][tx] = 0.0f;
  }
  __syncthreads();

  float output = 0.0f;
  if (ty < O_TILE_WIDTH && tx < O_TILE_WIDTH) {
    for (int i = 0; i < MASK_WIDTH; i++) {
      for (int j = 0; j < MASK_WIDTH; j++) {
        output += M[i][j] * N_ds[i + ty][j + tx];
      }
    }
    if (row_o < height && col_o < width) {
      P[row_o * width + col_o] = output;
    }
  }
}
