// numba-cuda documentation's Mandelbrot example (mandel device function, mandel_kernel) in CUDA
// C++ line by line: the image a row-major uint8 array with its shape (int64) as numba passes it.
// Benchmark: the example's 1536 x 1024 image, 20 iterations... and 200 (the "create_fractal" call).
__device__ int mandel(float x, float y, int max_iters) {
  float c_re = x, c_im = y;
  float z_re = 0.0f, z_im = 0.0f;
  for (int i = 0; i < max_iters; i++) {
    float nre = z_re * z_re - z_im * z_im + c_re;
    float nim = 2 * z_re * z_im + c_im;
    z_re = nre;
    z_im = nim;
    if ((z_re * z_re + z_im * z_im) >= 4) return i;
  }
  return max_iters;
}

__global__ void mandel_kernel(float min_x, float max_x, float min_y, float max_y, unsigned char *image,
                              long long height, long long width, int iters) {
  float pixel_size_x = (max_x - min_x) / width;
  float pixel_size_y = (max_y - min_y) / height;
  long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (y < height && x < width) {
    float real = min_x + x * pixel_size_x;
    float imag = min_y + y * pixel_size_y;
    image[y * width + x] = mandel(real, imag, iters);
  }
}
