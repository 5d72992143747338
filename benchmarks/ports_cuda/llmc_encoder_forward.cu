// llm.c (Andrej Karpathy, MIT), dev/cuda/encoder_forward.cu: encoder_forward_kernel2 as upstream.
// Built as llm.c builds it: nvcc -O3 --use_fast_math. Upstream sizes: B = 8, T = 1024, C = 768,
// V = 50257.
__global__ void encoder_forward_kernel2(float* out,
                               int* inp, float* wte, float* wpe,
                               int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int N = B * T * C;

    if (idx < N) {
        int bt = idx / C;
        int b = bt / T;
        int t = bt % T;
        int c = idx % C;

        int ix = inp[b * T + t];

        float* out_btc = out + b * T * C + t * C + c;
        float* wte_ix = wte + ix * C + c;
        float* wpe_tc = wpe + t * C + c;
        *out_btc = *wte_ix + *wpe_tc;
    }
}
