// NVIDIA cuda-samples, Samples/0_Introduction/simpleTemplates/simpleTemplates.cu (testKernel<T>
// with the SharedMemory<T> helper of sharedmem.cuh), BSD-3-Clause, Copyright (c) NVIDIA
// CORPORATION. As upstream. Upstream launch: one block of 256 threads (num_threads = 256).
template <class T> struct SharedMemory {
  __device__ inline operator T *() {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
  __device__ inline operator const T *() const {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
  __device__ T *getPointer() {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
};

template <class T>
__global__ void testKernel(T *g_idata, T *g_odata) {
  // Shared mem size is determined by the host app at run time
  SharedMemory<T> smem;
  T *sdata = smem.getPointer();

  // access thread id
  const unsigned int tid = threadIdx.x;
  // access number of threads in this block
  const unsigned int num_threads = blockDim.x;

  // read in input data from global memory
  sdata[tid] = g_idata[tid];
  __syncthreads();

  // perform some computations
  sdata[tid] = (T)num_threads * sdata[tid];
  __syncthreads();

  // write data to global memory
  g_odata[tid] = sdata[tid];
}

template __global__ void testKernel<float>(float *, float *);
