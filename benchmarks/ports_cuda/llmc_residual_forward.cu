// llm.c (Andrej Karpathy, MIT), dev/cuda/residual_forward.cu: residual_forward_kernel1 as
// upstream. Built with -O3 --use_fast_math. Upstream sizes:
// B = 8, T = 1024, C = 768.
// elementwise ops are nice and ez
__global__ void residual_forward_kernel1(float* out, const float* inp1, const float* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        out[idx] = inp1[idx] + inp2[idx];
    }
}
