// PolyBench-GPU 1.0, CUDA/JACOBI2D/jacobi2D.cu: runJacobiCUDA_kernel1, runJacobiCUDA_kernel2 as
// upstream. Upstream sizes: N = 1000, TSTEPS 20, block 32 x 8; here N = 4096 (1000 is launch
// latency only), 20 steps.
typedef float DATA_TYPE;

#define N 4096

__global__ void runJacobiCUDA_kernel1(int n, DATA_TYPE* A, DATA_TYPE* B)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if ((i >= 1) && (i < (N-1)) && (j >= 1) && (j < (N-1)))
	{
		B[i*N + j] = 0.2f * (A[i*N + j] + A[i*N + (j-1)] + A[i*N + (1 + j)] + A[(1 + i)*N + j] + A[(i-1)*N + j]);
	}
}

__global__ void runJacobiCUDA_kernel2(int n, DATA_TYPE* A, DATA_TYPE* B)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if ((i >= 1) && (i < (N-1)) && (j >= 1) && (j < (N-1)))
	{
		A[i*N + j] = B[i*N + j];
	}
}
