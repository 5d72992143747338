// CUB's block reduction behind C linkage; the CUB headers come from the nvidia-cuda-cccl
// wheel of the build environment (there is no CUDA toolkit where the tests build this).
#include <cub/block/block_reduce.cuh>

extern "C" __device__ float fkern_block_sum(float x) {
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage storage;
    return BlockReduce(storage).Sum(x);
}
