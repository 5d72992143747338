// CUB's block and warp reductions behind C linkage, so that oxide kernels can call them.
// The CUB headers come from the nvidia-cuda-cccl wheel; oxide compiles this file with NVRTC
// to LTO-IR and links it with the Python kernel by nvJitLink -lto.
//
// Every thread of the block (warp) must call a reduction; the result is valid in thread
// (lane) 0 only. The block size is fixed at compile time: launch with 256 threads.
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

constexpr int kBlockThreads = 256;

extern "C" __device__ float cub_block_sum(float x) {
    using BlockReduce = cub::BlockReduce<float, kBlockThreads>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Sum(x);
}

extern "C" __device__ float cub_warp_sum(float x) {
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename WarpReduce::TempStorage storage[kBlockThreads / 32];
    return WarpReduce(storage[threadIdx.x / 32]).Sum(x);
}
