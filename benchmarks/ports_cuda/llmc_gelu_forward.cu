// llm.c (Andrej Karpathy, MIT), dev/cuda/gelu_forward.cu: gelu_forward_kernel1 as upstream.
// Built with -O3 --use_fast_math. Upstream sizes: B = 8, T = 1024, C = 768 (N = B * T * C).
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

__global__ void gelu_forward_kernel1(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
}
