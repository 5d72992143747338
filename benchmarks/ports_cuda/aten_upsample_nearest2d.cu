// PyTorch, aten/src/ATen/native/cuda/UpSampleNearest2d.cu (upsample_nearest2d_out_frame) with
// nearest_neighbor_compute_source_index of UpSample.cuh, BSD-3-Clause, for float and the
// "nearest" index op. Launch as ATen sizes it for this shape: blocks of 32 x 8 x 4 over
// (W_out, H_out, N*C). Benchmark: 32 x 64 x 256 x 256 upsampled to 512 x 512.
#include <stdint.h>

#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((max_threads_per_block))

__device__ __forceinline__ static int nearest_neighbor_compute_source_index(const float scale, int dst_index,
                                                                             int input_size) {
  // index_f32 = (output_index) * scale
  // input_index = round(index_f32)
  // Same as a buggy OpenCV INTER_NEAREST
  // We keep this method for BC and consider as deprecated.
  // See nearest_neighbor_exact_compute_source_index as replacement
  const int src_index = min(static_cast<int>(floorf((dst_index)*scale)), input_size - 1);
  return src_index;
}

template <typename scalar_t>
C10_LAUNCH_BOUNDS_1(1024)
__global__ void upsample_nearest2d_out_frame(const scalar_t* idata, scalar_t* odata, const size_t nc,
                                             const size_t height1, const size_t width1, const size_t height2,
                                             const size_t width2, float height_scale, float width_scale) {
  size_t nc_iter = threadIdx.z + blockIdx.z * blockDim.z;
  int w2 = threadIdx.x + blockIdx.x * blockDim.x;
  int h2 = threadIdx.y + blockIdx.y * blockDim.y;

  if (w2 >= width2 || h2 >= height2) {
    return;
  }

  int nc_stride = blockDim.z * gridDim.z;

  const size_t h1 = height1 == height2 ? h2 : nearest_neighbor_compute_source_index(height_scale, h2, height1);
  const size_t w1 = width1 == width2 ? w2 : nearest_neighbor_compute_source_index(width_scale, w2, width1);

  size_t src_index = (nc_iter * height1 + h1) * width1 + w1;
  size_t src_index_stride = nc_stride * width1 * height1;
  size_t dst_index = (nc_iter * height2 + h2) * width2 + w2;
  size_t dst_index_stride = nc_stride * width2 * height2;

  // iterating over
  while (nc_iter < nc) {
    odata[dst_index] = idata[src_index];
    dst_index += dst_index_stride;
    src_index += src_index_stride;
    nc_iter += nc_stride;
  }
}

template __global__ void upsample_nearest2d_out_frame<float>(const float*, float*, const size_t, const size_t,
                                                             const size_t, const size_t, const size_t, float, float);
