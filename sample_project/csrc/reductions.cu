// Block-wide reductions from CUB (the nvidia-cuda-cccl wheel's headers) behind C linkage, for
// the Python softmax kernel. Every thread of a block of exactly 256 threads must call them; the
// result is valid in thread 0.
#include <cub/block/block_reduce.cuh>

constexpr int kBlockThreads = 256;

extern "C" __device__ float sample_block_max_256(float x) {
    using BlockReduce = cub::BlockReduce<float, kBlockThreads>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Reduce(x, cuda::maximum<float>{});
}

extern "C" __device__ float sample_block_sum_256(float x) {
    using BlockReduce = cub::BlockReduce<float, kBlockThreads>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Sum(x);
}
