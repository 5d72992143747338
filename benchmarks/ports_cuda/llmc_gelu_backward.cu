// llm.c (Andrej Karpathy, MIT), dev/cuda/gelu_backward.cu: gelu_backward_kernel1 as upstream.
// Built with -O3 --use_fast_math. Upstream sizes: B = 8, T = 1024, C = 768 (N = B * T * C).
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

__global__ void gelu_backward1(float* dinp, const float* inp, const float* dout, const int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = (float)inp[i];
        float cube = 0.044715f * x * x * x;
        float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
        float tanh_out = tanhf(tanh_arg);
        float coshf_out = coshf(tanh_arg);
        float sech_out = 1.0f / (coshf_out * coshf_out);
        float local_grad = 0.5f * (1.0f + tanh_out) + x * 0.5f * sech_out * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = (float)(local_grad * (float)dout[i]);
    }
}
