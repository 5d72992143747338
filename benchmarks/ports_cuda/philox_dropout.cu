// Seeded dropout with Philox4x32-10 (Triton tutorial 04-low-memory-dropout.py, _seeded_dropout,
// with tl.rand's Philox of triton/language/random.py) as the SIMT kernel a CUDA author writes
// (curand's Philox4x32_10 shape). Benchmark: the tutorial's sizes scaled to 2^26 elements, p = 0.5.
#define PHILOX_KEY_A 0x9E3779B9u
#define PHILOX_KEY_B 0xBB67AE85u
#define PHILOX_ROUND_A 0xD2511F53u
#define PHILOX_ROUND_B 0xCD9E8D57u
#define N_ROUNDS 10

__device__ __forceinline__ unsigned int philox_randint(unsigned long long seed, unsigned int offset) {
  unsigned int k0 = (unsigned int)(seed & 0xFFFFFFFFull);
  unsigned int k1 = (unsigned int)((seed >> 32) & 0xFFFFFFFFull);
  unsigned int c0 = offset, c1 = 0, c2 = 0, c3 = 0;
#pragma unroll
  for (int r = 0; r < N_ROUNDS; r++) {
    unsigned int _c0 = c0, _c2 = c2;
    c0 = __umulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0;
    c2 = __umulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1;
    c1 = PHILOX_ROUND_B * _c2;
    c3 = PHILOX_ROUND_A * _c0;
    k0 += PHILOX_KEY_A;
    k1 += PHILOX_KEY_B;
  }
  return c0;
}

__device__ __forceinline__ float uint_to_uniform_float(unsigned int x) {
  int xi = (int)x;
  xi = xi < 0 ? -xi - 1 : xi;
  return (float)xi * 4.6566127342e-10f;
}

__global__ void seeded_dropout(const float *x, float *output, int n_elements, float p, unsigned long long seed) {
  int offset = blockIdx.x * blockDim.x + threadIdx.x;
  if (offset < n_elements) {
    float random = uint_to_uniform_float(philox_randint(seed, (unsigned int)offset));
    bool x_keep = random > p;
    output[offset] = x_keep ? x[offset] / (1 - p) : 0.0f;
  }
}
