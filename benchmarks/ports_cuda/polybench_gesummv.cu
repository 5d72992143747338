// PolyBench-GPU 1.0, CUDA/GESUMMV/gesummv.cu: gesummv_kernel as upstream. Upstream sizes:
// N = 4096, block 256.
typedef float DATA_TYPE;

#define N 4096

#define ALPHA 43532.0f
#define BETA 12313.0f

__global__ void gesummv_kernel(DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < N)
	{
		int j;
		for(j = 0; j < N; j++)
		{
			tmp[i] += a[i * N + j] * x[j];
			y[i] += b[i * N + j] * x[j];
		}
		y[i] = ALPHA * tmp[i] + BETA * y[i];
	}
}
