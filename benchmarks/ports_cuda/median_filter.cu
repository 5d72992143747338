// The 3x3 median filter of numba's CUDA image-filter examples (cuda.grid(2), a
// cuda.local.array(9, float32) window, a bubble sort with tuple swaps) in CUDA C++ line by line,
// row-major float32 arrays with their shapes (int64) as numba passes them. Benchmark: 4096 x 4096.
__global__ void median_filter(const float *img, long long h, long long w, float *out, long long oh, long long ow) {
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= h || col >= w || row >= oh || col >= ow) return;
  if (row < 1 || col < 1 || row >= h - 1 || col >= w - 1) {
    out[row * ow + col] = img[row * w + col];
    return;
  }
  float window[9];
  int k = 0;
  for (int i = -1; i < 2; i++)
    for (int j = -1; j < 2; j++) {
      window[k] = img[(row + i) * w + col + j];
      k += 1;
    }
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < 8 - i; j++)
      if (window[j] > window[j + 1]) {
        float t = window[j];
        window[j] = window[j + 1];
        window[j + 1] = t;
      }
  out[row * ow + col] = window[4];
}
