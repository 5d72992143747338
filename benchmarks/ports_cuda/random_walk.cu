// The per-thread Monte-Carlo random walk of numba-cuda's random-number examples (splitmix64
// seeding, Marsaglia's xorshift64*) in CUDA C++ line by line, with the output lengths as numba
// passes them. Benchmark: 2^20 walks of 1000 steps.
__device__ unsigned long long splitmix64(unsigned long long x) {
  unsigned long long z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void random_walk(unsigned long long seed, int n_steps, int *final_pos, long long n_final, int *max_dist,
                            long long n_max) {
  long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n_final || tid >= n_max) return;
  unsigned long long state = splitmix64(seed + (unsigned long long)tid);
  long long pos = 0, furthest = 0;
  for (int step = 0; step < n_steps; step++) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    unsigned long long r = state * 0x2545F4914F6CDD1Dull;
    float u = (float)(unsigned int)(r >> 40) * (1.0f / 16777216.0f);
    if (u < 0.5f)
      pos -= 1;
    else
      pos += 1;
    long long a = pos < 0 ? -pos : pos;
    if (a > furthest) furthest = a;
  }
  final_pos[tid] = (int)pos;
  max_dist[tid] = (int)furthest;
}
