// NVIDIA cuda-samples, Samples/0_Introduction/simpleVoteIntrinsics/simpleVote_kernel.cuh
// (VoteAnyKernel1, VoteAllKernel2, VoteAnyKernel3), BSD-3-Clause, Copyright (c) NVIDIA
// CORPORATION. As upstream. Upstream launch: one block of VOTE_DATA_GROUP * warp_size threads.
__global__ void VoteAnyKernel1(unsigned int *input, unsigned int *result, int size) {
  int tx = threadIdx.x;

  int mask = 0xffffffff;
  result[tx] = __any_sync(mask, input[tx]);
}

__global__ void VoteAllKernel2(unsigned int *input, unsigned int *result, int size) {
  int tx = threadIdx.x;

  int mask = 0xffffffff;
  result[tx] = __all_sync(mask, input[tx]);
}

__global__ void VoteAnyKernel3(bool *info, int warp_size) {
  int tx = threadIdx.x;
  unsigned int mask = 0xffffffff;
  bool *offs = info + (tx * 3);

  // The following should hold true for the second and third warp
  *offs = __any_sync(mask, (tx >= (warp_size * 3) / 2));
  // The following should hold true for the "upper half" of the second warp,
  // and all of the third warp
  *(offs + 1) = (tx >= (warp_size * 3) / 2 ? true : false);

  // The following should hold true for the third warp only
  if (__all_sync(mask, (tx >= (warp_size * 3) / 2))) {
    *(offs + 2) = true;
  }
}
