// PyTorch, aten/src/ATen/native/cuda/im2col.cuh (im2col_kernel), BSD-3-Clause, for float, with
// CUDA_KERNEL_LOOP_TYPE(index, n, int64_t) expanded as ATen defines it; 1024 threads a block
// (CUDA_NUM_THREADS), GET_BLOCKS(n) blocks. Benchmark: 64 channels of 128 x 128, a 3 x 3 kernel,
// padding 1, stride 1, dilation 1 (a conv layer's unfold).
#include <stdint.h>

#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((max_threads_per_block))
#define CUDA_KERNEL_LOOP_TYPE(i, n, index_type)                                   \
  int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x;                    \
  for (index_type i = _i_n_d_e_x; _i_n_d_e_x < (n); _i_n_d_e_x += blockDim.x * gridDim.x, i = _i_n_d_e_x)

template <typename dt>
C10_LAUNCH_BOUNDS_1(1024)
__global__ void im2col_kernel(const int64_t n, const dt* data_im, const int64_t height, const int64_t width,
                              const int64_t kernel_height, const int64_t kernel_width, const int64_t pad_height,
                              const int64_t pad_width, const int64_t stride_height, const int64_t stride_width,
                              const int64_t dilation_height, const int64_t dilation_width, const int64_t height_col,
                              const int64_t width_col, dt* data_col) {
  CUDA_KERNEL_LOOP_TYPE(index, n, int64_t) {
    int64_t w_out = index % width_col;

    int64_t idx = index / width_col;

    int64_t h_out = idx % height_col;
    int64_t channel_in = idx / height_col;
    int64_t channel_out = channel_in * kernel_height * kernel_width;
    int64_t h_in = h_out * stride_height - pad_height;
    int64_t w_in = w_out * stride_width - pad_width;

    dt* col = data_col + (channel_out * height_col + h_out) * width_col + w_out;
    const dt* im = data_im + (channel_in * height + h_in) * width + w_in;

    for (int64_t i = 0; i < kernel_height; ++i) {
      for (int64_t j = 0; j < kernel_width; ++j) {
        int64_t h = h_in + i * dilation_height;
        int64_t w = w_in + j * dilation_width;
        *col = (h >= 0 && w >= 0 && h < height && w < width)
            ? im[i * dilation_height * width + j * dilation_width]
            : static_cast<dt>(0);
        col += height_col * width_col;
      }
    }
  }
}

template __global__ void im2col_kernel<float>(const int64_t, const float*, const int64_t, const int64_t, const int64_t,
                                              const int64_t, const int64_t, const int64_t, const int64_t, const int64_t,
                                              const int64_t, const int64_t, const int64_t, const int64_t, float*);
