// PolyBench-GPU 1.0, CUDA/ATAX/atax.cu (Scott Grauer-Gray, Louis-Noel Pouchet): atax_kernel1,
// atax_kernel2 as upstream (the host code left out). Upstream sizes: NX = NY = 4096.
typedef float DATA_TYPE;

#define NX 4096
#define NY 4096

__global__ void atax_kernel1(DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *tmp)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < NX)
	{
		int j;
		for(j=0; j < NY; j++)
		{
			tmp[i] += A[i * NY + j] * x[j];
		}
	}
}

__global__ void atax_kernel2(DATA_TYPE *A, DATA_TYPE *y, DATA_TYPE *tmp)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < NY)
	{
		int i;
		for(i=0; i < NX; i++)
		{
			y[j] += A[i * NY + j] * tmp[i];
		}
	}
}
