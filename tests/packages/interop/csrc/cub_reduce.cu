// CUB's block and warp reductions behind C linkage, for Python kernels (cub_kernels.py).
// Every thread of the block (warp) must call them; the result is valid in thread (lane) 0.
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

constexpr int kBlock = 256;

extern "C" __device__ float ox_block_sum_256(float x) {
    using BlockReduce = cub::BlockReduce<float, kBlock>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Sum(x);
}

extern "C" __device__ float ox_block_max_256(float x) {
    using BlockReduce = cub::BlockReduce<float, kBlock>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Reduce(x, cuda::maximum<float>{});
}

extern "C" __device__ float ox_warp_sum(float x) {
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename WarpReduce::TempStorage storage[kBlock / 32];
    return WarpReduce(storage[threadIdx.x / 32]).Sum(x);
}
