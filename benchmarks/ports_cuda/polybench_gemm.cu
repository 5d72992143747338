// PolyBench-GPU 1.0, CUDA/GEMM/gemm.cu: gemm_kernel as upstream. Upstream sizes: NI = NJ = NK =
// 512, block 32 x 8.
typedef float DATA_TYPE;

#define NI 512
#define NJ 512
#define NK 512

#define ALPHA 32412.0f
#define BETA 2123.0f

__global__ void gemm_kernel(DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;

	if ((i < NI) && (j < NJ))
	{
		c[i * NJ + j] *= BETA;
		int k;
		for(k=0; k < NK; k++)
		{
			c[i * NJ + j] += ALPHA * a[i * NK + k] * b[k * NJ +j];
		}
	}
}
