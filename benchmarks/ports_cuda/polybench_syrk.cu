// PolyBench-GPU 1.0, CUDA/SYRK/syrk.cu: syrk_kernel as upstream. Upstream sizes: N = M = 1024,
// block 32 x 8, alpha 32412, beta 2123.
typedef float DATA_TYPE;

#define N 1024
#define M 1024

__global__ void syrk_kernel(DATA_TYPE ALPHA, DATA_TYPE BETA, DATA_TYPE *a, DATA_TYPE *c)
{
	/*  C := alpha*A*A' + beta*C */
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;

	if ((i < N) && (j < N))
	{
		c[i * N + j] *= BETA;
		int k;
		for(k=0; k< M; k++)
		{
			c[i * N + j] += ALPHA * a[i * M + k] * a[j * M + k];
		}
	}
}
